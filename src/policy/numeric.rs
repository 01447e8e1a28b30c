//! Numbers as the numerical policy reads them: Go `strconv.ParseFloat` syntax, exact values.
//!
//! Flux compares float64 values, so long timestamps lose precision and tie; docs/compatibility.md says
//! we compare exactly. Accepted syntax is Go's: optional sign, decimal with optional dot and
//! `e` exponent, `_` between digits, hex with a mandatory `p` exponent (`0x1p4`), and
//! case-insensitive `inf`/`infinity`. `NaN` and anything else is "not a number" (skipped).

use std::cmp::Ordering;

/// An exactly represented number: `±0.d₁d₂…dₙ × 10^exp`, or an infinity. Equality is numeric
/// (`1 == 1.0`).
#[derive(Clone, Debug, Default)]
pub struct Number {
    /// The value when it is a plain non-negative integer below 10^19 (timestamps, build
    /// numbers): such pairs compare as integers, without looking at the digits.
    small: Option<u64>,
    class: Class,
    negative: bool,
    /// Decimal digits (0-9) without leading or trailing zeros; empty means zero.
    digits: Vec<u8>,
    exp: i64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Class {
    NegInfinity,
    #[default]
    Finite,
    PosInfinity,
}

/// Hex mantissas and binary exponents beyond these bounds are far outside any float64 and
/// would make the exact conversion costly; such tags are treated as not numbers.
const MAX_HEX_DIGITS: usize = 64;
const MAX_BINARY_EXPONENT: i64 = 4096;

impl Number {
    /// Parses `text`; `None` when it is not a number in Go's syntax (or is NaN).
    pub fn parse(text: &str) -> Option<Number> {
        let mut n = Number::default();
        n.parse_into(text).then_some(n)
    }

    /// Parses into `self`, reusing its buffer; returns false when `text` is not a number.
    pub fn parse_into(&mut self, text: &str) -> bool {
        self.small = small_integer(text.as_bytes());
        self.digits.clear();
        self.class = Class::Finite;
        self.exp = 0;
        let b = text.as_bytes();
        let (negative, rest) = match b.first() {
            Some(b'-') => (true, &b[1..]),
            Some(b'+') => (false, &b[1..]),
            _ => (false, b),
        };
        self.negative = negative;
        if rest.eq_ignore_ascii_case(b"inf") || rest.eq_ignore_ascii_case(b"infinity") {
            self.class = if negative {
                Class::NegInfinity
            } else {
                Class::PosInfinity
            };
            return true;
        }
        if rest.len() > 2 && rest[0] == b'0' && (rest[1] | 0x20) == b'x' {
            self.parse_hex(&rest[2..]) && underscores_ok(b)
        } else {
            self.parse_decimal(rest) && underscores_ok(b)
        }
    }

    fn parse_decimal(&mut self, b: &[u8]) -> bool {
        let mut i = 0;
        let mut seen_digit = false;
        let mut point: Option<i64> = None;
        let mut count: i64 = 0; // digits pushed, including leading zeros skipped below
        let mut leading_zeros: i64 = 0;
        while let Some(&c) = b.get(i) {
            match c {
                b'0'..=b'9' => {
                    seen_digit = true;
                    if self.digits.is_empty() && c == b'0' {
                        leading_zeros += 1;
                    } else {
                        self.digits.push(c - b'0');
                    }
                    count += 1;
                }
                b'_' => {}
                b'.' if point.is_none() => point = Some(count),
                _ => break,
            }
            i += 1;
        }
        if !seen_digit {
            return false;
        }
        let mut exp = 0;
        if let Some(&c) = b.get(i) {
            if c | 0x20 != b'e' {
                return false;
            }
            match parse_exponent(&b[i + 1..]) {
                Some(e) => exp = e,
                None => return false,
            }
        }
        // value = 0.(digits) × 10^(integer digits − leading zeros + exp)
        let integer_digits = point.unwrap_or(count);
        self.exp = integer_digits - leading_zeros + exp;
        self.normalize();
        true
    }

    fn parse_hex(&mut self, b: &[u8]) -> bool {
        let mut i = 0;
        let mut mantissa: Vec<u8> = Vec::new();
        let mut fraction_digits: i64 = 0;
        let mut point = false;
        while let Some(&c) = b.get(i) {
            match c {
                b'0'..=b'9' | b'a'..=b'f' | b'A'..=b'F' => {
                    let d = (c as char).to_digit(16).unwrap_or(0) as u8;
                    if !(mantissa.is_empty() && d == 0) {
                        mantissa.push(d);
                    }
                    if point {
                        fraction_digits += 1;
                    }
                }
                b'_' => {}
                b'.' if !point => point = true,
                _ => break,
            }
            i += 1;
        }
        // Go requires a `p` exponent for hex floats; at least one hex digit before it.
        let digits_seen = b[..i].iter().any(u8::is_ascii_hexdigit);
        if !digits_seen || b.get(i).map(|c| c | 0x20) != Some(b'p') {
            return false;
        }
        let Some(exp) = parse_exponent(&b[i + 1..]) else {
            return false;
        };
        let binary_exp = exp - 4 * fraction_digits;
        if mantissa.len() > MAX_HEX_DIGITS || binary_exp.abs() > MAX_BINARY_EXPONENT {
            return false;
        }
        self.set_from_binary(&mantissa, binary_exp);
        true
    }

    /// Sets the value to `mantissa (hex digits) × 2^binary_exp`, exactly.
    fn set_from_binary(&mut self, mantissa: &[u8], binary_exp: i64) {
        let mut big = BigDecimalInt::default();
        for &d in mantissa {
            big.mul_add(16, u32::from(d));
        }
        let mut decimal_shift = 0;
        if binary_exp >= 0 {
            for _ in 0..binary_exp {
                big.mul_add(2, 0);
            }
        } else {
            // m × 2^-k = m × 5^k × 10^-k
            for _ in 0..-binary_exp {
                big.mul_add(5, 0);
            }
            decimal_shift = binary_exp;
        }
        let digits = big.to_digits();
        self.exp = digits.len() as i64 + decimal_shift;
        self.digits = digits;
        self.normalize();
    }

    fn normalize(&mut self) {
        while self.digits.last() == Some(&0) {
            self.digits.pop();
        }
        if self.digits.is_empty() {
            self.exp = 0;
            self.negative = false; // -0 == 0
        }
    }

    fn rank(&self) -> i8 {
        match self.class {
            Class::NegInfinity => -2,
            Class::PosInfinity => 2,
            Class::Finite if self.digits.is_empty() => 0,
            Class::Finite if self.negative => -1,
            Class::Finite => 1,
        }
    }
}

impl Ord for Number {
    fn cmp(&self, other: &Self) -> Ordering {
        if let (Some(a), Some(b)) = (self.small, other.small) {
            return a.cmp(&b);
        }
        let (a, b) = (self.rank(), other.rank());
        if a != b || a.abs() != 1 {
            return a.cmp(&b);
        }
        let magnitude = self
            .exp
            .cmp(&other.exp)
            .then_with(|| self.digits.cmp(&other.digits));
        if a < 0 {
            magnitude.reverse()
        } else {
            magnitude
        }
    }
}

impl PartialEq for Number {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Number {}

impl PartialOrd for Number {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// `Some(n)` for 1 to 19 ASCII digits (no sign, no separators): always below 10^19.
fn small_integer(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 19 {
        return None;
    }
    b.iter().try_fold(0u64, |n, &c| {
        c.is_ascii_digit().then(|| n * 10 + u64::from(c - b'0'))
    })
}

/// Parses `[+-]digits` (underscores allowed between digits); saturates far beyond any use.
fn parse_exponent(b: &[u8]) -> Option<i64> {
    let (sign, digits) = match b.first() {
        Some(b'-') => (-1, &b[1..]),
        Some(b'+') => (1, &b[1..]),
        _ => (1, b),
    };
    if !digits.first()?.is_ascii_digit() {
        return None;
    }
    let mut e: i64 = 0;
    for &c in digits {
        match c {
            b'0'..=b'9' => e = (e * 10 + i64::from(c - b'0')).min(1_000_000_000),
            b'_' => {}
            _ => return None,
        }
    }
    Some(sign * e)
}

/// Go's `underscoreOK`: an underscore must sit between digits (or after a base prefix).
fn underscores_ok(s: &[u8]) -> bool {
    if !s.contains(&b'_') {
        return true;
    }
    let mut s = s;
    if let Some(b'+' | b'-') = s.first() {
        s = &s[1..];
    }
    let mut saw = b'^';
    let mut i = 0;
    let mut hex = false;
    if s.len() >= 2 && s[0] == b'0' && matches!(s[1] | 0x20, b'b' | b'o' | b'x') {
        i = 2;
        saw = b'0';
        hex = s[1] | 0x20 == b'x';
    }
    while i < s.len() {
        let c = s[i];
        if c.is_ascii_digit() || (hex && c.is_ascii_hexdigit()) {
            saw = b'0';
        } else if c == b'_' {
            if saw != b'0' {
                return false;
            }
            saw = b'_';
        } else {
            if saw == b'_' {
                return false;
            }
            saw = b'!';
        }
        i += 1;
    }
    saw != b'_'
}

/// A non-negative integer in base 10⁹ limbs, little-endian: just enough to convert hex floats.
#[derive(Default)]
struct BigDecimalInt {
    limbs: Vec<u32>,
}

impl BigDecimalInt {
    const BASE: u64 = 1_000_000_000;

    fn mul_add(&mut self, mul: u32, add: u32) {
        let mut carry = u64::from(add);
        for limb in &mut self.limbs {
            let v = u64::from(*limb) * u64::from(mul) + carry;
            *limb = (v % Self::BASE) as u32;
            carry = v / Self::BASE;
        }
        while carry > 0 {
            self.limbs.push((carry % Self::BASE) as u32);
            carry /= Self::BASE;
        }
    }

    fn to_digits(&self) -> Vec<u8> {
        let mut text = String::new();
        for (i, limb) in self.limbs.iter().rev().enumerate() {
            if i == 0 {
                text.push_str(&limb.to_string());
            } else {
                text.push_str(&format!("{limb:09}"));
            }
        }
        let digits: Vec<u8> = text
            .bytes()
            .map(|c| c - b'0')
            .skip_while(|&d| d == 0)
            .collect();
        digits
    }
}

#[cfg(test)]
mod tests;
