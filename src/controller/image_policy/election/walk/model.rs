//! The walk against a model fact source (proptest): arbitrary gate sets, candidates whose facts
//! are stored or not, and whose look-ups answer, answer nothing, fail or are cut; verdicts of
//! any age, kept valid or not, a requested reconcile or not. The property: an elected tag
//! passed every gate on the facts it holds (the model's truth, judged by the whole list), and
//! `heldBack` names exactly the candidates ranked above it, best first. Nothing here elects by
//! itself: the model answers as the store and the registry would, through the controller's own
//! verdict rule ([`verdict_counts`]).

use super::super::signature::verdict_counts;
use super::*;
use crate::policy::{gate, MinAge, Platforms, Ruling, Undated, Verify};
use crate::store::PlatformFact;
use proptest::prelude::*;

const NOW: i64 = 1_000 * 86_400;
const DAY: i64 = 86_400;
const RECHECK: Duration = Duration::from_secs(300);
const KEYS: &str = "k";

/// What an image is: its creation time (days old; `None`: undated) and platforms.
#[derive(Clone, Debug)]
struct Image {
    age_days: Option<i64>,
    platforms: Vec<&'static str>,
}

/// How a look-up answers.
#[derive(Clone, Debug)]
enum Answer<T> {
    /// With the fact.
    Found(T),
    /// Without it (the source learnt nothing): the fact stays unknown.
    Nothing,
    /// The registry failed (or timed out): the walk ends.
    Failing,
    /// The image is gone since the scan.
    Gone,
}

/// A signature verdict the store kept.
#[derive(Clone, Debug)]
enum StoredVerdict {
    /// Valid, until (seconds from now, negative: expired) or for good.
    Valid(Option<i64>),
    /// Not valid, checked this many seconds ago.
    Invalid(i64),
}

/// One candidate as the model has it.
#[derive(Clone, Debug)]
struct Tag {
    gone: bool,
    digest_stored: bool,
    stored_image: Option<Image>,
    image: Answer<Image>,
    stored_verdict: Option<StoredVerdict>,
    /// `true`: signed by a trusted key.
    signature: Answer<bool>,
    first_seen_stored: Option<i64>,
    first_seen: Option<i64>,
}

/// The whole case: the gates (a mask over platforms, minAge, verify), the candidates best
/// first, and whether the reconcile was requested.
#[derive(Clone, Debug)]
struct Case {
    gates: u8,
    undated: bool,
    tags: Vec<Tag>,
    requested: bool,
}

struct Model<'c> {
    case: &'c Case,
}

fn index(tag: &str) -> usize {
    tag.trim_start_matches('t').parse().unwrap()
}

fn verdict(signed: bool, checked_at: i64, valid_until: Option<i64>) -> SignatureVerdict {
    SignatureVerdict {
        keys: KEYS.into(),
        verified_by: signed.then(|| "cosign.pub".into()),
        reason: if signed { "" } else { "no valid signature" }.into(),
        checked_at,
        valid_until,
    }
}

fn inspect(facts: &mut ImageFacts, image: &Image) {
    facts.inspected = true;
    facts.created = image.age_days.map(|d| NOW - d * DAY);
    facts.platforms = image
        .platforms
        .iter()
        .map(|p| PlatformFact {
            platform: platform(p).to_string(),
            created: facts.created,
        })
        .collect();
}

fn platform(text: &str) -> Platform {
    Platform::parse(text).unwrap()
}

impl FactSource for Model<'_> {
    async fn digest(&mut self, tag: &str, budget: &mut Budget<'_>) -> Result<String, Cut> {
        let t = &self.case.tags[index(tag)];
        if !t.digest_stored {
            budget.charge()?;
        }
        match t.gone {
            true => Err(Cut::Gone),
            false => Ok(format!("d-{tag}")),
        }
    }

    fn known(&self, tag: &str, digest: &str) -> Evidence {
        let t = &self.case.tags[index(tag)];
        let mut image = ImageFacts {
            digest: digest.into(),
            ..Default::default()
        };
        if let Some(stored) = &t.stored_image {
            inspect(&mut image, stored);
        }
        match t.stored_verdict {
            Some(StoredVerdict::Valid(until)) => {
                image.set_verdict(verdict(true, NOW - 60, until.map(|u| NOW + u)))
            }
            Some(StoredVerdict::Invalid(age)) => image.set_verdict(verdict(false, NOW - age, None)),
            None => {}
        }
        let (tag, first_seen) = (tag.to_string(), t.first_seen_stored);
        Evidence {
            tag,
            image,
            first_seen,
        }
    }

    async fn look_up(&mut self, fact: Fact, evidence: &mut Evidence) -> Result<(), Cut> {
        let t = &self.case.tags[index(&evidence.tag)];
        let failing = || Cut::from(LookError::Timeout(Duration::from_secs(10)));
        match (fact, &t.image, &t.signature) {
            (Fact::Image, Answer::Found(image), _) => inspect(&mut evidence.image, image),
            (Fact::Signature, _, Answer::Found(signed)) => {
                evidence.image.set_verdict(verdict(*signed, NOW, None))
            }
            (Fact::FirstSeen, _, _) => evidence.first_seen = t.first_seen,
            (Fact::Image, Answer::Failing, _) | (Fact::Signature, _, Answer::Failing) => {
                return Err(failing())
            }
            (Fact::Image, Answer::Gone, _) | (Fact::Signature, _, Answer::Gone) => {
                return Err(Cut::Gone)
            }
            (Fact::Image, Answer::Nothing, _) | (Fact::Signature, _, Answer::Nothing) => {}
        }
        Ok(())
    }

    fn verdict<'f>(
        &self,
        facts: &'f ImageFacts,
        checked_now: bool,
    ) -> Option<&'f SignatureVerdict> {
        let verdict = facts.verdict(KEYS)?;
        let requested = self.case.requested;
        verdict_counts(verdict, NOW, RECHECK, requested, checked_now).then_some(verdict)
    }

    async fn keep(&mut self, _: ImageFacts) {}
}

fn gates(case: &Case) -> Gates {
    let amd = vec![platform("linux/amd64")];
    let undated = match case.undated {
        true => Undated::FirstSeen,
        false => Undated::Hold,
    };
    let week = MinAge::new(Duration::from_secs(7 * DAY as u64), "168h".into(), undated);
    let list = [
        (case.gates & 1 != 0).then(|| gate(Platforms::new(amd.clone()))),
        (case.gates & 2 != 0).then(|| gate(week.for_platforms(amd))),
        (case.gates & 4 != 0).then(|| gate(Verify)),
    ];
    Gates::of(list.into_iter().flatten())
}

/// The facts the model holds true for a candidate: what is stored, else what a look-up finds.
/// A valid signature is one the store kept valid and unexpired, or one a check finds.
fn truth(t: &Tag, platforms: &[(Platform, Option<i64>)]) -> Facts<'static> {
    let platforms: &'static [(Platform, Option<i64>)] = Box::leak(platforms.to_vec().into());
    let mut facts = Facts::at(NOW);
    let image = t.stored_image.clone().or(match &t.image {
        Answer::Found(image) => Some(image.clone()),
        _ => None,
    });
    if let Some(image) = image {
        let created = image.age_days.map(|d| NOW - d * DAY);
        facts = facts.with_image(ImageView { created, platforms });
    }
    let kept_valid =
        matches!(t.stored_verdict, Some(StoredVerdict::Valid(u)) if u.is_none_or(|u| u > 0));
    if kept_valid || matches!(t.signature, Answer::Found(true)) {
        facts = facts.with_signature(Ok("cosign.pub"));
    }
    if let Some(at) = t.first_seen_stored.or(t.first_seen) {
        facts = facts.with_first_seen(at);
    }
    facts
}

fn image_platforms(t: &Tag) -> Vec<(Platform, Option<i64>)> {
    let image = t.stored_image.clone().or(match &t.image {
        Answer::Found(image) => Some(image.clone()),
        _ => None,
    });
    image.map_or_else(Vec::new, |i| {
        let created = i.age_days.map(|d| NOW - d * DAY);
        i.platforms.iter().map(|p| (platform(p), created)).collect()
    })
}

/// The walk over `case`; `None`: a look failed and the walk ended with an error.
fn run(case: &Case) -> Option<Walked> {
    let names: Vec<String> = (0..case.tags.len()).map(|i| format!("t{i}")).collect();
    let ranked: Vec<&str> = names.iter().map(String::as_str).collect();
    let gates = gates(case);
    let judge = Judge {
        gates: &gates,
        mode: Mode::of(&gates),
        wants_digest: true,
        now: NOW,
        recheck: RECHECK,
    };
    let mut model = Model { case };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let walked = runtime.block_on(walk(Candidates::listed(&ranked), judge, &mut model));
    walked.ok()
}

/// The property, for one case.
fn check(case: &Case) -> Result<(), TestCaseError> {
    let Some(walked) = run(case) else {
        return Ok(()); // a failed look elects nothing
    };
    let held: Vec<usize> = walked.held.iter().map(|h| index(&h.tag)).collect();
    prop_assert!(
        held.windows(2).all(|w| w[0] < w[1]),
        "held best first: {held:?}"
    );
    let Some(elected) = &walked.elected else {
        return Ok(());
    };
    let at = index(&elected.tag);
    let t = &case.tags[at];
    prop_assert!(!t.gone, "a gone tag elected");
    let gates = gates(case);
    let names = gates.names();
    prop_assert_eq!(elected.passed.gates(), names.as_slice());
    let offered = image_platforms(t);
    let ruling = gates.judge(&truth(t, &offered));
    prop_assert!(
        matches!(ruling, Ruling::Passed(_)),
        "{} elected, but on the facts it holds: {:?}",
        elected.tag,
        ruling
    );
    // Nothing below it was held back, and every candidate above it was, unless it is gone
    // (since the scan, or found gone by a look-up).
    prop_assert!(
        held.iter().all(|i| *i < at),
        "held below the elected: {held:?}"
    );
    let may_be_gone =
        |t: &Tag| t.gone || matches!(t.image, Answer::Gone) || matches!(t.signature, Answer::Gone);
    let skipped: Vec<usize> = (0..at).filter(|i| !held.contains(i)).collect();
    prop_assert!(
        skipped.iter().all(|i| may_be_gone(&case.tags[*i])),
        "candidates above {} neither held nor gone: {skipped:?}",
        elected.tag
    );
    Ok(())
}

fn answer<T: std::fmt::Debug + Clone>(
    found: impl Strategy<Value = T>,
) -> impl Strategy<Value = Answer<T>> {
    prop_oneof![
        6 => found.prop_map(Answer::Found),
        2 => Just(Answer::Nothing),
        1 => Just(Answer::Failing),
        1 => Just(Answer::Gone),
    ]
}

fn image() -> impl Strategy<Value = Image> {
    let platforms = prop::sample::subsequence(vec!["linux/amd64", "linux/arm64"], 0..=2);
    (prop::option::weighted(0.8, 0i64..15), platforms).prop_map(|(age_days, platforms)| Image {
        age_days,
        platforms,
    })
}

fn stored_verdict() -> impl Strategy<Value = Option<StoredVerdict>> {
    prop::option::of(prop_oneof![
        prop::option::of(-100i64..100).prop_map(StoredVerdict::Valid),
        (0i64..600).prop_map(StoredVerdict::Invalid),
    ])
}

fn first_seen() -> impl Strategy<Value = Option<i64>> {
    prop::option::of(prop_oneof![Just(0), (0i64..15).prop_map(|d| NOW - d * DAY)])
}

fn tag() -> impl Strategy<Value = Tag> {
    (
        prop::bool::weighted(0.1),
        any::<bool>(),
        prop::option::weighted(0.3, image()),
        answer(image()),
        stored_verdict(),
        answer(any::<bool>()),
        first_seen(),
        first_seen(),
    )
        .prop_map(
            |(gone, digest_stored, stored_image, image, v, s, fs, f)| Tag {
                gone,
                digest_stored,
                stored_image,
                image,
                stored_verdict: v,
                signature: s,
                first_seen_stored: fs,
                first_seen: f,
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    (
        0u8..8,
        any::<bool>(),
        prop::collection::vec(tag(), 1..13),
        any::<bool>(),
    )
        .prop_map(|(gates, undated, tags, requested)| Case {
            gates,
            undated,
            tags,
            requested,
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2_000))]

    /// Issue 69's property: no path through the walk elects a candidate whose gates did not
    /// all pass on facts it holds, a requested reconcile included.
    #[test]
    fn an_elected_tag_passed_every_gate_on_facts_it_holds(case in case()) {
        check(&case)?;
    }
}

/// The case issue 69 reported, written out: `flux reconcile` on a `verify` policy, the newest
/// unsigned, the next signed by an untrusted key, the third by the trusted one.
#[test]
fn a_requested_reconcile_never_elects_the_unsigned_newest() {
    let tag = |signed: bool| Tag {
        gone: false,
        digest_stored: true,
        stored_image: None,
        image: Answer::Nothing,
        stored_verdict: None,
        signature: Answer::Found(signed),
        first_seen_stored: Some(0),
        first_seen: Some(0),
    };
    for requested in [false, true] {
        let case = Case {
            gates: 4,
            undated: false,
            tags: vec![tag(false), tag(false), tag(true)],
            requested,
        };
        let walked = run(&case).unwrap();
        assert_eq!(walked.elected.as_ref().map(|e| e.tag.as_str()), Some("t2"));
        let held: Vec<&str> = walked.held.iter().map(|h| h.reason.as_str()).collect();
        assert_eq!(held, ["no valid signature", "no valid signature"]);
        check(&case).unwrap();
    }
}

/// A fact still unknown after its look-up holds the candidate, naming the fact: before, it
/// counted as a pass once the walk's rounds ran out.
#[test]
fn a_fact_unknown_after_its_look_up_holds() {
    let case = Case {
        gates: 4 | 2,
        undated: false,
        tags: vec![Tag {
            gone: false,
            digest_stored: true,
            stored_image: None,
            image: Answer::Found(Image {
                age_days: Some(30),
                platforms: vec!["linux/amd64"],
            }),
            stored_verdict: None,
            signature: Answer::Nothing,
            first_seen_stored: None,
            first_seen: Some(0),
        }],
        requested: false,
    };
    let walked = run(&case).unwrap();
    assert!(walked.elected.is_none());
    assert_eq!(walked.held.len(), 1);
    assert_eq!(walked.held[0].gate, "verify");
    assert!(walked.held[0]
        .reason
        .starts_with("the signature check is unknown after"));
    // Three facts to look up, then the last judging: the rounds cover all of them.
    let mut found = case.clone();
    found.tags[0].signature = Answer::Found(true);
    let walked = run(&found).unwrap();
    assert_eq!(walked.elected.map(|e| e.tag), Some("t0".into()));
}
