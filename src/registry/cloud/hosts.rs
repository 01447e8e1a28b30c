//! Which registry hosts each provider logs in to, with Flux's patterns and messages
//! (fluxcd/pkg `auth/{aws,azure,gcp}`): a host outside the pattern is refused before any
//! cloud API is called, so an ImageRepository cannot send its cloud identity to another host.

use super::CloudError;
use super::CloudProvider;
use regex::Regex;
use std::sync::LazyLock;

/// Flux's ECR pattern: every partition (`amazonaws.com`, `.com.cn`, `.eu`, the isolated ones),
/// FIPS, and the dual-stack names (`dkr-ecr`, `on.aws`).
pub const ECR_PATTERN: &str = r"^([0-9]{12})\.dkr[.-]ecr(?:-fips)?\.([a-zA-Z0-9][a-zA-Z0-9_-]{0,99})\.(amazonaws\.(?:com(?:\.cn)?|eu)|on\.(?:aws|amazonwebservices\.com\.cn)|sc2s\.sgov\.gov|c2s\.ic\.gov|cloud\.adc-e\.uk|csp\.hci\.ic\.gov)$";
/// ECR Public, and its dual-stack name.
const PUBLIC_ECR: [&str; 2] = ["public.ecr.aws", "ecr-public.aws.com"];
/// Flux's ACR pattern (from the kubelet's Azure credential provider).
pub const ACR_PATTERN: &str = r"^.+\.(azurecr\.io|azurecr\.cn|azurecr\.de|azurecr\.us)$";
/// Flux's GCR / Artifact Registry pattern, and the S3NS sovereign registry.
pub const GCP_PATTERN: &str =
    r"^(((.+\.)?gcr\.io)|(.+-docker\.pkg\.dev)|(docker\.s3nsregistry\.fr))$";

static ECR: LazyLock<Regex> = LazyLock::new(|| Regex::new(ECR_PATTERN).expect("ECR pattern"));
static ACR: LazyLock<Regex> = LazyLock::new(|| Regex::new(ACR_PATTERN).expect("ACR pattern"));
static GCP: LazyLock<Regex> = LazyLock::new(|| Regex::new(GCP_PATTERN).expect("GCP pattern"));

/// What a registry host needs from its provider.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RegistryTarget {
    /// Private ECR: `GetAuthorizationToken` in the host's region.
    Ecr { region: String },
    /// ECR Public: its own API, always in `us-east-1`.
    EcrPublic,
    /// ACR: an Entra ID token for `scope`, exchanged at the registry `host`.
    Acr { host: String, scope: &'static str },
    /// GCR / Artifact Registry: a Google access token, whatever the host.
    Gcp,
}

impl RegistryTarget {
    /// The region AWS credentials and STS are asked in.
    pub fn aws_region(&self) -> &str {
        match self {
            RegistryTarget::Ecr { region } => region,
            _ => "us-east-1",
        }
    }

    /// What, besides the identity, an access token depends on (part of the cache key).
    pub(super) fn access_key(&self) -> String {
        match self {
            RegistryTarget::Ecr { .. } | RegistryTarget::EcrPublic => {
                format!("stsRegion={}", self.aws_region())
            }
            RegistryTarget::Acr { scope, .. } => format!("scopes={scope}"),
            RegistryTarget::Gcp => String::new(),
        }
    }

    /// What registry credentials depend on besides the access token (Flux's registry input).
    pub(super) fn registry_key(&self) -> &str {
        match self {
            RegistryTarget::Ecr { region } => region,
            RegistryTarget::EcrPublic => "public.ecr.aws",
            RegistryTarget::Acr { host, .. } => host,
            RegistryTarget::Gcp => "gcp",
        }
    }
}

/// The target for `host` (`host[:port]`, as in the image reference), or Flux's error.
pub fn registry_target(provider: CloudProvider, host: &str) -> Result<RegistryTarget, CloudError> {
    match provider {
        CloudProvider::Aws => {
            if PUBLIC_ECR.contains(&host) {
                return Ok(RegistryTarget::EcrPublic);
            }
            let caps = ECR.captures(host).ok_or_else(|| {
                CloudError::Settings(format!(
                    "invalid AWS registry: '{host}'. must match {ECR_PATTERN}"
                ))
            })?;
            Ok(RegistryTarget::Ecr {
                region: caps[2].to_string(),
            })
        }
        CloudProvider::Azure => {
            if !ACR.is_match(host) {
                return Err(CloudError::Settings(format!(
                    "invalid Azure registry: '{host}'. must match {ACR_PATTERN}"
                )));
            }
            // The Resource Manager of the registry's cloud is the token's audience.
            let scope = if host.ends_with(".azurecr.cn") {
                "https://management.chinacloudapi.cn/.default"
            } else if host.ends_with(".azurecr.us") {
                "https://management.usgovcloudapi.net/.default"
            } else {
                "https://management.azure.com/.default"
            };
            Ok(RegistryTarget::Acr {
                host: host.to_string(),
                scope,
            })
        }
        CloudProvider::Gcp => {
            if !GCP.is_match(host) {
                return Err(CloudError::Settings(format!(
                    "invalid GCP registry: '{host}'. must match {GCP_PATTERN}"
                )));
            }
            Ok(RegistryTarget::Gcp)
        }
    }
}
