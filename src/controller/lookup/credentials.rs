//! How an ImageRepository reaches its registry (docs/registry.md): the proxy, TLS material
//! and static credentials from Secrets and a ServiceAccount in the object's own namespace,
//! turned into the registry client's [`ClientOptions`]. Secret values are never logged or put
//! in messages; only names are.
//!
//! The objects come through [`ObjectReader`] (objects.rs): the API server in the controller,
//! manifest files in `image-reflector scan`.

pub use super::objects::{AuthError, ObjectReader, WorkloadIdentity};
use crate::api::{ImageRepository, Provider};
use crate::registry::cloud::{CloudLogin, CloudProvider};
use crate::registry::{ClientOptions, Fixes, KeyNames, Keyring, ProxySettings, TlsMaterial};
use k8s_openapi::api::core::v1::Secret;
use std::collections::BTreeMap;
use std::time::Duration;

/// Builds the client options for `repo`, in Flux's order: proxy, provider, TLS, credentials.
pub async fn client_options(
    repo: &ImageRepository,
    namespace: &str,
    canonical: &str,
    reader: &impl ObjectReader,
    timeout: Duration,
    identity: WorkloadIdentity<'_>,
) -> Result<ClientOptions, AuthError> {
    let proxy = proxy(repo, namespace, reader).await?;
    let login = cloud_login(repo, namespace, reader, identity);
    let tls = tls(repo, namespace, reader).await?;
    // A cloud provider's credentials replace secretRef and pull secrets (as in Flux).
    let credentials = match login {
        Some(_) => None,
        None => keyring(repo, namespace, reader)
            .await?
            .lookup(canonical)
            .cloned(),
    };
    Ok(ClientOptions {
        credentials,
        login,
        tls,
        proxy,
        timeout,
        fixes: &SPEC_FIXES,
        tenant: Some(namespace.to_string()),
        ..Default::default()
    })
}

/// `spec.proxySecretRef`'s proxy.
async fn proxy(
    repo: &ImageRepository,
    namespace: &str,
    reader: &impl ObjectReader,
) -> Result<Option<ProxySettings>, AuthError> {
    let Some(r) = &repo.spec.proxy_secret_ref else {
        return Ok(None);
    };
    let secret =
        reader
            .secret(namespace, &r.name)
            .await?
            .ok_or_else(|| AuthError::ProxySecretNotFound {
                namespace: namespace.into(),
                name: r.name.clone(),
            })?;
    let settings = ProxySettings::from_secret_data(&secret_data(&secret));
    let settings = settings.map_err(|source| AuthError::Invalid {
        what: "invalid proxy secret ",
        name: format!("{namespace}/{}", r.name),
        source,
    })?;
    Ok(Some(settings))
}

/// `spec.certSecretRef`'s TLS material.
async fn tls(
    repo: &ImageRepository,
    namespace: &str,
    reader: &impl ObjectReader,
) -> Result<Option<TlsMaterial>, AuthError> {
    let Some(r) = &repo.spec.cert_secret_ref else {
        return Ok(None);
    };
    let secret = required_secret(reader, namespace, &r.name).await?;
    let (material, names) =
        TlsMaterial::from_secret_data(&secret_data(&secret)).map_err(AuthError::Tls)?;
    if names == KeyNames::Legacy {
        tracing::warn!(secret = %r.name, "certSecretRef uses the deprecated keys certFile/keyFile/caFile; rename them to tls.crt/tls.key/ca.crt");
    }
    Ok(Some(material))
}

/// `spec.secretRef`'s credentials, then those of `serviceAccountName`'s imagePullSecrets.
async fn keyring(
    repo: &ImageRepository,
    namespace: &str,
    reader: &impl ObjectReader,
) -> Result<Keyring, AuthError> {
    let spec = &repo.spec;
    let mut keyring = Keyring::new();
    if let Some(r) = &spec.secret_ref {
        let secret = required_secret(reader, namespace, &r.name).await?;
        add_to_keyring(&mut keyring, &secret, &r.name)?;
    }
    let account = spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty());
    let Some(sa_name) = account else {
        return Ok(keyring);
    };
    let sa = reader
        .service_account(namespace, sa_name)
        .await?
        .ok_or_else(|| AuthError::ServiceAccountNotFound {
            namespace: namespace.into(),
            name: sa_name.into(),
        })?;
    for pull in sa.image_pull_secrets.unwrap_or_default() {
        let name = pull.name;
        let secret = required_secret(reader, namespace, &name)
            .await
            .map_err(|e| AuthError::PullSecret {
                name: name.clone(),
                namespace: namespace.into(),
                account: sa_name.into(),
                source: Box::new(e),
            })?;
        add_to_keyring(&mut keyring, &secret, &name)?;
    }
    Ok(keyring)
}

/// The cloud login of a non-generic `spec.provider`: as the ServiceAccount `serviceAccountName`
/// (or `--default-service-account`) names when object-level workload identity is on, else as
/// the controller. (With the gate off, a `serviceAccountName` has already stalled the object.)
fn cloud_login(
    repo: &ImageRepository,
    namespace: &str,
    reader: &impl ObjectReader,
    identity: WorkloadIdentity<'_>,
) -> Option<CloudLogin> {
    let provider = match repo.spec.provider? {
        Provider::Generic => return None,
        Provider::Aws => CloudProvider::Aws,
        Provider::Azure => CloudProvider::Azure,
        Provider::Gcp => CloudProvider::Gcp,
    };
    let named = repo
        .spec
        .service_account_name
        .as_deref()
        .filter(|s| !s.is_empty());
    let account = match identity.enabled {
        true => named.or(identity.default_service_account.filter(|s| !s.is_empty())),
        false => None,
    };
    Some(CloudLogin {
        provider,
        service_account: account.map(|name| reader.service_account_source(namespace, name)),
    })
}

/// Registry errors in status name the ImageRepository's fields.
pub static SPEC_FIXES: Fixes = Fixes {
    image: "spec.image",
    transport: "check the image host, spec.certSecretRef (TLS) and spec.proxySecretRef",
    proxy: "check the 'address' of spec.proxySecretRef, and that the proxy is running",
    tls: "check spec.certSecretRef: 'ca.crt' must hold the CA that signed the registry's \
          certificate, 'tls.crt'/'tls.key' a client certificate it accepts",
    timeout: "spec.timeout (at most 5m, the controller's cap)",
    credentials:
        "the docker config Secret (spec.secretRef or the ServiceAccount's imagePullSecrets)",
    give_credentials: "set spec.secretRef to a docker config Secret with an entry for {host}",
};

/// Whether the object names a credential source at all (for the 401 message).
pub fn has_credential_source(repo: &ImageRepository) -> bool {
    repo.spec.provider.is_some_and(|p| p != Provider::Generic)
        || repo.spec.secret_ref.is_some()
        || repo
            .spec
            .service_account_name
            .as_deref()
            .is_some_and(|s| !s.is_empty())
}

async fn required_secret(
    reader: &impl ObjectReader,
    namespace: &str,
    name: &str,
) -> Result<Secret, AuthError> {
    reader
        .secret(namespace, name)
        .await?
        .ok_or_else(|| AuthError::SecretNotFound(name.into()))
}

fn add_to_keyring(keyring: &mut Keyring, secret: &Secret, name: &str) -> Result<(), AuthError> {
    let type_ = secret.type_.as_deref().unwrap_or("Opaque");
    keyring
        .add_secret(type_, &secret_data(secret))
        .map_err(|source| AuthError::Invalid {
            what: "secret ",
            name: name.into(),
            source,
        })
}

/// A Secret's `data`, with `stringData` merged over it (manifests read from files carry it;
/// the API server has already merged it).
pub fn secret_data(secret: &Secret) -> BTreeMap<String, Vec<u8>> {
    let mut data: BTreeMap<String, Vec<u8>> = secret
        .data
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.0.clone()))
        .collect();
    for (k, v) in secret.string_data.iter().flatten() {
        data.insert(k.clone(), v.clone().into_bytes());
    }
    data
}

#[cfg(test)]
mod tests {
    use super::{cloud_login, ObjectReader, WorkloadIdentity, SPEC_FIXES};
    use crate::api::ImageRepository;
    use crate::controller::lookup::api_read::ReadError;
    use crate::registry::cloud::CloudProvider;
    use crate::registry::RegistryError;
    use k8s_openapi::api::core::v1::Secret;
    use k8s_openapi::api::core::v1::ServiceAccount;

    struct Nothing;

    impl ObjectReader for Nothing {
        async fn secret(&self, _: &str, _: &str) -> Result<Option<Secret>, ReadError> {
            Ok(None)
        }
        async fn service_account(
            &self,
            _: &str,
            _: &str,
        ) -> Result<Option<ServiceAccount>, ReadError> {
            Ok(None)
        }
    }

    fn repo(spec: serde_json::Value) -> ImageRepository {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1", "kind": "ImageRepository",
            "metadata": {"name": "app", "namespace": "team"},
            "spec": {"interval": "5m", "image": spec["image"], "provider": spec["provider"],
                "serviceAccountName": spec.get("serviceAccountName")},
        }))
        .unwrap()
    }

    #[test]
    fn the_cloud_identity_is_the_controllers_unless_the_gate_names_a_service_account() {
        let login = |spec, enabled, default| {
            let identity = WorkloadIdentity {
                enabled,
                default_service_account: default,
            };
            cloud_login(&repo(spec), "team", &Nothing, identity)
                .map(|l| (l.provider, l.service_account.map(|s| s.key())))
        };
        let image = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/app";
        let generic = serde_json::json!({"image": image, "provider": "generic"});
        assert!(login(generic, true, Some("sa")).is_none());
        let aws = serde_json::json!({"image": image, "provider": "aws"});
        assert_eq!(
            login(aws.clone(), false, None),
            Some((CloudProvider::Aws, None))
        );
        assert_eq!(
            login(aws.clone(), true, Some("fallback")),
            Some((CloudProvider::Aws, Some("team/fallback".into())))
        );
        let named =
            serde_json::json!({"image": image, "provider": "gcp", "serviceAccountName": "mine"});
        assert_eq!(
            login(named.clone(), true, Some("fallback")),
            Some((CloudProvider::Gcp, Some("team/mine".into())))
        );
        // Without the gate such an object has already stalled; the login never acts as the SA.
        assert_eq!(login(named, false, None), Some((CloudProvider::Gcp, None)));
    }

    #[test]
    fn registry_errors_in_status_name_the_spec_fields() {
        let (method, url, host) = ("GET", "https://r.example/v2/".to_string(), "r.example");
        let tls = RegistryError::Tls {
            method,
            url: url.clone(),
            host: host.into(),
            detail: "unknown issuer".into(),
            fixes: &SPEC_FIXES,
        };
        assert!(tls
            .to_string()
            .contains("; check spec.certSecretRef: 'ca.crt' must hold"));
        let transport = RegistryError::Transport {
            method,
            url: url.clone(),
            host: host.into(),
            detail: "connection refused".into(),
            fixes: &SPEC_FIXES,
        };
        assert!(transport
            .to_string()
            .ends_with("check the image host, spec.certSecretRef (TLS) and spec.proxySecretRef"));
        let timeout = RegistryError::Timeout {
            method,
            url,
            host: host.into(),
            timeout: std::time::Duration::from_secs(60),
            fixes: &SPEC_FIXES,
        };
        assert!(timeout.to_string().ends_with(
            "raise spec.timeout (at most 5m, the controller's cap) or check the registry"
        ));
    }
}
