//! Timestamps and durations as cel-go reads, writes and computes them: RFC 3339 as cel-go's
//! strict check and Go's `time.Parse` accept it (within years 1 to 9999), Go's
//! `time.ParseDuration` grammar, `time.RFC3339Nano` and `strconv.FormatFloat` for `string()`,
//! the accessors in UTC (the API server's default time zone), overflow as an error.

use std::fmt::Write;

/// The seconds of 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z: cel-go's range.
pub const MIN_UNIX: i64 = -62_135_596_800;
pub const MAX_UNIX: i64 = 253_402_300_799;
const NANOS: i64 = 1_000_000_000;

/// An instant within [`MIN_UNIX`]..=[`MAX_UNIX`], and the offset it was written with (Go's
/// time keeps it: `string()` writes it back; comparisons and the accessors ignore it).
#[derive(Clone, Copy, Debug)]
pub struct Timestamp {
    pub seconds: i64,
    pub nanos: u32,
    /// Seconds east of UTC.
    pub offset: i32,
}

impl PartialEq for Timestamp {
    fn eq(&self, other: &Self) -> bool {
        (self.seconds, self.nanos) == (other.seconds, other.nanos)
    }
}

impl Eq for Timestamp {}

impl PartialOrd for Timestamp {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Timestamp {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        (self.seconds, self.nanos).cmp(&(other.seconds, other.nanos))
    }
}

impl Timestamp {
    pub fn new(seconds: i64, nanos: u32) -> Result<Timestamp, String> {
        match (MIN_UNIX..=MAX_UNIX).contains(&seconds) {
            true => Ok(Timestamp {
                seconds,
                nanos,
                offset: 0,
            }),
            false => Err("timestamp out of range".into()),
        }
    }

    /// `self + nanoseconds`, within range.
    pub fn add(self, nanoseconds: i64) -> Result<Timestamp, String> {
        let total = i128::from(self.seconds) * i128::from(NANOS)
            + i128::from(self.nanos)
            + i128::from(nanoseconds);
        let seconds = total.div_euclid(i128::from(NANOS));
        let seconds = i64::try_from(seconds).map_err(|_| "timestamp out of range".to_string())?;
        let t = Timestamp::new(seconds, total.rem_euclid(i128::from(NANOS)) as u32)?;
        Ok(Timestamp {
            offset: self.offset,
            ..t
        })
    }

    /// `self - other` in nanoseconds, an error past Go's `time.Duration`.
    pub fn since(self, other: Timestamp) -> Result<i64, String> {
        let nanos = |t: Timestamp| i128::from(t.seconds) * i128::from(NANOS) + i128::from(t.nanos);
        i64::try_from(nanos(self) - nanos(other)).map_err(|_| "duration out of range".to_string())
    }
}

/// Days since 1970-01-01 of a civil date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date of a day since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `timestamp(s)`: cel-go's strict RFC 3339 (an upper-case `T` and `Z`, as Go's `time.Parse`
/// wants them, an offset `±hh:mm`, a fraction of at least one digit, cut to nine as Go cuts
/// it), then Go's field ranges.
pub fn parse_timestamp(s: &str) -> Result<Timestamp, String> {
    let bad = || format!("invalid RFC 3339 timestamp {s:?}");
    let b = s.as_bytes();
    let num = |from: usize, to: usize| -> Option<i64> {
        let part = b.get(from..to)?;
        part.iter()
            .all(u8::is_ascii_digit)
            .then(|| part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0')))
    };
    let at = |i: usize, c: u8| b.get(i) == Some(&c);
    let fields = (|| {
        let ok = at(4, b'-') && at(7, b'-') && at(10, b'T') && at(13, b':') && at(16, b':');
        ok.then_some(())?;
        Some([
            num(0, 4)?,
            num(5, 7)?,
            num(8, 10)?,
            num(11, 13)?,
            num(14, 16)?,
            num(17, 19)?,
        ])
    })()
    .ok_or_else(bad)?;
    let [year, month, day, hour, minute, second] = fields;
    let mut rest = &s[19..];
    let mut nanos = 0u32;
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return Err(bad());
        }
        let scaled = format!("{:0<9}", &fraction[..digits.min(9)]);
        nanos = scaled.parse().map_err(|_| bad())?;
        rest = &fraction[digits..];
    }
    let offset = match rest.as_bytes() {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [h1, h2, m1, m2];
            if !digits.iter().all(|d| d.is_ascii_digit()) {
                return Err(bad());
            }
            let hours = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let minutes = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            if hours > 23 || minutes > 59 {
                return Err(bad());
            }
            let offset = hours * 3600 + minutes * 60;
            if *sign == b'-' {
                -offset
            } else {
                offset
            }
        }
        _ => return Err(bad()),
    };
    let in_range = (1..=12).contains(&month)
        && day >= 1
        && day <= days_in_month(year, month)
        && hour <= 23
        && minute <= 59
        && second <= 59;
    if !in_range {
        return Err(bad());
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Ok(Timestamp {
        offset: offset as i32,
        ..Timestamp::new(seconds, nanos)?
    })
}

/// `string(t)`: Go's `time.RFC3339Nano` at the offset it was written with (the fraction
/// without trailing zeros; `Z` for UTC).
pub fn format_timestamp(t: Timestamp) -> String {
    let local = t.seconds + i64::from(t.offset);
    let (y, m, d) = civil_from_days(local.div_euclid(86_400));
    let s = local.rem_euclid(86_400);
    let mut out = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        s / 3600,
        s / 60 % 60,
        s % 60
    );
    if t.nanos > 0 {
        let fraction = format!("{:09}", t.nanos);
        let _ = write!(out, ".{}", fraction.trim_end_matches('0'));
    }
    match t.offset {
        0 => out.push('Z'),
        offset => {
            let sign = if offset < 0 { '-' } else { '+' };
            let minutes = offset.abs() / 60;
            let _ = write!(out, "{sign}{:02}:{:02}", minutes / 60, minutes % 60);
        }
    }
    out
}

/// A timestamp accessor in UTC, as cel-go names it.
pub fn accessor(name: &str, t: Timestamp) -> Option<i64> {
    let days = t.seconds.div_euclid(86_400);
    let s = t.seconds.rem_euclid(86_400);
    let (y, m, d) = civil_from_days(days);
    Some(match name {
        "getFullYear" => y,
        "getMonth" => m - 1,
        "getDayOfYear" => days - days_from_civil(y, 1, 1),
        "getDayOfMonth" => d - 1,
        "getDate" => d,
        // 1970-01-01 was a Thursday (4).
        "getDayOfWeek" => (days + 4).rem_euclid(7),
        "getHours" => s / 3600,
        "getMinutes" => s / 60 % 60,
        "getSeconds" => s % 60,
        "getMilliseconds" => i64::from(t.nanos / 1_000_000),
        _ => return None,
    })
}

/// A duration accessor, as cel-go computes it: Go's `Hours()`, `Minutes()` or `Seconds()` (a
/// double: the whole units plus the rest as a fraction) truncated, or `Milliseconds()`.
pub fn duration_accessor(name: &str, nanos: i64) -> Option<i64> {
    let in_units = |unit: i64| (nanos / unit) as f64 + (nanos % unit) as f64 / unit as f64;
    Some(match name {
        "getHours" => in_units(3600 * NANOS) as i64,
        "getMinutes" => in_units(60 * NANOS) as i64,
        "getSeconds" => in_units(NANOS) as i64,
        "getMilliseconds" => nanos / 1_000_000,
        _ => return None,
    })
}

/// `string(d)`: Go's `strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"`.
pub fn format_duration(nanos: i64) -> String {
    // Go's Seconds(): whole seconds plus the fraction, as two doubles added.
    let seconds = (nanos / NANOS) as f64 + (nanos % NANOS) as f64 / NANOS as f64;
    format!("{}s", super::format::shortest_fixed(seconds))
}

/// Go's `time.ParseDuration`: `[-+]?([0-9]*(\.[0-9]*)?[a-z]+)+` or `0`, the units ns, us,
/// µs, μs, ms, s, m and h, an error past the range of an int64 of nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let bad = || format!("time: invalid duration {text:?}");
    let mut s = text;
    let mut negative = false;
    if let Some(rest) = s.strip_prefix('-') {
        (negative, s) = (true, rest);
    } else if let Some(rest) = s.strip_prefix('+') {
        s = rest;
    }
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return Err(bad());
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        let (value, rest) = duration_term(s).ok_or_else(bad)?;
        s = rest;
        total = total
            .checked_add(value)
            .filter(|t| *t <= 1 << 63)
            .ok_or_else(bad)?;
    }
    match negative {
        true => Ok((total as i64).wrapping_neg()),
        false => i64::try_from(total).map_err(|_| bad()),
    }
}

/// One `[0-9]*(\.[0-9]*)?unit` of a duration, in nanoseconds, and what follows it.
fn duration_term(s: &str) -> Option<(u64, &str)> {
    let b = s.as_bytes();
    if !(b[0] == b'.' || b[0].is_ascii_digit()) {
        return None;
    }
    let whole_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
    let mut whole: u64 = 0;
    for d in &b[..whole_len] {
        // Go's leadingInt: an overflow of 1<<63 is an error.
        whole = whole.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
        if whole > 1 << 63 {
            return None;
        }
    }
    let mut rest = &s[whole_len..];
    let (mut fraction, mut scale, mut fraction_len) = (0u64, 1f64, 0usize);
    if let Some(after) = rest.strip_prefix('.') {
        fraction_len = after.bytes().take_while(u8::is_ascii_digit).count();
        let mut overflow = false;
        for d in after[..fraction_len].bytes() {
            // Go's leadingFraction: digits past what fits are read and ignored.
            if overflow || fraction > (i64::MAX as u64 - 1) / 10 {
                overflow = true;
                continue;
            }
            let y = fraction * 10 + u64::from(d - b'0');
            if y > 1 << 63 {
                overflow = true;
                continue;
            }
            fraction = y;
            scale *= 10.0;
        }
        rest = &after[fraction_len..];
    }
    if whole_len == 0 && fraction_len == 0 {
        return None;
    }
    let unit_len = rest
        .bytes()
        .take_while(|c| !(*c == b'.' || c.is_ascii_digit()))
        .count();
    let unit: u64 = match &rest[..unit_len] {
        "ns" => 1,
        "us" | "µs" | "μs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    };
    if whole > (1 << 63) / unit {
        return None;
    }
    let mut value = whole * unit;
    if fraction > 0 {
        value += (fraction as f64 * (unit as f64 / scale)) as u64;
        if value > 1 << 63 {
            return None;
        }
    }
    Some((value, &rest[unit_len..]))
}

#[cfg(test)]
mod tests;
