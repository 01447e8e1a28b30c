//! Flux itself beside our controller (`make e2e-flux`): the real image-automation-controller,
//! notification-controller and `flux` CLI, built from their Go modules by `make flux`, against
//! the real API server, with a Distribution registry and a Git server on loopback. Where they
//! disagree with our reading of Flux, they are right. Ignored by default; `make e2e-flux` runs
//! them (`make e2e` does not: their names hold no `e2e`).

mod attested;
mod automation;
mod cli;
mod crd_partial;
mod crd_revert;
mod crd_swap;
mod install_docs;
mod notifications;
mod quiet_restart;
mod release_manifests;

use std::time::{Duration, Instant};

/// Waits up to `secs` for `done`, saying `what` (and `detail`'s text) when it never comes.
pub async fn until(secs: u64, what: &str, detail: impl Fn() -> String, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !done() {
        assert!(
            Instant::now() < deadline,
            "{what} within {secs} s:\n{}",
            detail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The GitRepository `fleet` of `url` and the ImageUpdateAutomation that pushes the setters of
/// its `./apps` to `main` with the changes in the message, in `ns`.
pub fn fleet_automation(ns: &str, url: &str) -> String {
    format!(
        "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {{name: fleet, namespace: {ns}}}\n\
         spec: {{url: '{url}', interval: 1h, ref: {{branch: main}}}}\n---\n\
         apiVersion: image.toolkit.fluxcd.io/v1\nkind: ImageUpdateAutomation\nmetadata: {{name: fleet, namespace: {ns}}}\n\
         spec:\n  interval: 1h\n  sourceRef: {{kind: GitRepository, name: fleet}}\n\
         \x20 git:\n    checkout: {{ref: {{branch: main}}}}\n    push: {{branch: main}}\n\
         \x20   commit:\n      author: {{name: fluxbot, email: fluxbot@example.com}}\n\
         \x20     messageTemplate: '{{{{range .Changed.Changes}}}}{{{{.OldValue}}}} -> {{{{.NewValue}}}} {{{{end}}}}'\n\
         \x20 update: {{path: ./apps, strategy: Setters}}\n"
    )
}

/// A file for a controller's log (its standard error).
pub fn log_file(path: &std::path::Path) -> std::process::Stdio {
    std::fs::File::create(path).unwrap().into()
}

/// The body of `GET http://127.0.0.1:<port><path>`.
pub async fn http_text(port: u16, path: &str) -> String {
    let url = format!("http://127.0.0.1:{port}{path}");
    reqwest::get(url).await.unwrap().text().await.unwrap()
}
