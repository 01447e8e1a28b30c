//! The `validFor` of a trusted root's certificate authorities and transparency logs: the period
//! in which each may vouch for a signature. A Sigstore instance that rotates its Fulcio CA or
//! Rekor key ends the old one's period instead of removing it, so that older signatures still
//! verify; a signature made after that end must not be vouched for by the retired key, as
//! sigstore-go checks.

use serde::Deserialize;

/// A period in Unix seconds; an absent bound is open.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(try_from = "Written")]
pub struct ValidFor {
    start: Option<i64>,
    end: Option<i64>,
}

/// As a trusted root writes it: RFC 3339 times.
#[derive(Deserialize)]
struct Written {
    start: Option<String>,
    end: Option<String>,
}

impl TryFrom<Written> for ValidFor {
    type Error = String;

    fn try_from(written: Written) -> Result<ValidFor, String> {
        let time = |text: Option<String>| -> Result<Option<i64>, String> {
            text.map(|t| {
                t.parse::<jiff::Timestamp>()
                    .map(|t| t.as_second())
                    .map_err(|_| format!("a validFor time is not RFC 3339: {t:.64}"))
            })
            .transpose()
        };
        Ok(ValidFor {
            start: time(written.start)?,
            end: time(written.end)?,
        })
    }
}

impl ValidFor {
    /// Whether the period has a start (a log's must: sigstore-go refuses a root without one).
    pub fn has_start(&self) -> bool {
        self.start.is_some()
    }

    /// Whether `seconds` (Unix time) is inside the period.
    pub fn contains(&self, seconds: i64) -> bool {
        self.start.is_none_or(|s| s <= seconds) && self.end.is_none_or(|e| seconds <= e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(json: &str) -> Result<ValidFor, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn a_period_holds_its_bounds_and_nothing_outside() {
        let period =
            read(r#"{"start": "2021-03-07T03:20:29Z", "end": "2022-12-31T23:59:59.999Z"}"#)
                .unwrap();
        assert!(!period.contains(1_615_087_228));
        assert!(period.contains(1_615_087_229));
        assert!(period.contains(1_672_531_199));
        assert!(!period.contains(1_672_531_200));
        let open = read(r#"{"start": "2022-04-13T20:06:15.000Z"}"#).unwrap();
        assert!(open.contains(i64::MAX) && !open.contains(0));
        assert!(read("{}").unwrap().contains(0));
        let err = read(r#"{"start": "yesterday"}"#).unwrap_err();
        assert!(err.contains("not RFC 3339: yesterday"), "{err}");
    }

    /// A log whose key has no `validFor`, or one without a start, makes the whole root
    /// refused, as sigstore-go refuses it ("tlog missing public key validity period"): a
    /// transparency log and a CT log alike.
    #[test]
    fn a_log_without_a_validity_start_refuses_the_root() {
        let entry = |period: Option<serde_json::Value>| {
            let mut key =
                serde_json::json!({"rawBytes": "AAAA", "keyDetails": "PKIX_ECDSA_P256_SHA_256"});
            if let Some(period) = period {
                key["validFor"] = period;
            }
            serde_json::json!({"baseUrl": "https://rekor.invalid", "publicKey": key})
        };
        for period in [
            None,
            Some(serde_json::json!({"end": "2030-01-01T00:00:00Z"})),
        ] {
            for logs in ["tlogs", "ctlogs"] {
                let root = serde_json::json!({logs: [entry(period.clone())]}).to_string();
                let err = crate::verify::keyless::TrustedRoot::parse(root.as_bytes()).unwrap_err();
                let want = "the log https://rekor.invalid has no validFor start";
                assert!(err.contains(want), "{logs} {period:?}: {err}");
            }
        }
        // With a start, the log passes this check (and the root fails later, for naming no
        // certificate authority).
        let started = Some(serde_json::json!({"start": "2020-01-01T00:00:00Z"}));
        let root = serde_json::json!({"tlogs": [entry(started)]}).to_string();
        let parsed = crate::verify::keyless::TrustedRoot::parse(root.as_bytes());
        assert_eq!(
            parsed.map(|_| ()),
            Err("trusted_root.json names no certificate authority".to_string())
        );
    }
}
