//! What the flags of `run` come to for the reconcilers: their settings, the namespace the
//! process runs in, and where `--tls-ca-bundle` is mirrored.

use super::flags::RunArgs;
use crate::cli::error::CliError;
use crate::controller::events::notify::EventsAuth;
use crate::controller::Settings;
use crate::registry::sigstore_root::PublicGoodRoot;
use crate::runtime::leader;
use std::path::PathBuf;
use std::sync::Arc;

/// RUNTIME_NAMESPACE, or the pod's namespace from its service account; `needed` says why.
pub(super) fn runtime_namespace(args: &RunArgs, needed: &str) -> Result<String, CliError> {
    let mounted = "/var/run/secrets/kubernetes.io/serviceaccount/namespace";
    Some(args.runtime_namespace.clone())
        .filter(|n| !n.is_empty())
        .or_else(|| Some(std::fs::read_to_string(mounted).ok()?.trim().to_string()))
        .ok_or_else(|| {
            CliError::invalid(format!(
                "{needed}: set RUNTIME_NAMESPACE (Flux's Deployment sets it from metadata.namespace)"
            ))
        })
}

/// Where `--tls-ca-bundle`'s ConfigMap is mirrored for the events client (this process's own).
pub(super) fn tls_ca_bundle_file() -> PathBuf {
    let name = format!("image-reflector-{}-tls-ca-bundle.pem", std::process::id());
    std::env::temp_dir().join(name)
}

pub(super) fn settings(args: &RunArgs, sigstore_root: Arc<PublicGoodRoot>) -> Settings {
    let instance = leader::host_name();
    Settings {
        min_retry_delay: args.min_retry_delay,
        max_retry_delay: args.max_retry_delay,
        event_repeat_interval: args.event_repeat_interval,
        object_level_workload_identity: args.feature_gates.enabled("ObjectLevelWorkloadIdentity"),
        default_service_account: Some(args.default_service_account.clone())
            .filter(|s| !s.is_empty()),
        instance,
        events_addr: Some(args.events_addr.clone()).filter(|a| !a.is_empty()),
        events_auth: EventsAuth {
            ca_file: match (args.events_ca_file.as_str(), args.tls_ca_bundle.as_str()) {
                ("", "") => None,
                ("", _) => Some(tls_ca_bundle_file()),
                (file, _) => Some(file.into()),
            },
            token_file: Some(&args.events_token_file)
                .filter(|f| !f.is_empty())
                .map(Into::into),
        },
        requeue_dependency: args.requeue_dependency,
        no_cross_namespace_refs: args.no_cross_namespace_refs,
        concurrent: args.concurrent.max(1),
        watched_namespace: (!args.watch_all_namespaces).then(|| args.runtime_namespace.clone()),
        sigstore_root,
    }
}
