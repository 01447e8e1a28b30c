//! Why a cloud login failed: one error for the provider flows, told apart by who can fix it.
//! The text is what `RegistryError::CloudLogin` shows after the provider and host.

/// A cloud login's failure.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CloudError {
    /// What the object or the process asks for cannot log in: the registry host is not the
    /// provider's, a ServiceAccount's annotation is missing or malformed. Fixed in the spec or
    /// the ServiceAccount; trying again changes nothing.
    #[error("{0}")]
    Settings(String),
    /// The provider's endpoints failed, refused, or answered what does not read (a token, an
    /// exchange, instance metadata). May pass when tried again.
    #[error("{0}")]
    Provider(String),
}

impl CloudError {
    /// The same failure, said within `what` (`failed to create ... token for ...: <reason>`).
    pub fn within(self, what: impl std::fmt::Display) -> CloudError {
        match self {
            CloudError::Settings(reason) => CloudError::Settings(format!("{what}: {reason}")),
            CloudError::Provider(reason) => CloudError::Provider(format!("{what}: {reason}")),
        }
    }
}

impl From<String> for CloudError {
    fn from(reason: String) -> Self {
        CloudError::Provider(reason)
    }
}

impl From<&str> for CloudError {
    fn from(reason: &str) -> Self {
        CloudError::Provider(reason.to_string())
    }
}
