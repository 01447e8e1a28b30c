//! `--tls-ca-bundle`, the client flag of Flux's RFC "Authenticate in-cluster HTTP traffic"
//! (fluxcd/flux2 #6032): the ConfigMap in the controller's namespace (Flux's `flux-ca-bundle`)
//! whose certificates the notification-controller's TLS is verified with. Watched and mirrored
//! into a file, which the events client reads as it reads `--events-ca-file` (its client built
//! again when the file changes). Every value that holds a PEM certificate is taken, in key
//! order (`ca.crt`, or the several keys of a trust-manager bundle). Deleted, or holding no
//! certificate, the file goes: there is no bundle, as before the ConfigMap was created.

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt;
use kube::{Api, Client};
use std::path::{Path, PathBuf};

/// Mirrors the ConfigMap `name` of `namespace` into `file` until the process ends.
pub async fn mirror(client: Client, namespace: String, name: String, file: PathBuf) {
    let api: Api<ConfigMap> = Api::namespaced(client, &namespace);
    let fields = format!("metadata.name={name}");
    let mut events = watcher::watcher(api, watcher::Config::default().fields(&fields))
        .default_backoff()
        .boxed();
    let (mut seen, mut failing) = (false, false);
    while let Some(event) = events.next().await {
        let wrote = match event {
            Ok(Event::Init) => {
                seen = false;
                continue;
            }
            Ok(Event::InitApply(map) | Event::Apply(map)) => {
                seen = true;
                keep(&file, certificates(&map).as_deref())
            }
            Ok(Event::Delete(_)) => keep(&file, None),
            Ok(Event::InitDone) if !seen => keep(&file, None),
            Ok(Event::InitDone) => continue,
            Err(error) => {
                if !failing {
                    tracing::warn!(%error, namespace, name, "--tls-ca-bundle: the ConfigMap cannot be watched (its namespace's Role must let the controller get, list and watch ConfigMaps); the bundle stays as last read");
                }
                failing = true;
                continue;
            }
        };
        failing = false;
        if let Err(error) = wrote {
            tracing::warn!(%error, file = %file.display(), "--tls-ca-bundle: the bundle could not be written");
        }
    }
}

/// The PEM certificates of `map`'s values, in key order; `None` when it holds none.
pub fn certificates(map: &ConfigMap) -> Option<String> {
    let values = map.data.iter().flatten().map(|(_, value)| value);
    let pem: Vec<&str> = values
        .filter(|v| v.contains("-----BEGIN CERTIFICATE-----"))
        .map(|v| v.trim_end())
        .collect();
    (!pem.is_empty()).then(|| pem.join("\n") + "\n")
}

/// Writes `pem` to `file` whole (a new file renamed over it: the reader never sees half), or
/// removes it for none.
fn keep(file: &Path, pem: Option<&str>) -> std::io::Result<()> {
    let Some(pem) = pem else {
        return match std::fs::remove_file(file) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        };
    };
    if std::fs::read_to_string(file).is_ok_and(|was| was == pem) {
        return Ok(());
    }
    let next = file.with_extension("next");
    std::fs::write(&next, pem)?;
    std::fs::rename(&next, file)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(data: &[(&str, &str)]) -> ConfigMap {
        let data = data.iter().map(|(k, v)| (k.to_string(), v.to_string()));
        ConfigMap {
            data: Some(data.collect()),
            ..Default::default()
        }
    }

    const A: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
    const B: &str = "-----BEGIN CERTIFICATE-----\nBBBB\n-----END CERTIFICATE-----";

    #[test]
    fn every_certificate_value_is_taken_in_key_order() {
        let both = certificates(&map(&[("z.pem", A), ("ca.crt", B), ("note", "hello")]));
        assert_eq!(both.as_deref(), Some(format!("{B}\n{}", A).as_str()));
        assert_eq!(certificates(&map(&[("note", "hello")])), None);
        assert_eq!(certificates(&ConfigMap::default()), None);
    }

    #[test]
    fn the_file_is_written_whole_and_removed_for_none() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("bundle.pem");
        keep(&file, Some(A)).unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), A);
        keep(&file, None).unwrap();
        assert!(!file.exists());
        keep(&file, None).unwrap();
        assert!(!dir.path().join("bundle.next").exists());
    }
}
