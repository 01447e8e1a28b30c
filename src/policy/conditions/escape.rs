//! The escapes of CEL's string and bytes literals: `\\ \' \" \` \? \a \b \f \n \r \t \v`,
//! `\xHH`, octal `\[0-3][0-7][0-7]`, and in strings `\uHHHH` and `\UHHHHHHHH` (no surrogates).
//! In a string, `\x` and octal escapes are code points up to U+00FF; in bytes, bytes.

/// Reads the escape after a backslash at `src[*i..]` into `out`, advancing `i`.
pub fn escape(src: &str, i: &mut usize, bytes: bool, out: &mut Vec<u8>) -> Result<(), String> {
    let b = src.as_bytes();
    let c = *b.get(*i).ok_or("an unterminated escape")?;
    let simple = match c {
        b'\\' => Some(b'\\'),
        b'\'' => Some(b'\''),
        b'"' => Some(b'"'),
        b'`' => Some(b'`'),
        b'?' => Some(b'?'),
        b'a' => Some(0x07),
        b'b' => Some(0x08),
        b'f' => Some(0x0c),
        b'n' => Some(b'\n'),
        b'r' => Some(b'\r'),
        b't' => Some(b'\t'),
        b'v' => Some(0x0b),
        _ => None,
    };
    if let Some(byte) = simple {
        out.push(byte);
        *i += 1;
        return Ok(());
    }
    let (value, len) = match c {
        b'x' | b'X' => (hex(src, *i + 1, 2)?, 3),
        b'u' if !bytes => (hex(src, *i + 1, 4)?, 5),
        b'U' if !bytes => (hex(src, *i + 1, 8)?, 9),
        b'0'..=b'3' => {
            let digits = b.get(*i..*i + 3).ok_or("an invalid octal escape")?;
            if !digits.iter().all(|d| (b'0'..=b'7').contains(d)) {
                return Err("an invalid octal escape".into());
            }
            let value = digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0'));
            (value, 3)
        }
        _ => return Err(format!("an invalid escape '\\{}'", c as char)),
    };
    *i += len;
    if bytes {
        out.push(u8::try_from(value).map_err(|_| "an escape over a byte")?);
        return Ok(());
    }
    let ch = char::from_u32(value).ok_or("an escape that is not a Unicode scalar value")?;
    let mut buf = [0; 4];
    out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    Ok(())
}

fn hex(src: &str, from: usize, len: usize) -> Result<u32, String> {
    let digits = src.get(from..from + len).ok_or("a short hex escape")?;
    if !digits.bytes().all(|d| d.is_ascii_hexdigit()) {
        return Err("an invalid hex escape".into());
    }
    u32::from_str_radix(digits, 16).map_err(|e| e.to_string())
}
