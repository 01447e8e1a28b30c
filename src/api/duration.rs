//! Go durations, as Flux writes `spec.interval` and `spec.timeout` (`5m`, `1h30m`, `300ms`,
//! `1.5s`): Go's `time.ParseDuration` grammar, without negative values, which no field allows.

use std::time::Duration;

/// Parses a Go duration string.
pub fn parse_go_duration(text: &str) -> Result<Duration, String> {
    let invalid = || format!("time: invalid duration \"{text}\"");
    let body = text.strip_prefix('+').unwrap_or(text);
    if body == "0" {
        return Ok(Duration::ZERO);
    }
    if body.is_empty() || body.starts_with('-') {
        return Err(invalid());
    }
    let mut total = 0f64;
    let mut rest = body;
    while !rest.is_empty() {
        let number_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return Err(invalid());
        }
        let value: f64 = number.parse().map_err(|_| invalid())?;
        rest = &rest[number_len..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let nanos_per_unit = match &rest[..unit_len] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration \"{text}\"")),
            unit => {
                return Err(format!(
                    "time: unknown unit \"{unit}\" in duration \"{text}\""
                ))
            }
        };
        total += value * nanos_per_unit;
        rest = &rest[unit_len..];
    }
    if total > i64::MAX as f64 {
        return Err(invalid());
    }
    Ok(Duration::from_nanos(total.round() as u64))
}

/// Formats a duration as Go's `time.Duration.String()` does (`5m0s`, `1h0m0s`, `1.5s`, `500ms`,
/// `0s`), so messages match Flux's byte for byte (docs/api.md).
pub fn format_go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        // Below a second Go picks the largest unit that keeps a non-zero integer part.
        let (scale, unit) = match nanos {
            n if n < 1_000 => (1, "ns"),
            n if n < 1_000_000 => (1_000, "µs"),
            _ => (1_000_000, "ms"),
        };
        return format!("{}{}{unit}", nanos / scale, fraction(nanos % scale, scale));
    }
    let secs = d.as_secs();
    let (hours, minutes, seconds) = (secs / 3600, secs / 60 % 60, secs % 60);
    let seconds = format!(
        "{seconds}{}s",
        fraction(u128::from(d.subsec_nanos()), 1_000_000_000)
    );
    match (hours, minutes) {
        (0, 0) => seconds,
        (0, m) => format!("{m}m{seconds}"),
        (h, m) => format!("{h}h{m}m{seconds}"),
    }
}

/// `.5` for 500 of 1000: the fractional digits without trailing zeros, or nothing.
fn fraction(rest: u128, scale: u128) -> String {
    if rest == 0 {
        return String::new();
    }
    let width = scale.ilog10() as usize;
    let digits = format!("{rest:0width$}");
    format!(".{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_as_go_does() {
        for (nanos, text) in [
            (0u64, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (500_000_000, "500ms"),
            (1_500_000_000, "1.5s"),
            (30_000_000_000, "30s"),
            (300_000_000_000, "5m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (299_123_456_789, "4m59.123456789s"),
            (90_061_000_000_000, "25h1m1s"),
        ] {
            assert_eq!(format_go_duration(Duration::from_nanos(nanos)), text);
        }
    }

    #[test]
    fn go_grammar() {
        for (text, ms) in [
            ("0", 0),
            ("5m", 300_000),
            ("1h30m", 5_400_000),
            ("300ms", 300),
            ("1.5s", 1_500),
            ("+2s", 2_000),
            ("1m0s", 60_000),
        ] {
            assert_eq!(
                parse_go_duration(text),
                Ok(Duration::from_millis(ms)),
                "{text}"
            );
        }
        assert_eq!(
            parse_go_duration("10"),
            Err("time: missing unit in duration \"10\"".into())
        );
        assert_eq!(
            parse_go_duration("3d"),
            Err("time: unknown unit \"d\" in duration \"3d\"".into())
        );
        for bad in ["", "-1s", "s", "1..2s", ".s"] {
            assert!(parse_go_duration(bad).is_err(), "{bad}");
        }
    }
}
