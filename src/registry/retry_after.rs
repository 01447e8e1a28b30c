//! `Retry-After`, as a registry or a cloud provider sends it.

use std::time::{Duration, SystemTime};

/// `Retry-After`: delay-seconds or an HTTP-date (RFC 9110 §10.2.3).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs.min(86_400)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(
        at.duration_since(now)
            .unwrap_or_default()
            .min(Duration::from_secs(86_400)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_in_both_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(parse_retry_after(&date, now), Some(Duration::from_secs(30)));
        let past = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(parse_retry_after(&past, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        // The documented cap (docs/security.md), written out: one day, in both forms.
        let day = Some(Duration::from_secs(86_400));
        assert_eq!(parse_retry_after("86401", now), day);
        assert_eq!(parse_retry_after("18446744073709551615", now), day);
        let far = httpdate::fmt_http_date(now + Duration::from_secs(90 * 86_400));
        assert_eq!(parse_retry_after(&far, now), day);
    }
}
