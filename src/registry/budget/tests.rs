use super::*;

#[test]
fn reservations_are_shared_and_given_back() {
    let budget = MemoryBudget::new(100);
    let mut a = Held::default();
    let mut b = Held::default();
    budget.reserve(&mut a, 60).unwrap();
    budget.reserve(&mut a, 30).unwrap();
    assert_eq!((a.bytes(), budget.available()), (90, 10));
    let err = budget.reserve(&mut b, 20).unwrap_err();
    assert!(err.contains("held by other reads"), "{err}");
    assert_eq!(b.bytes(), 0);
    drop(a);
    budget.reserve(&mut b, 20).unwrap();
    assert_eq!(budget.available(), 80);
}

/// One namespace holds at most two thirds of the budget (64 of 96 MiB), so a third stays
/// for the others whatever its registries answer.
#[test]
fn a_tenant_holds_at_most_its_share_and_others_keep_the_rest() {
    let budget = MemoryBudget::default();
    let mut first = Held::for_tenant(Some("hostile"));
    let mut second = Held::for_tenant(Some("hostile"));
    budget.reserve(&mut first, 40 << 20).unwrap();
    let err = budget.reserve(&mut second, 25 << 20).unwrap_err();
    assert!(
        err.contains("namespace hostile's share") && err.contains("(64 of 96 MiB)"),
        "{err}"
    );
    budget.reserve(&mut second, 24 << 20).unwrap();
    assert_eq!(budget.held_by("hostile"), 64 << 20);
    let mut other = Held::for_tenant(Some("team"));
    budget.reserve(&mut other, 32 << 20).unwrap();
    assert_eq!(budget.available(), 0);
    drop(first);
    assert_eq!(budget.held_by("hostile"), 24 << 20);
    drop(second);
    assert_eq!(budget.held_by("hostile"), 0);
    assert_eq!(
        budget.lock_tenants().holders(),
        1,
        "only tenants holding bytes have an entry"
    );
}

const MIB: usize = 1 << 20;

/// The attack measured: two namespaces of one tenant hold 64 + 32 MiB of reads nearly sent
/// and then stalled, the whole budget. A third namespace's first read is refused, and its
/// refusal stops the reads over their fair share (a third each: 32 MiB), so its next try is
/// served; meanwhile the attacker's retries cannot take the room back past their share.
#[tokio::test]
async fn a_refused_namespace_stops_the_reads_over_their_fair_share() {
    let budget = MemoryBudget::default();
    let now = Instant::now();
    let mut big = Held::for_tenant(Some("hostile-a"));
    let mut small = Held::for_tenant(Some("hostile-b"));
    budget.reserve_at(&mut big, 64 * MIB, now).unwrap();
    budget.reserve_at(&mut small, 32 * MIB, now).unwrap();
    let stopped = big.stopped();
    let mut victim = Held::for_tenant(Some("team"));
    let err = budget.reserve_at(&mut victim, MIB, now).unwrap_err();
    assert!(
        err.contains("1 read(s) of namespaces over their fair share were stopped")
            && err.contains("fair share (32 MiB)")
            && !err.contains("hostile"),
        "{err}"
    );
    let reason = tokio::time::timeout(Duration::from_secs(5), stopped)
        .await
        .expect("the read over its fair share is told to stop");
    assert!(
        reason.contains("namespace hostile-a held more than its fair share (32 MiB)"),
        "{reason}"
    );
    let again = budget.reserve_at(&mut big, 1, now).unwrap_err();
    assert_eq!(again, reason, "a stopped read reserves nothing more");
    assert_eq!(
        budget.held_by("hostile-b"),
        32 * MIB,
        "a namespace within its share keeps it"
    );
    drop(big);
    let later = now + Duration::from_secs(2);
    budget.reserve_at(&mut victim, MIB, later).unwrap();
    // The attacker's retry comes first for the freed room: held to its fair share while the
    // victim waits.
    let mut retry = Held::for_tenant(Some("hostile-a"));
    let err = budget.reserve_at(&mut retry, 40 * MIB, later).unwrap_err();
    assert!(err.contains("past its fair share of it (32 MiB)"), "{err}");
    budget.reserve_at(&mut retry, 32 * MIB, later).unwrap();
    budget.reserve_at(&mut victim, 30 * MIB, later).unwrap();
    assert_eq!(budget.held_by("team"), 31 * MIB);
}

/// Fair shares bind only while another namespace waits: past the window a namespace alone
/// may use what is free again (up to the two-thirds cap), and a refusal over one's own fair
/// share stops no one.
#[test]
fn shares_bind_only_while_others_wait() {
    let budget = MemoryBudget::default();
    let now = Instant::now();
    let mut hog = Held::for_tenant(Some("a"));
    budget.reserve_at(&mut hog, 64 * MIB, now).unwrap();
    let mut other = Held::for_tenant(Some("b"));
    budget.reserve_at(&mut other, 32 * MIB, now).unwrap();
    let hog_stopped = hog.read.clone();
    // "b" already holds its fair share (48 MiB of two) no more: asking for 20 more puts it
    // over it, so it stops no one.
    let err = budget.reserve_at(&mut other, 20 * MIB, now).unwrap_err();
    assert!(!err.contains("were stopped"), "{err}");
    assert!(hog_stopped.stopped_reason().is_none());
    drop(other);
    let mut more = Held::for_tenant(Some("a"));
    let err = budget.reserve_at(&mut more, MIB, now).unwrap_err();
    assert!(
        err.contains("share of the controller's memory budget"),
        "{err}"
    );
    drop(hog);
    let mut grown = Held::for_tenant(Some("a"));
    let err = budget.reserve_at(&mut grown, 60 * MIB, now).unwrap_err();
    assert!(
        err.contains("(48 MiB)") && err.contains("past its fair share"),
        "{err}"
    );
    let past = now + WANT_WINDOW;
    budget.reserve_at(&mut grown, 60 * MIB, past).unwrap();
}

/// A page body and the listing's kept tags are one read: stopping it stops both.
#[test]
fn a_body_beside_its_listing_is_stopped_with_it() {
    let budget = MemoryBudget::new(90 * MIB);
    let now = Instant::now();
    let mut kept = Held::for_tenant(Some("a"));
    budget.reserve_at(&mut kept, 20 * MIB, now).unwrap();
    let mut body = Held::beside(&kept);
    budget.reserve_at(&mut body, 40 * MIB, now).unwrap();
    let mut b = Held::for_tenant(Some("b"));
    budget.reserve_at(&mut b, 30 * MIB, now).unwrap();
    let mut victim = Held::for_tenant(Some("c"));
    budget.reserve_at(&mut victim, MIB, now).unwrap_err();
    assert!(body.read.stopped_reason().is_some() && kept.read.stopped_reason().is_some());
    assert!(
        b.read.stopped_reason().is_none(),
        "b holds its fair share, 30 MiB"
    );
    drop(body);
    assert_eq!(budget.held_by("a"), 20 * MIB);
    drop(kept);
    assert_eq!(budget.lock_tenants().holders(), 1);
}

/// The reads over the share stop largest first, and no more than bring the namespace to its
/// share: of 24 and 40 MiB, the 40 stops and the 24 goes on.
#[test]
fn the_largest_reads_stop_first_and_no_more_than_needed() {
    let budget = MemoryBudget::default();
    let now = Instant::now();
    let mut small = Held::for_tenant(Some("a"));
    let mut large = Held::for_tenant(Some("a"));
    budget.reserve_at(&mut small, 24 * MIB, now).unwrap();
    budget.reserve_at(&mut large, 40 * MIB, now).unwrap();
    let mut b = Held::for_tenant(Some("b"));
    budget.reserve_at(&mut b, 32 * MIB, now).unwrap();
    let mut victim = Held::for_tenant(Some("c"));
    budget.reserve_at(&mut victim, MIB, now).unwrap_err();
    assert!(large.read.stopped_reason().is_some(), "the largest stops");
    assert!(
        small.read.stopped_reason().is_none(),
        "24 MiB is within the share, 32"
    );
    assert!(b.read.stopped_reason().is_none());
}

/// A read stays stoppable while any part of it holds bytes (a listing whose page body was
/// given back), and one that gave everything back leaves the others listed.
#[test]
fn a_read_is_listed_while_it_holds_bytes() {
    let budget = MemoryBudget::default();
    let now = Instant::now();
    let mut kept = Held::for_tenant(Some("a"));
    budget.reserve_at(&mut kept, 36 * MIB, now).unwrap();
    let mut body = Held::beside(&kept);
    budget.reserve_at(&mut body, 4 * MIB, now).unwrap();
    drop(body);
    let mut other = Held::for_tenant(Some("a"));
    budget.reserve_at(&mut other, 16 * MIB, now).unwrap();
    let mut ended = Held::for_tenant(Some("a"));
    budget.reserve_at(&mut ended, 4 * MIB, now).unwrap();
    drop(ended);
    let mut b = Held::for_tenant(Some("b"));
    budget.reserve_at(&mut b, 44 * MIB, now).unwrap();
    assert_eq!(budget.available(), 0);
    let mut victim = Held::for_tenant(Some("c"));
    budget.reserve_at(&mut victim, MIB, now).unwrap_err();
    assert!(
        kept.read.stopped_reason().is_some(),
        "the listing, 36 MiB, stops"
    );
    assert!(
        other.read.stopped_reason().is_none(),
        "16 MiB is within the share"
    );
}
