//! RFC 3161 allows fractions of a second in a TSTInfo's genTime, and Go reads them; RustCrypto's
//! der, which x509-tsp decodes with, reads DER's GeneralizedTime without. The TSTInfo is read
//! again with the whole second; the bytes signed are never changed.

/// `info` (a TSTInfo's DER) with its genTime's fraction of a second dropped (`...SS.fffZ` read
/// as `...SSZ`), when it has one, and whether the fraction is past the second (a digit not
/// zero): then the caller judges the time at the next second too.
pub(super) fn whole_second(info: &[u8]) -> Option<(Vec<u8>, bool)> {
    use x509_cert::der::{Encode, Header, Length, Reader, SliceReader, Tag};
    let mut outer = SliceReader::new(info).ok()?;
    let header = outer.peek_header().ok()?;
    let whole = outer.tlv_bytes().ok()?;
    let contents = &whole[whole.len() - usize::try_from(header.length).ok()?..];
    let mut fields = SliceReader::new(contents).ok()?;
    let mut before = Vec::new();
    // version, policy, messageImprint, serialNumber; then genTime.
    for _ in 0..4 {
        before.extend_from_slice(fields.tlv_bytes().ok()?);
    }
    let time = fields.peek_header().ok()?;
    if time.tag != Tag::GeneralizedTime {
        return None;
    }
    let time_tlv = fields.tlv_bytes().ok()?;
    let value = &time_tlv[time_tlv.len() - usize::try_from(time.length).ok()?..];
    let (seconds, fraction) = value.split_at_checked(14)?;
    let digits = fraction.strip_prefix(b".")?.strip_suffix(b"Z")?;
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let rest = &contents[before.len() + time_tlv.len()..];
    let mut time = vec![0x18, 15];
    time.extend_from_slice(seconds);
    time.push(b'Z');
    let length = Length::try_from(before.len() + time.len() + rest.len()).ok()?;
    let mut out = Header::new(Tag::Sequence, length).ok()?.to_der().ok()?;
    out.extend(before);
    out.extend(time);
    out.extend_from_slice(rest);
    Some((out, digits.iter().any(|d| *d != b'0')))
}
