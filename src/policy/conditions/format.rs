//! Doubles written as Go writes them for cel-go's `string()`: `%g` (the shortest digits that
//! read back, in exponent form below 1e-4 or from 1e+06) and `strconv.FormatFloat(x, 'f', -1)`.
//! Both start from the shortest round-trip digits, which Rust's `{:e}` gives as Go's
//! `strconv` does (both are the shortest decimal that parses back to the same double).

/// The shortest decimal digits of a finite, non-zero `|x|` and the decimal point's position
/// (`0.d1d2... × 10^point`, Go's `decimal.dp`).
fn digits(x: f64) -> (String, i32) {
    let written = format!("{:e}", x.abs());
    let (mantissa, exponent) = written.split_once('e').unwrap_or((&written, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let digits = digits.trim_end_matches('0').to_string();
    (digits, exponent.parse::<i32>().unwrap_or(0) + 1)
}

/// Go's `%g` of `x` (`+Inf`, `-Inf` and `NaN` as Go writes them).
pub fn go_g(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0");
    }
    let (digits, point) = digits(x);
    let exp = point - 1;
    if !(-4..6).contains(&exp) {
        let (first, rest) = digits.split_at(1);
        let dot = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{first}{dot}e{esign}{:02}", exp.abs());
    }
    format!("{sign}{}", fixed(&digits, point))
}

/// Go's `strconv.FormatFloat(x, 'f', -1, 64)` of a finite `x`.
pub fn shortest_fixed(x: f64) -> String {
    let sign = if x.is_sign_negative() { "-" } else { "" };
    if x == 0.0 {
        return format!("{sign}0");
    }
    let (digits, point) = digits(x);
    format!("{sign}{}", fixed(&digits, point))
}

/// `digits` with the decimal point at `point`, as `fmtF` writes the shortest form.
fn fixed(digits: &str, point: i32) -> String {
    let n = digits.len() as i32;
    if point <= 0 {
        return format!("0.{}{digits}", "0".repeat((-point) as usize));
    }
    if point >= n {
        return format!("{digits}{}", "0".repeat((point - n) as usize));
    }
    let (whole, fraction) = digits.split_at(point as usize);
    format!("{whole}.{fraction}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Go's own outputs (fmt.Sprintf("%g") and FormatFloat 'f' -1), as cel-go's string() gives them.
    #[test]
    fn doubles_read_as_go_writes_them() {
        let g = [
            (1.0, "1"),
            (-2.5, "-2.5"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1e20, "1e+20"),
            (0.1 + 0.2, "0.30000000000000004"),
            (-0.0, "-0"),
            (1e-300, "1e-300"),
            (5e-324, "5e-324"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
            (123.456, "123.456"),
        ];
        for (x, want) in g {
            assert_eq!(go_g(x), want, "{x}");
        }
        assert_eq!(go_g(f64::NAN), "NaN");
        assert_eq!(go_g(f64::INFINITY), "+Inf");
        assert_eq!(go_g(f64::NEG_INFINITY), "-Inf");
        let f = [
            (3600.0, "3600"),
            (0.5, "0.5"),
            (1e21, "1000000000000000000000"),
            (1e-7, "0.0000001"),
            (-1.25, "-1.25"),
        ];
        for (x, want) in f {
            assert_eq!(shortest_fixed(x), want, "{x}");
        }
    }
}
