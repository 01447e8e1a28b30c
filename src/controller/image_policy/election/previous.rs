//! The previous election judged again (docs/admission.md): the door admits `observedPreviousRef`
//! so that a rolling update and a revert to the release before are admitted, and only while the
//! policy's gates still pass it at its digest. The walk judges the tags ranked from the best
//! down to the one it elects, which the previous election is rarely among; here it is judged
//! too, at its own digest, with what the store keeps of it (a signature's verdict is asked of the
//! registry again only as often as the walk's are). Held, it is listed in `status.heldBack` at
//! that digest, and the door leaves it out.

use super::walk::{judge_at, Budget, FactSource, Judge, Walked};
use crate::api::{ImagePolicyStatus, ImageRef};

/// The election that will be `observedPreviousRef` once `walked` is recorded over `status`: the
/// `latestRef` before, when the walk elects something else; else the one before it.
pub(super) fn previous_after<'s>(
    status: &'s ImagePolicyStatus,
    walked: &Walked,
) -> Option<&'s ImageRef> {
    let moved = walked.elected.as_ref().is_some_and(|e| {
        let latest = status.latest_ref.as_ref();
        latest.map(|l| (&l.tag, &l.digest)) != Some((&e.tag, &e.digest))
    });
    match moved {
        true => status.latest_ref.as_ref(),
        false => status.observed_previous_ref.as_deref(),
    }
}

/// Judges `previous` at its digest unless the walk did; held, it joins `walked.held`. Not
/// judged now (the registry failed, the reconcile's inspections spent) it stays as it stood, as
/// a registry error keeps `latestRef`.
pub(super) async fn judge_previous<S: FactSource>(
    previous: Option<&ImageRef>,
    judge: Judge<'_>,
    source: &mut S,
    walked: &mut Walked,
) {
    let Some((tag, digest)) = previous.and_then(|p| Some((p.tag.as_str(), p.digest.as_deref()?)))
    else {
        return;
    };
    let at = |t: &str, d: Option<&str>| t == tag && d == Some(digest);
    let held = walked.held.iter().any(|h| at(&h.tag, h.digest.as_deref()));
    let elected = walked
        .elected
        .as_ref()
        .is_some_and(|e| at(&e.tag, e.digest.as_deref()));
    if held || elected {
        return;
    }
    let ruled = {
        let mut budget = Budget::new(&mut walked.inspected);
        judge_at(judge, source, tag, digest, &mut budget).await
    };
    if let Ok(Err(holds)) = ruled {
        walked.hold(
            tag,
            Some(digest.to_string()),
            holds,
            judge.now,
            judge.recheck,
        );
    }
}
