//! The conversions `int()`, `uint()`, `double()`, `string()`, `bytes()`, `timestamp()` and
//! `duration()` as cel-go makes them: Go's `strconv` grammars for text, its checked ranges
//! for numbers (`doubleToInt64Checked`...), `%g` for doubles. A text Go would read in a form
//! this does not (a hex float, `1_000`) is an error here, never another number.

use super::ast::Func;
use super::format::go_g;
use super::time;
use super::value::Value;

/// 2^63 and 2^64 as doubles.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;
const TWO_64: f64 = 18_446_744_073_709_551_616.0;

pub fn convert(func: &Func, v: Value) -> Result<Value, String> {
    use Value as V;
    let cannot = |v: &Value| {
        Err(format!(
            "type conversion error from '{}' to '{}'",
            v.kind(),
            func.name()
        ))
    };
    Ok(match (func, &v) {
        (Func::Int, V::Int(_)) | (Func::Uint, V::Uint(_)) | (Func::Double, V::Double(_)) => v,
        (Func::String, V::String(_)) | (Func::Bytes, V::Bytes(_)) => v,
        (Func::Timestamp, V::Timestamp(_)) | (Func::Duration, V::Duration(_)) => v,
        (Func::Int, V::Uint(u)) => V::Int(i64::try_from(*u).map_err(|_| "int overflow")?),
        (Func::Int, V::Double(d)) => {
            if !d.is_finite() || *d <= -TWO_63 || *d >= TWO_63 {
                return Err("int overflow".into());
            }
            V::Int(*d as i64)
        }
        (Func::Int, V::String(s)) => V::Int(parse_int(s).ok_or_else(|| invalid(s, "int"))?),
        (Func::Int, V::Timestamp(t)) => V::Int(t.seconds),
        (Func::Uint, V::Int(i)) => V::Uint(u64::try_from(*i).map_err(|_| "uint overflow")?),
        (Func::Uint, V::Double(d)) => {
            if !d.is_finite() || *d < 0.0 || *d >= TWO_64 {
                return Err("uint overflow".into());
            }
            V::Uint(*d as u64)
        }
        (Func::Uint, V::String(s)) => V::Uint(parse_uint(s).ok_or_else(|| invalid(s, "uint"))?),
        (Func::Double, V::Int(i)) => V::Double(*i as f64),
        (Func::Double, V::Uint(u)) => V::Double(*u as f64),
        (Func::Double, V::String(s)) => {
            V::Double(parse_float(s).ok_or_else(|| invalid(s, "double"))?)
        }
        (Func::String, V::Int(i)) => V::string(&i.to_string()),
        (Func::String, V::Uint(u)) => V::string(&u.to_string()),
        (Func::String, V::Double(d)) => V::string(&go_g(*d)),
        (Func::String, V::Bool(b)) => V::string(if *b { "true" } else { "false" }),
        (Func::String, V::Bytes(b)) => V::string(
            std::str::from_utf8(b)
                .map_err(|_| "string() of bytes that are not UTF-8 is not supported")?,
        ),
        (Func::String, V::Timestamp(t)) => V::string(&time::format_timestamp(*t)),
        (Func::String, V::Duration(d)) => V::string(&time::format_duration(*d)),
        (Func::Bytes, V::String(s)) => V::Bytes(s.as_bytes().into()),
        (Func::Timestamp, V::String(s)) => V::Timestamp(time::parse_timestamp(s)?),
        (Func::Duration, V::String(s)) => V::Duration(time::parse_duration(s)?),
        _ => return cannot(&v),
    })
}

fn invalid(s: &str, to: &str) -> String {
    let shown: String = s.chars().take(64).collect();
    format!("type conversion error from 'string' to '{to}' ({shown:?})")
}

/// Go's `strconv.ParseInt(s, 10, 64)`: an optional sign, decimal digits.
fn parse_int(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseUint(s, 10, 64)`: decimal digits, no sign.
fn parse_uint(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Go's `strconv.ParseFloat(s, 64)` on decimal text and the words for infinity and NaN;
/// a finite text past the double range is Go's range error.
fn parse_float(s: &str) -> Option<f64> {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s);
    let word = matches!(
        body.to_ascii_lowercase().as_str(),
        "inf" | "infinity" | "nan"
    );
    let b = body.as_bytes();
    let mantissa = b
        .iter()
        .take_while(|c| c.is_ascii_digit() || **c == b'.')
        .count();
    let dots = b[..mantissa].iter().filter(|c| **c == b'.').count();
    let digits = mantissa - dots;
    let exponent = &body[mantissa..];
    let exponent_ok = exponent.is_empty()
        || exponent
            .strip_prefix(['e', 'E'])
            .map(|e| e.strip_prefix(['+', '-']).unwrap_or(e))
            .is_some_and(|e| !e.is_empty() && e.bytes().all(|c| c.is_ascii_digit()));
    let decimal = dots <= 1 && digits > 0 && exponent_ok;
    if !word && !decimal {
        return None;
    }
    let value: f64 = s.parse().ok()?;
    (word || value.is_finite()).then_some(value)
}
