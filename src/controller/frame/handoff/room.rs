//! Who gets room in the background (docs/security.md, "Fair shares"): the running decisions
//! are shared by namespace with max-min fairness. A namespace may run up to
//! [`MAX_BACKGROUND_PER_NAMESPACE`]; while there is room in all, anyone gets it. Once the
//! background is full, a namespace under its fair share (the room over the namespaces running
//! there, itself among them) takes a place from the namespace running the most, whose newest
//! decision is stopped and tried again later; one at its fair share waits. So a namespace's
//! decision never waits behind others' slow registries while it runs fewer than its share:
//! 64 slow policies across 4 namespaces once refused a fifth namespace's policy for 5 minutes.
//! When namespaces outnumber the room (64 running one each, a share of one), a namespace
//! running none takes the place of the decision running longest, once it has run
//! [`BUSY_RETRY`]: 64 namespaces with one slow decision each held a 65th's for 4 min 46 s.

use std::collections::HashMap;
use std::time::Duration;

/// Decisions of one kind running in the background at once, in all (each holds sockets and
/// memory as long as its registry makes it last: 200 policies whose manifests dripped held
/// 200 sockets for up to 5 minutes) ...
pub const MAX_BACKGROUND: usize = 64;
/// ... and of one namespace, so one tenant's slow registries leave room for the others'.
pub const MAX_BACKGROUND_PER_NAMESPACE: usize = 16;
/// When a decision that found no background room is tried again.
pub const BUSY_RETRY: Duration = Duration::from_secs(30);

/// What a new decision of a namespace gets.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Room {
    Free,
    /// Room taken from this namespace, which runs more than its fair share; the reason its
    /// stopped decision gives.
    TakenFrom {
        namespace: String,
        reason: String,
    },
    /// No room; says why.
    Busy(String),
}

/// The fair share of the background when `namespaces` run there.
pub(super) fn fair_share(namespaces: usize) -> usize {
    (MAX_BACKGROUND / namespaces.max(1)).max(1)
}

/// Room for a decision of `ours`, given how many each namespace runs in the background and
/// which namespace runs the decision running longest, and for how long.
pub(super) fn room(
    running: &HashMap<&str, usize>,
    ours: &str,
    oldest: Option<(&str, Duration)>,
) -> Room {
    let retry = BUSY_RETRY.as_secs();
    let mine = running.get(ours).copied().unwrap_or(0);
    if mine >= MAX_BACKGROUND_PER_NAMESPACE {
        return Room::Busy(format!(
            "waiting: {mine} decisions of this namespace already run in the background \
             (registries slow to answer; at most {MAX_BACKGROUND_PER_NAMESPACE} a namespace); \
             tried again in {retry}s"
        ));
    }
    let total: usize = running.values().sum();
    if total < MAX_BACKGROUND {
        return Room::Free;
    }
    let namespaces = running.len() + usize::from(mine == 0);
    let fair = fair_share(namespaces);
    let most = running
        .iter()
        .filter(|(ns, _)| **ns != ours)
        .max_by_key(|(ns, n)| (**n, std::cmp::Reverse(**ns)));
    match most {
        Some((ns, n)) if mine < fair && *n > fair => Room::TakenFrom {
            namespace: ns.to_string(),
            reason: taken_reason(ns, *n, namespaces),
        },
        // Outnumbered: every namespace at its share of one, ours running none.
        _ if mine == 0 && oldest.is_some_and(|(ns, ran)| ns != ours && ran >= BUSY_RETRY) => {
            let (ns, ran) = oldest.expect("checked");
            Room::TakenFrom {
                namespace: ns.to_string(),
                reason: outnumbered_reason(ns, ran, namespaces),
            }
        }
        _ => Room::Busy(format!(
            "waiting: {total} decisions already run in the background (registries slow to \
             answer; at most {MAX_BACKGROUND}), {mine} of them this namespace's, its fair share \
             among the {namespaces} namespaces there being {fair}; tried again in {retry}s"
        )),
    }
}

/// The reason a decision stopped to give its room to another namespace fails with.
fn taken_reason(namespace: &str, running: usize, namespaces: usize) -> String {
    format!(
        "waiting: stopped to give room in the background to another namespace: namespace \
         {namespace} ran {running} of the {MAX_BACKGROUND} decisions there (registries slow to \
         answer), over its fair share among {namespaces} namespaces ({}); tried again in {}s",
        fair_share(namespaces),
        BUSY_RETRY.as_secs()
    )
}

/// The reason a decision stopped for a namespace running none, when namespaces outnumber
/// the room, fails with.
fn outnumbered_reason(namespace: &str, ran: Duration, namespaces: usize) -> String {
    format!(
        "waiting: stopped after {}s to give room in the background to a namespace running \
         none: {namespaces} namespaces share its {MAX_BACKGROUND} places, one each, and \
         namespace {namespace}'s decision had run the longest (registries slow to answer); \
         tried again in {}s",
        ran.as_secs(),
        BUSY_RETRY.as_secs()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn running(counts: &[(&'static str, usize)]) -> HashMap<&'static str, usize> {
        counts.iter().copied().collect()
    }

    /// Max-min over a model: whatever the namespaces run, a namespace under its fair share
    /// gets room (free, or taken from one over it), one at or over it never takes any, and
    /// room is taken only from a namespace over the fair share.
    #[test]
    fn room_follows_max_min_fairness() {
        let names = ["a", "b", "c", "d", "e"];
        // Every split of up to 64 running decisions over 4 namespaces, in steps of 4.
        for a in (0..=16).step_by(4) {
            for b in (0..=16).step_by(4) {
                for c in (0..=16).step_by(4) {
                    for d in (0..=16).step_by(4) {
                        let counts: HashMap<&str, usize> = names[..4]
                            .iter()
                            .copied()
                            .zip([a, b, c, d])
                            .filter(|(_, n)| *n > 0)
                            .collect();
                        for ours in names {
                            check(&counts, ours);
                        }
                    }
                }
            }
        }
    }

    fn check(counts: &HashMap<&str, usize>, ours: &str) {
        let total: usize = counts.values().sum();
        let mine = counts.get(ours).copied().unwrap_or(0);
        let namespaces = counts.len() + usize::from(mine == 0);
        let fair = fair_share(namespaces);
        match room(counts, ours, None) {
            Room::Free => assert!(total < MAX_BACKGROUND && mine < 16, "{counts:?} {ours}"),
            Room::TakenFrom { namespace: ns, .. } => {
                assert!(total >= MAX_BACKGROUND && mine < fair, "{counts:?} {ours}");
                assert!(
                    counts[ns.as_str()] > fair && ns != ours,
                    "{counts:?} {ours}"
                );
            }
            Room::Busy(why) => {
                assert!(why.contains("in 30s"), "{why}");
                assert!(
                    mine >= 16 || mine >= fair || counts.values().all(|n| *n <= fair),
                    "{counts:?} {ours}: {why}"
                );
            }
        }
    }

    /// The attack measured: 4 namespaces run 16 slow decisions each; a fifth namespace's
    /// decision takes room from one of them, and a second from that fifth is still under its
    /// share (12), until it reaches it.
    #[test]
    fn a_fifth_namespace_takes_room_from_four_full_ones() {
        let full = running(&[("a", 16), ("b", 16), ("c", 16), ("d", 16)]);
        match room(&full, "e", None) {
            Room::TakenFrom { namespace, reason } => {
                assert_eq!(namespace, "a");
                assert!(
                    reason.contains("fair share among 5 namespaces (12)"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        let shared = running(&[("a", 12), ("b", 13), ("c", 13), ("d", 14), ("e", 12)]);
        match room(&shared, "e", None) {
            Room::Busy(why) => assert!(
                why.contains(
                    "12 of them this namespace's, its fair share among the 5 \
                              namespaces there being 12"
                ),
                "{why}"
            ),
            other => panic!("{other:?}"),
        }
        assert!(
            matches!(room(&shared, "a", None), Room::Busy(_)),
            "a is over its share"
        );
        let room_left = running(&[("a", 16), ("b", 16)]);
        assert!(
            matches!(room(&room_left, "a", None), Room::Busy(_)),
            "a namespace's cap"
        );
        assert_eq!(room(&room_left, "c", None), Room::Free);
        // 64 namespaces running one each, a 65th: the share is one, and no one runs more;
        // the decision running longest gives its place up once it has run 30 s, not before,
        // and never to a namespace that runs one already.
        let names: Vec<String> = (0..64).map(|i| format!("ns{i}")).collect();
        let one_each: HashMap<&str, usize> = names.iter().map(|n| (n.as_str(), 1)).collect();
        let young = Some(("ns7", Duration::from_secs(29)));
        match room(&one_each, "late", young) {
            Room::Busy(why) => assert!(why.contains("being 1;"), "{why}"),
            other => panic!("{other:?}"),
        }
        let old = Some(("ns7", BUSY_RETRY));
        match room(&one_each, "late", old) {
            Room::TakenFrom { namespace, reason } => {
                assert_eq!(namespace, "ns7");
                assert!(reason.contains("stopped after 30s"), "{reason}");
                assert!(
                    reason.contains("65 namespaces share its 64 places"),
                    "{reason}"
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(room(&one_each, "ns3", old), Room::Busy(_)));
        assert!(matches!(room(&one_each, "ns7", old), Room::Busy(_)));
    }
}
