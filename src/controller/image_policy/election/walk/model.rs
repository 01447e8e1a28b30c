//! The walk against a model fact source (proptest): arbitrary gate sets, candidates whose facts
//! are stored or not, and whose look-ups answer, answer nothing, fail or are cut; verdicts of
//! any age, kept valid or not, a requested reconcile or not. The property: an elected tag
//! passed every gate on the facts it holds (as docs/imagepolicy.md states the gates:
//! `oracle.rs`, which calls no production gate), and
//! `heldBack` names exactly the candidates ranked above it, best first. Nothing here elects by
//! itself: the model answers as the store and the registry would, through the controller's own
//! verdict rule ([`verdict_counts`]). The cases and the property test are in `property.rs`.

use super::super::super::downgrade::Floor;
use super::super::signature::verdict_counts;
use super::*;
use crate::api::{ImagePolicySpec, ImagePolicyStatus, ImageRef};
use crate::policy::{
    gate, Age, Bump, Bumps, ByBump, MinAge, Order, Platform, Platforms, Policy, PolicyChoice,
    SignedClock, Undated, Verify,
};
use crate::store::{PlatformFact, TagList};

const NOW: i64 = 1_000 * 86_400;
const DAY: i64 = 86_400;
const RECHECK: Duration = Duration::from_secs(300);
const KEYS: &str = "k";

/// What an image is: its creation time (days old; `None`: undated) and platforms.
#[derive(Clone, Debug)]
pub(super) struct Image {
    pub(super) age_days: Option<i64>,
    pub(super) platforms: Vec<&'static str>,
}

/// How a look-up answers.
#[derive(Clone, Debug)]
pub(super) enum Answer<T> {
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
pub(super) enum StoredVerdict {
    /// Valid, until (seconds from now, negative: expired) or for good.
    Valid(Option<i64>),
    /// Not valid, checked this many seconds ago.
    Invalid(i64),
}

/// One candidate as the model has it.
#[derive(Clone, Debug)]
pub(super) struct Tag {
    pub(super) gone: bool,
    pub(super) digest_stored: bool,
    pub(super) stored_image: Option<Image>,
    pub(super) image: Answer<Image>,
    pub(super) stored_verdict: Option<StoredVerdict>,
    /// `true`: signed by a trusted key.
    pub(super) signature: Answer<bool>,
    pub(super) first_seen_stored: Option<i64>,
    pub(super) first_seen: Option<i64>,
    /// How its version rises from the tag elected now.
    pub(super) bump: Bump,
    /// When its valid signature was made, days ago, as its log or timestamp says.
    pub(super) signed_days: Option<i64>,
}

/// The whole case: the gates (a mask over platforms 1, minAge 2, verify 4, minAgeByBump 8, and
/// 16: the walk is given the bumps), the candidates best first, and whether the reconcile was
/// requested.
#[derive(Clone, Debug)]
pub(super) struct Case {
    pub(super) gates: u8,
    pub(super) undated: bool,
    pub(super) tags: Vec<Tag>,
    pub(super) requested: bool,
    /// `digestReflectionPolicy: Never`: the elected tag's digest is not wanted.
    pub(super) never: bool,
    /// `minAgeSignedTime` with `verify`: 0 not read, 1 `IfPresent`, 2 `Required`.
    pub(super) signed_clock: u8,
    /// `downgrade: Refuse` with a tag elected before: `(i, true)` is candidate `i`;
    /// `(i, false)` a tag ranked just below candidate `i` and no longer listed.
    pub(super) floor: Option<(usize, bool)>,
}

struct Model<'c> {
    case: &'c Case,
}

/// Candidate `i` is `t{i:02}`: alphabetical `desc` ranks them in that order, and a tag elected
/// before and no longer listed, `t{i:02}a`, just below candidate `i`.
fn name(i: usize) -> String {
    format!("t{i:02}")
}

pub(super) fn index(tag: &str) -> usize {
    tag.trim_start_matches('t').parse().unwrap()
}

fn verdict(t: &Tag, signed: bool, checked_at: i64, valid_until: Option<i64>) -> SignatureVerdict {
    SignatureVerdict {
        keys: KEYS.into(),
        verified_by: signed.then(|| "cosign.pub".into()),
        reason: if signed { "" } else { "no valid signature" }.into(),
        checked_at,
        valid_until,
        signed_at: t.signed_days.filter(|_| signed).map(|d| NOW - d * DAY),
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
                image.set_verdict(verdict(t, true, NOW - 60, until.map(|u| NOW + u)))
            }
            Some(StoredVerdict::Invalid(age)) => {
                image.set_verdict(verdict(t, false, NOW - age, None))
            }
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
                evidence.image.set_verdict(verdict(t, *signed, NOW, None))
            }
            (Fact::FirstSeen, _, _) => evidence.first_seen = t.first_seen,
            (Fact::Bump, _, _) => {} // given by the judge, or never
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

pub(super) fn gates(case: &Case) -> Gates {
    let amd = vec![platform("linux/amd64")];
    let undated = match case.undated {
        true => Undated::FirstSeen,
        false => Undated::Hold,
    };
    let week = MinAge::new(Duration::from_secs(7 * DAY as u64), "168h".into(), undated);
    let days = |d: u64| Age {
        age: Duration::from_secs(d * DAY as u64),
        written: format!("{}h", d * 24),
    };
    let by_bump = ByBump {
        major: Some(days(30)),
        minor: None,
        patch: Some(days(1)),
    };
    let min_age = match (case.gates & 2 != 0, case.gates & 8 != 0) {
        (false, false) => None,
        (true, false) => Some(week),
        (true, true) => Some(week.with_bumps(by_bump)),
        (false, true) => Some(MinAge::by_bump_only(by_bump, undated)),
    };
    let signed = match (case.gates & 4 != 0, case.signed_clock) {
        (true, 1) => SignedClock::IfPresent,
        (true, 2) => SignedClock::Required,
        _ => SignedClock::Off,
    };
    let list = [
        (case.gates & 1 != 0).then(|| gate(Platforms::new(amd.clone()))),
        min_age.map(|m| gate(m.for_platforms(amd).with_signed_clock(signed))),
        (case.gates & 4 != 0).then(|| gate(Verify::SIGNATURE)),
    ];
    Gates::of(list.into_iter().flatten())
}

/// The walk over `case`; `None`: a look failed and the walk ended with an error.
pub(super) fn run(case: &Case) -> Option<Walked> {
    let names: Vec<String> = (0..case.tags.len()).map(name).collect();
    let gates = gates(case);
    let listed: Vec<(&str, Bump)> = names
        .iter()
        .zip(&case.tags)
        .map(|(n, t)| (n.as_str(), t.bump))
        .collect();
    let bumps = (case.gates & 16 != 0).then(|| Bumps::listed(&listed));
    let judge = Judge {
        gates: &gates,
        mode: Mode::of(&gates),
        wants_digest: !case.never,
        now: NOW,
        recheck: RECHECK,
        bumps: bumps.as_ref(),
    };
    let mut model = Model { case };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let walked = runtime.block_on(walk(candidates(case, &names), judge, &mut model));
    walked.ok()
}

/// The candidates as the controller ranks them: the listed tags in alphabetical `desc` order,
/// cut by the production guard at the case's floor.
fn candidates(case: &Case, names: &[String]) -> Candidates {
    let choice = PolicyChoice {
        alphabetical: Some(Order::Desc),
        ..Default::default()
    };
    let ranking = Policy::new(&choice, None).unwrap();
    let floor = case.floor.map(|(at, listed)| {
        let tag = name(at) + if listed { "" } else { "a" };
        let spec: ImagePolicySpec = serde_json::from_value(serde_json::json!({
            "imageRepositoryRef": {"name": "r"},
            "policy": {"alphabetical": {"order": "desc"}},
            "downgrade": "Refuse",
        }))
        .unwrap();
        let latest_ref = Some(ImageRef {
            name: "img".into(),
            tag,
            digest: None,
        });
        let status = ImagePolicyStatus {
            latest_ref,
            ..Default::default()
        };
        Floor::recorded(&spec, &status, None, &ranking).unwrap()
    });
    let tags = TagList::new(names).unwrap();
    Candidates::ranked(name(0), tags, ranking, floor.as_ref())
}
