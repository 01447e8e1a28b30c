//! Tests of `conditions.rs`.

use super::ConditionStatus::{False, True, Unknown};
use super::ConditionType::{Ready, Reconciling, Stalled};
use super::*;

fn at(secs: i64) -> Timestamp {
    Timestamp::from_second(secs).unwrap()
}

fn types(list: &[Condition]) -> Vec<&str> {
    list.iter().map(|c| c.type_.as_str()).collect()
}

#[test]
fn keeps_the_transition_time_unless_status_reason_or_message_change() {
    let mut list = Vec::new();
    Conditions::new(&mut list, 1, at(100)).set(Ready, True, Reason::Succeeded, "m");
    let cases = [
        (True, Reason::Succeeded, "m", 100),
        (True, Reason::Succeeded, "other", 200),
        (True, Reason::Failed, "other", 200),
        (False, Reason::Failed, "other", 200),
    ];
    let mut last = 100;
    for (i, (status, reason, message, expected_change)) in cases.into_iter().enumerate() {
        let now = at(100 + 100 * i as i64);
        let mut c = Conditions::new(&mut list, 2, now);
        c.set(Ready, status, reason, message);
        let ltt = c.get(Ready).unwrap().last_transition_time.0.as_second();
        let expected = if expected_change == 100 {
            last
        } else {
            now.as_second()
        };
        assert_eq!(ltt, expected, "case {i}");
        assert_eq!(c.get(Ready).unwrap().observed_generation, Some(2));
        last = ltt;
    }
}

#[test]
fn orders_stalled_reconciling_ready_then_others() {
    let mut list = vec![Condition {
        type_: "Healthy".into(),
        status: True,
        observed_generation: Some(1),
        last_transition_time: Time(at(1)),
        reason: "X".into(),
        message: String::new(),
    }];
    let mut c = Conditions::new(&mut list, 1, at(1));
    c.set(Ready, Unknown, Reason::Progressing, "p");
    c.set(Stalled, True, Reason::InvalidPolicy, "s");
    c.set(Reconciling, True, Reason::Progressing, "p");
    assert_eq!(types(&list), ["Stalled", "Reconciling", "Ready", "Healthy"]);
}

#[test]
fn reconciling_and_stalled_exclude_each_other() {
    let mut list = Vec::new();
    let mut c = Conditions::new(&mut list, 1, at(1));
    c.mark_stalled(Reason::ImageUrlInvalid, "bad");
    assert!(c.is_stalled());
    c.mark_reconciling(Reason::Progressing, "again");
    assert!(c.is_reconciling() && !c.is_stalled());
    assert_eq!(types(&list), ["Reconciling"]);
}

#[test]
fn predicates_follow_flux() {
    let mut list = Vec::new();
    let mut c = Conditions::new(&mut list, 1, at(1));
    assert!(c.is_unknown(Ready) && !c.is_ready());
    c.set(Ready, True, Reason::Succeeded, "ok");
    assert!(c.is_ready());
    c.set(Reconciling, True, Reason::Progressing, "p");
    assert!(!c.is_ready(), "reconciling is not ready");
    c.set(Stalled, True, Reason::Failed, "s");
    assert!(!c.is_stalled() && !c.is_reconciling(), "both true: neither");
    c.mark_unknown_if_unset(Reason::Progressing, "p");
    assert_eq!(c.status(Ready), Some(True), "a set Ready is kept");
}

#[test]
fn truncates_long_messages_on_a_character_boundary() {
    let mut list = Vec::new();
    let long = "é".repeat(MAX_MESSAGE_LEN);
    Conditions::new(&mut list, 1, at(1)).set(Ready, False, Reason::Failed, &long);
    let message = &list[0].message;
    assert!(message.len() <= MAX_MESSAGE_LEN && message.ends_with("..."));
    assert!(message.len() > MAX_MESSAGE_LEN - 8);
}

#[test]
fn transition_times_are_whole_seconds() {
    let mut list = Vec::new();
    let now = Timestamp::from_nanosecond(1_700_000_000_123_456_789).unwrap();
    Conditions::new(&mut list, 1, now).set(Ready, True, Reason::Succeeded, "m");
    assert_eq!(list[0].last_transition_time.0.subsec_nanosecond(), 0);
}

#[test]
fn carries_times_of_conditions_set_again_unchanged() {
    let mut old = Vec::new();
    Conditions::new(&mut old, 1, at(10)).set(Ready, True, Reason::Succeeded, "m");
    let mut new = Vec::new();
    Conditions::new(&mut new, 2, at(20)).set(Ready, True, Reason::Succeeded, "m");
    carry_transition_times(&old, &mut new);
    assert_eq!(new[0].last_transition_time.0, at(10));
    let mut changed = Vec::new();
    Conditions::new(&mut changed, 2, at(20)).set(Ready, True, Reason::Succeeded, "n");
    carry_transition_times(&old, &mut changed);
    assert_eq!(changed[0].last_transition_time.0, at(20));
}

#[test]
fn progress_names_a_new_generation() {
    let mut list = Vec::new();
    let mut c = Conditions::new(&mut list, 3, at(1));
    c.mark_progress(Some(2));
    let reconciling = c.get(Reconciling).unwrap();
    assert_eq!(
        reconciling.message,
        "processing object: new generation 2 -> 3"
    );
    assert_eq!(c.status(Ready), Some(Unknown));
    c.mark_progress(Some(3));
    assert_eq!(
        c.get(Reconciling).unwrap().message,
        "reconciliation in progress"
    );
    let mut fresh = Vec::new();
    Conditions::new(&mut fresh, 1, at(1)).mark_progress(None);
    assert_eq!(
        fresh[0].message,
        "processing object: new generation -1 -> 1"
    );
}

#[test]
fn reason_strings_are_fluxs() {
    let all = [
        (Reason::Progressing, "Progressing"),
        (Reason::ProgressingWithRetry, "ProgressingWithRetry"),
        (Reason::Succeeded, "Succeeded"),
        (Reason::Failed, "Failed"),
        (Reason::ImageUrlInvalid, "ImageURLInvalid"),
        (Reason::FeatureGateDisabled, "FeatureGateDisabled"),
        (Reason::AuthenticationFailed, "AuthenticationFailed"),
        (Reason::Failure, "Failure"),
        (Reason::ReadOperationFailed, "ReadOperationFailed"),
        (Reason::DependencyNotReady, "DependencyNotReady"),
        (Reason::AccessDenied, "AccessDenied"),
        (Reason::InvalidPolicy, "InvalidPolicy"),
        (Reason::IntervalNotConfigured, "IntervalNotConfigured"),
        (Reason::RateLimited, "RateLimited"),
        (Reason::InvalidExclusionList, "InvalidExclusionList"),
    ];
    for (reason, text) in all {
        assert_eq!(reason.as_str(), text);
    }
}

#[test]
fn control_characters_are_escaped_in_messages() {
    assert_eq!(
        cut("\u{1b}[2J\u{1b}[31mNAME_UNKNOWN\r\nReady: True", 100),
        "\\u{1b}[2J\\u{1b}[31mNAME_UNKNOWN\\r\nReady: True"
    );
    assert_eq!(cut("plain text é", 100), "plain text é");
    let cut_escaped = cut(&"\u{7}".repeat(100), 20);
    assert!(
        cut_escaped.len() <= 20 && cut_escaped.ends_with("..."),
        "{cut_escaped}"
    );
}
