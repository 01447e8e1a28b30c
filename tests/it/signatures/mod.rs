//! Signatures made by the real tools (`make e2e-signatures`): the cosign CLI v3 and v2 and the
//! notation CLI, built from their Go modules by `make sigtools`, sign images in a registry that
//! serves the OCI referrers API and in Debian's Distribution (which has none); `scan` and the
//! controller on a real API server, given the same objects, must each elect what they signed and
//! hold back the rest with a reason that names what failed (one test per provider, asserting the
//! same outcomes on both). Ignored by default; their names hold no `e2e`, so `make e2e`
//! does not run them. The exception is `conformance`: the sigstore-conformance suite's cases
//! need no tool and run in `make test`, all but its sigstore-go judge.

mod attestations;
mod conditions;
pub(crate) mod conformance;
mod cosign;
mod judged;
mod keyless;
mod notation;
mod oracle;
mod public_good;
mod rekor_v2;

/// Pushes an image under each `(tag, salt)` to `repository`; their digests by tag.
async fn push_tags(
    registry: &crate::support::distribution::Distribution,
    repository: &str,
    tags: &[(&'static str, &str)],
) -> std::collections::BTreeMap<&'static str, String> {
    let mut digests = std::collections::BTreeMap::new();
    for (tag, salt) in tags {
        let digest = registry
            .push_dated(repository, tag, "amd64", None, salt)
            .await;
        digests.insert(*tag, digest);
    }
    digests
}
