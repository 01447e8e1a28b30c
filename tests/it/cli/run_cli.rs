//! `image-reflector run` start-up through the binary: Flux's Deployment arguments are accepted
//! as they are (with no subcommand), and bad flags stop it with Flux's messages.

use crate::support::run_bin;
use std::process::Output;

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Flags as Flux's own Deployment (flux2's install manifests) passes them, with the Badger
/// size too, and no API server: start-up gets as far as connecting.
#[test]
fn fluxs_deployment_arguments_are_accepted_as_they_are() {
    let storage = tempfile::tempdir().unwrap();
    let storage_flag = format!("--storage-path={}", storage.path().display());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_image-reflector"))
        .args([
            "--events-addr=http://notification-controller.flux-system.svc.cluster.local./",
            "--watch-all-namespaces=true",
            "--log-level=info",
            "--log-encoding=json",
            "--enable-leader-election",
            "--storage-value-log-file-size=268435456",
            "--watch-configs-label-selector=reconcile.fluxcd.io/watch=Enabled",
            "--feature-gates=FluxStorage=true,ObjectLevelWorkloadIdentity=false",
            "--concurrent=8",
            "--kube-api-qps=100",
            "--kube-api-burst=500",
            "--gc-interval=0",
            "--leader-election-lease-duration=40s",
            "--leader-election-renew-deadline=30s",
            "--leader-election-retry-period=5s",
            "--token-cache-max-size=50",
            "--token-cache-max-duration=30m",
            "--metrics-addr=127.0.0.1:0",
            "--health-addr=127.0.0.1:0",
            &storage_flag,
        ])
        .env("KUBECONFIG", storage.path().join("no-such-kubeconfig"))
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output()
        .unwrap();
    let err = text(&out);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains("error: connecting to Kubernetes"), "{err}");
    let warning = err
        .lines()
        .find(|l| l.contains("without effect here"))
        .unwrap_or_else(|| panic!("one warning names the ignored flags: {err}"));
    let warning: serde_json::Value = serde_json::from_str(warning).unwrap();
    assert_eq!(warning["level"], "warn");
    assert_eq!(
        warning["flags"],
        "--storage-value-log-file-size --watch-configs-label-selector"
    );
    assert!(warning["ts"].as_str().unwrap().ends_with('Z'));
}

#[test]
fn bad_flags_stop_start_up_with_fluxs_messages() {
    for (args, expected) in [
        (
            &["run", "--feature-gates=Bogus=true"][..],
            "feature-gate 'Bogus' not supported",
        ),
        (
            &["--feature-gates=ObjectLevelWorkloadIdentity=maybe"][..],
            "invalid value of ObjectLevelWorkloadIdentity=maybe",
        ),
        (
            &["run", "--default-service-account=puller"][..],
            "cannot set default service accounts when the feature gate ObjectLevelWorkloadIdentity is not enabled",
        ),
        (
            &[
                "run",
                "--enable-leader-election",
                "--leader-election-lease-duration=10s",
                "--leader-election-renew-deadline=10s",
            ][..],
            "--leader-election-lease-duration must be greater than --leader-election-renew-deadline",
        ),
        (
            &["run", "--watch-all-namespaces=false"][..],
            "--watch-all-namespaces=false needs the RUNTIME_NAMESPACE environment variable",
        ),
        (
            &["run", "--tls-ca-bundle=flux-ca-bundle", "--events-ca-file=/ca.crt"][..],
            "--tls-ca-bundle and --events-ca-file both name the events' CA bundle: give one",
        ),
        (&["run", "--log-level=loud"][..], "invalid value 'loud'"),
        (&["run", "--gc-interval=-1"][..], "--gc-interval"),
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_image-reflector"))
            .args(args)
            .env_remove("RUNTIME_NAMESPACE")
            .output()
            .unwrap();
        let err = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(expected), "{args:?}: {err}");
    }
}

#[test]
fn help_and_version_still_need_no_subcommand() {
    let out = run_bin(&["--version"], None);
    assert!(out.status.success());
    let version = String::from_utf8_lossy(&out.stdout).into_owned();
    // Outside `make release` no commit is claimed (the release's own check, make
    // release-check, reads the stamped one).
    assert_eq!(
        version.trim_end(),
        format!(
            "image-reflector {}-dev (commit unknown)",
            env!("CARGO_PKG_VERSION")
        )
    );
    let out = run_bin(&["run", "--help"], None);
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--watch-label-selector",
        "--leader-election-retry-period",
        "--otlp-endpoint",
        "--feature-gates",
    ] {
        assert!(help.contains(flag), "{flag} in\n{help}");
    }
    assert!(
        !help.contains("--storage-value-log-file-size"),
        "ignored flags stay hidden"
    );
}
