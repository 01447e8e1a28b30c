//! Object-level workload identity: the ServiceAccount an object acts as, read and turned into
//! a token by the caller (the controller, through the API server), and the provider identity
//! its annotations name, with Flux's annotations, patterns and messages.

use super::CloudError;
use super::CloudProvider;
use futures::future::BoxFuture;
use regex::Regex;
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// What the provider needs of a ServiceAccount.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceAccount {
    pub namespace: String,
    pub name: String,
    pub annotations: BTreeMap<String, String>,
}

/// Why a [`ServiceAccountSource`] could not read the ServiceAccount or mint its token: the
/// source's own error, shown as it says it.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct AccountError(pub Box<dyn std::error::Error + Send + Sync>);

/// Reads a ServiceAccount and mints its tokens (the TokenRequest API in the controller). The
/// registry code knows nothing of Kubernetes beyond this.
pub trait ServiceAccountSource: Send + Sync {
    /// `namespace/name`, for messages.
    fn key(&self) -> String;
    /// The ServiceAccount.
    fn get(&self) -> BoxFuture<'_, Result<ServiceAccount, AccountError>>;
    /// A token for the ServiceAccount with these audiences.
    fn token<'a>(&'a self, audiences: &'a [String]) -> BoxFuture<'a, Result<String, AccountError>>;
}

/// The provider identity a ServiceAccount's annotations name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// `eks.amazonaws.com/role-arn`.
    Aws { role_arn: String },
    /// `azure.workload.identity/tenant-id` and `client-id`.
    Azure {
        tenant_id: String,
        client_id: String,
    },
    /// `iam.gke.io/gcp-service-account` (impersonated when set) and
    /// `gcp.auth.fluxcd.io/workload-identity-provider` (outside GKE).
    Gcp {
        email: Option<String>,
        provider_audience: Option<String>,
    },
}

impl Identity {
    /// What the cache key says of it.
    pub(super) fn key(&self) -> String {
        match self {
            Identity::Aws { role_arn } => role_arn.clone(),
            Identity::Azure {
                tenant_id,
                client_id,
            } => format!("{tenant_id}/{client_id}"),
            Identity::Gcp {
                email,
                provider_audience,
            } => format!(
                "{}|{}",
                email.as_deref().unwrap_or(""),
                provider_audience.as_deref().unwrap_or("")
            ),
        }
    }
}

pub const ROLE_ARN_PATTERN: &str = r"^arn:aws:iam::[0-9]{1,30}:role/.{1,200}$";
pub const GCP_EMAIL_PATTERN: &str =
    r"^[a-zA-Z0-9-]{1,100}@[a-zA-Z0-9-]{1,100}\.iam\.gserviceaccount\.com$";
pub const GCP_WIP_PATTERN: &str =
    r"^projects/\d{1,30}/locations/global/workloadIdentityPools/[^/]{1,100}/providers/[^/]{1,100}$";

static ROLE_ARN: LazyLock<Regex> = LazyLock::new(|| Regex::new(ROLE_ARN_PATTERN).expect("ARN"));
static GCP_EMAIL: LazyLock<Regex> = LazyLock::new(|| Regex::new(GCP_EMAIL_PATTERN).expect("email"));
static GCP_WIP: LazyLock<Regex> = LazyLock::new(|| Regex::new(GCP_WIP_PATTERN).expect("WIP"));

/// The identity `sa` names for `provider`, or Flux's error for the annotation.
pub fn identity(provider: CloudProvider, sa: &ServiceAccount) -> Result<Identity, CloudError> {
    let annotation = |key: &str| sa.annotations.get(key).map(String::as_str);
    match provider {
        CloudProvider::Aws => {
            let arn = annotation("eks.amazonaws.com/role-arn").unwrap_or("");
            if !ROLE_ARN.is_match(arn) {
                return Err(CloudError::Settings(format!(
                    "invalid AWS role ARN: '{arn}'. must match {ROLE_ARN_PATTERN}"
                )));
            }
            Ok(Identity::Aws {
                role_arn: arn.to_string(),
            })
        }
        CloudProvider::Azure => {
            const TENANT: &str = "azure.workload.identity/tenant-id";
            const CLIENT: &str = "azure.workload.identity/client-id";
            let tenant_id = annotation(TENANT).ok_or_else(|| {
                let reason = format!(
                    "azure tenant ID is not set in the service account annotation {TENANT}"
                );
                CloudError::Settings(reason)
            })?;
            let client_id = annotation(CLIENT).ok_or_else(|| {
                let reason = format!(
                    "azure client ID is not set in the service account annotation {CLIENT}"
                );
                CloudError::Settings(reason)
            })?;
            Ok(Identity::Azure {
                tenant_id: tenant_id.to_string(),
                client_id: client_id.to_string(),
            })
        }
        CloudProvider::Gcp => {
            const EMAIL: &str = "iam.gke.io/gcp-service-account";
            const WIP: &str = "gcp.auth.fluxcd.io/workload-identity-provider";
            let email = match annotation(EMAIL).filter(|e| !e.is_empty()) {
                Some(e) if !GCP_EMAIL.is_match(e) => {
                    return Err(CloudError::Settings(format!(
                        "invalid {EMAIL} annotation: '{e}'. must match {GCP_EMAIL_PATTERN}"
                    )))
                }
                other => other.map(str::to_string),
            };
            let provider_audience = match annotation(WIP).filter(|w| !w.is_empty()) {
                Some(w) if !GCP_WIP.is_match(w) => {
                    return Err(CloudError::Settings(format!(
                        "invalid {WIP} annotation: '{w}'. must match {GCP_WIP_PATTERN}"
                    )))
                }
                other => other.map(|w| format!("//iam.googleapis.com/{w}")),
            };
            Ok(Identity::Gcp {
                email,
                provider_audience,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sa(pairs: &[(&str, &str)]) -> ServiceAccount {
        ServiceAccount {
            namespace: "apps".into(),
            name: "puller".into(),
            annotations: pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        }
    }

    #[test]
    fn reads_each_providers_annotations_with_fluxs_messages() {
        let arn = "arn:aws:iam::123456789012:role/flux-ecr";
        assert_eq!(
            identity(
                CloudProvider::Aws,
                &sa(&[("eks.amazonaws.com/role-arn", arn)])
            ),
            Ok(Identity::Aws {
                role_arn: arn.into()
            })
        );
        // A ServiceAccount's annotations are the tenant's to fix: settings, not the provider.
        assert!(matches!(
            identity(CloudProvider::Aws, &sa(&[])),
            Err(CloudError::Settings(_))
        ));
        let azure = [("azure.workload.identity/client-id", "c")];
        let no_tenant = identity(CloudProvider::Azure, &sa(&azure));
        assert!(matches!(no_tenant, Err(CloudError::Settings(_))));
        assert_eq!(
            identity(CloudProvider::Aws, &sa(&[]))
                .unwrap_err()
                .to_string(),
            format!("invalid AWS role ARN: ''. must match {ROLE_ARN_PATTERN}")
        );
        assert_eq!(
            identity(
                CloudProvider::Azure,
                &sa(&[("azure.workload.identity/client-id", "c")])
            )
            .unwrap_err().to_string(),
            "azure tenant ID is not set in the service account annotation azure.workload.identity/tenant-id"
        );
        assert_eq!(
            identity(
                CloudProvider::Azure,
                &sa(&[
                    ("azure.workload.identity/client-id", "c"),
                    ("azure.workload.identity/tenant-id", "t")
                ])
            )
            .unwrap()
            .key(),
            "t/c"
        );
        let gcp = identity(
            CloudProvider::Gcp,
            &sa(&[
                (
                    "iam.gke.io/gcp-service-account",
                    "flux@proj-1.iam.gserviceaccount.com",
                ),
                (
                    "gcp.auth.fluxcd.io/workload-identity-provider",
                    "projects/123/locations/global/workloadIdentityPools/p/providers/k",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(
            gcp,
            Identity::Gcp {
                email: Some("flux@proj-1.iam.gserviceaccount.com".into()),
                provider_audience: Some(
                    "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/p/providers/k"
                        .into()
                ),
            }
        );
        assert!(identity(
            CloudProvider::Gcp,
            &sa(&[("iam.gke.io/gcp-service-account", "x@y.com")])
        )
        .unwrap_err()
        .to_string()
        .starts_with("invalid iam.gke.io/gcp-service-account annotation: 'x@y.com'. must match"));
        assert_eq!(
            identity(CloudProvider::Gcp, &sa(&[])),
            Ok(Identity::Gcp {
                email: None,
                provider_audience: None
            }),
            "direct access on GKE needs no annotation"
        );
    }
}
