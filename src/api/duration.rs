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

#[cfg(test)]
mod tests {
    use super::*;

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
