//! Distinguished names as notation-go reads them (RFC 4514, through its LDAP DN parser): a
//! trusted identity's `x509.subject:` text, and a signing certificate's subject, each as
//! attribute -> value, refusing multi-valued RDNs (`O=a+OU=b`) and an attribute given twice.
//!
//! Before, both were the subject's text split at every comma: a leaf from the trusted CA whose
//! subject was `O=Attacker, CN=a\, O=Victim`, or one with two `O` attributes, matched
//! `x509.subject: C=US, ST=WA, O=Victim`.

use std::collections::BTreeMap;
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::{Tag, Tagged};

/// Attribute -> value.
pub(super) type Dn = BTreeMap<String, String>;

/// The attribute types notation's DNs use, by OID, with their RFC 4514 short names.
const NAMES: [(&str, &str); 10] = [
    ("2.5.4.3", "CN"),
    ("2.5.4.5", "SERIALNUMBER"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "STREET"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("2.5.4.17", "POSTALCODE"),
    ("1.2.840.113549.1.9.1", "EMAILADDRESS"),
];

/// A certificate's subject.
pub(super) fn of_name(name: &x509_cert::name::Name) -> Result<Dn, String> {
    let mut dn = Dn::new();
    for rdn in name.0.iter() {
        let attributes = rdn.0.as_slice();
        if attributes.len() != 1 {
            return Err(format!(
                "the signing certificate's subject '{name}' has a multi-valued RDN, which \
                 notation does not support"
            ));
        }
        let attribute = &attributes[0];
        let key = short_name(&attribute.oid);
        let value = match attribute.value.tag() {
            Tag::Utf8String | Tag::PrintableString | Tag::Ia5String | Tag::TeletexString => {
                String::from_utf8_lossy(attribute.value.value()).into_owned()
            }
            _ => {
                return Err(format!(
                    "the signing certificate's subject '{name}' has a {key} that is not a string"
                ))
            }
        };
        if dn.insert(key.clone(), value).is_some() {
            return Err(format!(
                "the signing certificate's subject '{name}' has {key} twice; a DN may have each \
                 attribute once"
            ));
        }
    }
    Ok(dn)
}

fn short_name(oid: &ObjectIdentifier) -> String {
    let text = oid.to_string();
    NAMES
        .iter()
        .find(|(dotted, _)| *dotted == text)
        .map_or(text, |(_, name)| name.to_string())
}

/// A DN's text by RFC 4514: `C=US, ST=WA, O=Example\, Inc., CN=x`. Escapes (`\,`, `\+`, `\\`,
/// `\"`, hex pairs) are read; multi-valued RDNs and repeated attributes are refused.
pub(super) fn parse(text: &str) -> Result<Dn, String> {
    let refuse = |why: &str| Err(format!("the distinguished name '{text}' {why}"));
    let mut dn = Dn::new();
    let mut chars = text.trim().chars().peekable();
    loop {
        let mut key = String::new();
        for c in chars.by_ref() {
            if c == '=' {
                break;
            }
            key.push(c);
        }
        let key = key.trim().to_ascii_uppercase();
        if key.is_empty() {
            return refuse("has an attribute without a type");
        }
        let mut value = String::new();
        let mut ended_by = None;
        while let Some(c) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some(h) if h.is_ascii_hexdigit() => {
                        let l = chars.next().filter(char::is_ascii_hexdigit);
                        let Some(l) = l else {
                            return refuse("has a bad hex escape");
                        };
                        let byte = u8::from_str_radix(&format!("{h}{l}"), 16).unwrap_or(0);
                        value.push(char::from(byte));
                    }
                    Some(escaped) => value.push(escaped),
                    None => return refuse("ends in an escape"),
                },
                ',' | ';' | '+' => {
                    ended_by = Some(c);
                    break;
                }
                c => value.push(c),
            }
        }
        if ended_by == Some('+') {
            return refuse("has a multi-valued RDN, which notation does not support");
        }
        let value = value.trim().to_string();
        if dn.insert(key.clone(), value).is_some() {
            return refuse(&format!(
                "has {key} twice; a DN may have each attribute once"
            ));
        }
        if ended_by.is_none() {
            return Ok(dn);
        }
    }
}

/// Whether every attribute `want` names has the same value in `got`.
pub(super) fn is_subset(want: &Dn, got: &Dn) -> bool {
    want.iter().all(|(k, v)| got.get(k) == Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dn(pairs: &[(&str, &str)]) -> Dn {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn escaped_commas_are_part_of_the_value() {
        let got = parse(r"O=Attacker, CN=a\, O=Victim").unwrap();
        assert_eq!(got, dn(&[("O", "Attacker"), ("CN", "a, O=Victim")]));
        let want = parse("C=US, ST=WA, O=Victim").unwrap();
        assert!(!is_subset(&want, &got));
        assert_eq!(parse(r"CN=a\2Cb").unwrap(), dn(&[("CN", "a,b")]));
        assert_eq!(
            parse("c=US;o=Example").unwrap(),
            dn(&[("C", "US"), ("O", "Example")])
        );
    }

    #[test]
    fn repeated_and_multi_valued_attributes_are_refused() {
        let err = parse("O=Victim, O=Attacker").unwrap_err();
        assert!(err.contains("has O twice"), "{err}");
        let err = parse("O=Victim+OU=x").unwrap_err();
        assert!(err.contains("multi-valued RDN"), "{err}");
        assert!(parse("=x").is_err());
        assert!(parse(r"CN=x\").is_err());
    }

    /// A certificate's subject is read from its attributes, by their short names.
    #[test]
    fn a_certificates_subject_is_read_attribute_by_attribute() {
        use x509_cert::der::Decode;
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.distinguished_name = rcgen::DistinguishedName::new();
        for (kind, value) in [
            (rcgen::DnType::CountryName, "US"),
            (rcgen::DnType::StateOrProvinceName, "WA"),
            (rcgen::DnType::OrganizationName, "Victim"),
            (rcgen::DnType::CommonName, "a, O=Attacker"),
        ] {
            params.distinguished_name.push(kind, value);
        }
        let cert = params
            .self_signed(&rcgen::KeyPair::generate().unwrap())
            .unwrap();
        let parsed = x509_cert::Certificate::from_der(cert.der()).unwrap();
        let subject = of_name(&parsed.tbs_certificate.subject).unwrap();
        assert_eq!(
            subject,
            dn(&[
                ("C", "US"),
                ("ST", "WA"),
                ("O", "Victim"),
                ("CN", "a, O=Attacker")
            ])
        );
        assert!(!is_subset(&parse("O=Attacker").unwrap(), &subject));
    }

    #[test]
    fn a_subset_matches_exact_values() {
        let got = dn(&[("C", "US"), ("ST", "WA"), ("O", "Victim"), ("CN", "x")]);
        assert!(is_subset(&parse("C=US, ST=WA, O=Victim").unwrap(), &got));
        assert!(!is_subset(&parse("C=US, ST=WA, O=Victi").unwrap(), &got));
    }
}
