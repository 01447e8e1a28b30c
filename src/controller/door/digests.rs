//! What a namespace's VerifiedDigests lists (docs/admission.md): the digests its gated
//! ImagePolicies elected, from their status, each with what vouches for it. Pure: a function of
//! the namespace's policies as the watch has them.

use crate::api::{ImagePolicy, ImageRef, MAX_VERIFIED};
use std::collections::BTreeMap;

/// The digests to admit, and how many were left out past [`MAX_VERIFIED`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verified {
    pub digests: BTreeMap<String, String>,
    pub left_out: usize,
}

/// The digests `policies` vouch for. A policy counts when it has a gate (a policy without one
/// verified nothing), its status answers its current spec (`observedGeneration`), and it is
/// not being deleted. Its `latestRef` counts unless a gate now holds that tag back at that
/// digest (`status.heldBack`: a key revoked, a signature gone; or the registry refuses to serve
/// it); its `observedPreviousRef` too, judged again the same way (`election/previous.rs`), so
/// that a rolling update and a revert to the previous release are admitted. The policies are read
/// by name, elections before previous ones, so what is left out past the bound is the same
/// every time.
pub fn verified<'a>(policies: impl IntoIterator<Item = &'a ImagePolicy>) -> Verified {
    let mut policies: Vec<&ImagePolicy> = policies.into_iter().filter(|p| vouches(p)).collect();
    policies.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let elections = |previous: bool| {
        policies.iter().filter_map(move |p| {
            let status = p.status.as_ref()?;
            let (reference, said) = match previous {
                false => (status.latest_ref.as_ref()?, "elected"),
                true => (&**status.observed_previous_ref.as_ref()?, "elected before"),
            };
            // Held at this digest, or by a registry that would not serve the tag (no digest):
            // a tag moved to other content since leaves the verified one admitted.
            let held = status.held_back.iter().flatten().any(|h| {
                h.tag == reference.tag
                    && h.digest
                        .as_ref()
                        .is_none_or(|d| Some(d) == reference.digest.as_ref())
            });
            let name = p.metadata.name.as_deref().unwrap_or_default();
            (!held).then(|| {
                pinned(reference).map(|d| (d, format!("{name}: {} {said}", reference.tag)))
            })?
        })
    };
    let mut verified = Verified::default();
    for (digest, why) in elections(false).chain(elections(true)) {
        let full = verified.digests.len() == MAX_VERIFIED;
        match verified.digests.get_mut(&digest) {
            Some(said) => {
                said.push_str(&format!("; {why}"));
                cut(said);
            }
            None if full => verified.left_out += 1,
            None => {
                let mut said = format!("ImagePolicy {why}");
                cut(&mut said);
                verified.digests.insert(digest, said);
            }
        }
    }
    verified
}

/// The most bytes what vouches for one digest is said in: with [`MAX_VERIFIED`] digests, an
/// object stays under 1 MiB, below etcd's 1.5 MiB a write could not pass (a write refused would
/// keep digests the door should have left out).
pub const MAX_SAID: usize = 256;

/// `said` cut to [`MAX_SAID`] bytes, marked `…` where cut.
fn cut(said: &mut String) {
    if said.len() > MAX_SAID {
        let mut end = MAX_SAID - '…'.len_utf8();
        while !said.is_char_boundary(end) {
            end -= 1;
        }
        said.truncate(end);
        said.push('…');
    }
}

/// Whether `policy` may vouch for what it elected.
fn vouches(policy: &ImagePolicy) -> bool {
    let current =
        policy.status.as_ref().and_then(|s| s.observed_generation) == policy.metadata.generation;
    let gated = policy.spec.gates().is_ok_and(|g| g.any());
    gated && current && policy.metadata.deletion_timestamp.is_none()
}

/// The reference's digest, when it is one (`sha256:` and 64 lowercase hex digits).
fn pinned(reference: &ImageRef) -> Option<String> {
    let digest = reference.digest.as_deref()?;
    let hex = digest.strip_prefix("sha256:")?;
    let valid = hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    valid.then(|| digest.to_string())
}

#[cfg(test)]
mod tests;
