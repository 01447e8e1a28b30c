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
}
