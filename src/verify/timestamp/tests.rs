//! RFC 3161 responses made here (`made.rs`), as a timestamp authority makes them (a TSTInfo over
//! the signature's hash, in CMS signed data signed by the authority's time-stamping leaf), each
//! with one thing spoiled. The real timestamp-server's are judged in `tlog/v2/tests.rs` and
//! `signatures::rekor_v2`.

pub(in crate::verify) mod made;

use super::*;
use crate::verify::path::Budget;
use made::{eku, hash_oid, response, Key, Made, Tsa, AT, SIGNATURE};
use rcgen::{CertificateParams, CertifiedIssuer, CustomExtension, KeyPair};

fn verified(tsa: &Tsa, key: Key, made: Made, leaf: bool) -> Result<i64, String> {
    verify(
        &[tsa.authority(leaf)],
        &response(tsa, key, made),
        SIGNATURE,
        &Budget::default(),
    )
    .map(|(times, _)| times[0])
}

#[test]
fn every_key_and_hash_an_authority_signs_with_verifies() {
    let cases = [
        (Key::P256, Hash::Sha256),
        (Key::P256, Hash::Sha384),
        (Key::P384, Hash::Sha384),
        (Key::P384, Hash::Sha256),
        // A digest longer than the curve, truncated as Go verifies it.
        (Key::P256, Hash::Sha512),
        (Key::P384, Hash::Sha512),
        (Key::Rsa, Hash::Sha256),
        (Key::Rsa, Hash::Sha384),
        (Key::Rsa, Hash::Sha512),
    ];
    for (key, digest) in cases {
        let tsa = Tsa::good(key);
        let made = Made {
            digest,
            ..Made::default()
        };
        assert_eq!(verified(&tsa, key, made, true), Ok(AT as i64), "{digest:?}");
        // Its certificate in the token instead of the root's: the same.
        let carried = Made {
            certificates: true,
            ..made
        };
        assert_eq!(verified(&tsa, key, carried, false), Ok(AT as i64));
        // Both: the token's is the root's.
        assert_eq!(verified(&tsa, key, carried, true), Ok(AT as i64));
        // A signature made with another hash than the signer names does not verify.
        let other = match digest {
            Hash::Sha256 => Hash::Sha384,
            _ => Hash::Sha256,
        };
        let mismatched = response(
            &tsa,
            key,
            Made {
                digest: other,
                ..made
            },
        );
        let mut named = mismatched.clone();
        // The signer's digest algorithm changed after signing: its OID's last byte.
        let from = hash_oid(other).as_bytes().last().copied().unwrap() - b'0';
        let to = hash_oid(digest).as_bytes().last().copied().unwrap() - b'0';
        if let Some(at) = named.windows(11).rposition(|w| {
            w[..10] == [0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02] && w[10] == from
        }) {
            named[at + 10] = to;
        }
        assert!(verify(
            &[tsa.authority(true)],
            &named,
            SIGNATURE,
            &Budget::default()
        )
        .is_err());
    }
    // Without signed attributes the signature is over the TSTInfo itself.
    let tsa = Tsa::good(Key::P256);
    let bare = Made {
        signed_attributes: false,
        ..Made::default()
    };
    assert_eq!(verified(&tsa, Key::P256, bare, true), Ok(AT as i64));
}

#[test]
fn the_response_and_its_token_are_refused_as_sigstore_refuses_them() {
    let tsa = Tsa::good(Key::P256);
    let refused = |made: Made| verified(&tsa, Key::P256, made, true).unwrap_err();
    let granted_with_mods = Made {
        status: 1,
        ..Made::default()
    };
    assert!(verified(&tsa, Key::P256, granted_with_mods, true).is_ok());
    let err = refused(Made {
        status: 2,
        ..Made::default()
    });
    assert_eq!(err, "a timestamp's response was not granted (status 2)");
    let err = refused(Made {
        sha1: true,
        ..Made::default()
    });
    assert_eq!(err, "its hash is SHA-1, which is too weak");
    let err = refused(Made {
        other_digest: true,
        ..Made::default()
    });
    assert_eq!(
        err,
        "a timestamp's signed attributes are of another TSTInfo"
    );
    let err = refused(Made {
        signers: 2,
        ..Made::default()
    });
    assert_eq!(err, "a timestamp's token has not exactly one signer");
    // Of another signature.
    let answer = response(&tsa, Key::P256, Made::default());
    let err = verify(
        &[tsa.authority(true)],
        &answer,
        b"another",
        &Budget::default(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        "a timestamp is of another signature (its message imprint)"
    );
    // Another authority's leaf named in the root.
    let other = Tsa::good(Key::P256);
    let mut named = tsa.authority(true);
    named.leaf = Some(other.leaf.clone());
    let carried = response(
        &tsa,
        Key::P256,
        Made {
            certificates: true,
            ..Made::default()
        },
    );
    let err = verify(&[named], &carried, SIGNATURE, &Budget::default()).unwrap_err();
    assert!(
        err.ends_with("the token's signer is not the authority's certificate"),
        "{err}"
    );
    assert!(verify(&[], &answer, SIGNATURE, &Budget::default()).is_err());
    // The signer is named by issuer and serial: a certificate of the same issuer and key under
    // another serial is not it.
    let twin = Made {
        certificates: true,
        twin: true,
        ..Made::default()
    };
    // Whether the authority names its leaf or not: pkcs7 finds no certificate for the signer.
    for names_leaf in [false, true] {
        let err = verified(&tsa, Key::P256, twin, names_leaf).unwrap_err();
        let want = "the token's signer is not among the certificates it carries";
        assert!(err.ends_with(want), "{names_leaf}: {err}");
    }
}

/// sigstore-go counts one timestamp per authority (by its URI): a second from the same one,
/// here at a time the signing certificate was not valid, is not read.
#[test]
fn a_second_timestamp_of_one_authority_is_not_counted() {
    use crate::reference::ImageReference;
    use crate::verify::{Signed, TrustedKeys, TRUSTED_ROOT};
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD;
    let mut bundle: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/rekor-v2/bundle.json")).unwrap();
    let mut root: serde_json::Value =
        serde_json::from_str(include_str!("../fixtures/rekor-v2/trusted_root.json")).unwrap();
    let signature = b64
        .decode(
            bundle["dsseEnvelope"]["signatures"][0]["sig"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
    // A second authority under the same URI, its timestamp at 2026-01-01, before the leaf.
    let tsa = Tsa::good(Key::P256);
    let second = made::response_over(&tsa, Key::P256, Made::default(), &signature);
    let uri = root["timestampAuthorities"][0]["uri"].clone();
    root["timestampAuthorities"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
        "uri": uri, "certChain": {"certificates": [
            {"rawBytes": b64.encode(&tsa.leaf)}, {"rawBytes": b64.encode(tsa.root.der())}]},
        "validFor": {"start": "2020-01-01T00:00:00Z"}}));
    let stamps =
        &mut bundle["verificationMaterial"]["timestampVerificationData"]["rfc3161Timestamps"];
    stamps
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"signedTimestamp": b64.encode(second)}));
    let data = std::collections::BTreeMap::from([(
        TRUSTED_ROOT.to_string(),
        root.to_string().into_bytes(),
    )]);
    let identity = [(
        "^https://token\\.actions\\.githubusercontent\\.com$".to_string(),
        "^dev@example\\.com$".to_string(),
    )];
    let trust = TrustedKeys::from_secret(&data, &identity, true).unwrap();
    let image = ImageReference::parse("registry.example/team/app", false).unwrap();
    let digest = "sha256:6f98f6a265c80a24252daa443bad61ee68dce67eb5f1ee79a273ae73922500e0";
    let signed = [Signed::Bundle(bundle.to_string().into_bytes())];
    let verdict = trust.verify(&signed, &image, digest, std::time::SystemTime::now());
    assert!(verdict.is_ok(), "{verdict:?}");
}

#[test]
fn the_signers_certificate_is_for_time_stamping_alone() {
    let refused = |purposes: &[&str], critical: bool| {
        let tsa = Tsa::new(Key::P256, purposes, critical);
        verified(&tsa, Key::P256, Made::default(), true).unwrap_err()
    };
    let err = refused(&[TIME_STAMPING_OID], false);
    assert!(
        err.ends_with("does not mark its extended key usage critical"),
        "{err}"
    );
    let err = refused(&[TIME_STAMPING_OID, "1.3.6.1.5.5.7.3.3"], true);
    assert!(
        err.ends_with("has usages other than time stamping alone"),
        "{err}"
    );
    // Code signing only: no chain for time stamping at all.
    let err = refused(&["1.3.6.1.5.5.7.3.3"], true);
    assert!(err.contains("does not chain to it"), "{err}");
    // An intermediate that lists usages must list time stamping or any, as Go's x509 and
    // timestamp-authority read it; one without the extension allows any.
    for (purposes, allowed) in [
        (vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth], false),
        (vec![rcgen::ExtendedKeyUsagePurpose::TimeStamping], true),
        (vec![rcgen::ExtendedKeyUsagePurpose::Any], true),
        (vec![], true),
    ] {
        let mut tsa = Tsa::good(Key::P256);
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.extended_key_usages = purposes.clone();
        // A name of its own: rcgen's default is the root's too.
        params.distinguished_name = rcgen::DistinguishedName::new();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "intermediate");
        let intermediate =
            CertifiedIssuer::signed_by(params, KeyPair::generate().unwrap(), &tsa.root).unwrap();
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.not_before = rcgen::date_time_ymd(2025, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2027, 1, 1);
        let mut usage =
            CustomExtension::from_oid_content(&[2, 5, 29, 37], eku(&[TIME_STAMPING_OID]));
        usage.set_criticality(true);
        leaf.custom_extensions = vec![usage];
        tsa.leaf = leaf
            .signed_by(&tsa.key, &intermediate)
            .unwrap()
            .der()
            .to_vec();
        let mut authority = tsa.authority(true);
        authority.intermediates = std::sync::Arc::new(Pool::new([intermediate.der().as_ref()]));
        let response = response(&tsa, Key::P256, Made::default());
        let verdict = verify(&[authority], &response, SIGNATURE, &Budget::default());
        match allowed {
            true => assert_eq!(verdict.map(|v| v.0), Ok(vec![AT as i64])),
            false => {
                let err = verdict.unwrap_err();
                assert!(err.contains("does not chain to it"), "{purposes:?}: {err}");
            }
        }
    }
}

/// An authority whose root certificate expired before the timestamp's time vouches for
/// nothing then, as Go's x509 checks a root for sigstore-go (webpki takes an anchor as a bare
/// name and key).
#[test]
fn an_expired_root_certificate_vouches_for_no_timestamp() {
    let tsa = Tsa::with_root_until(Key::P256, (2025, 6, 1));
    let err = verified(&tsa, Key::P256, Made::default(), true).unwrap_err();
    assert!(err.contains("the trusted root's certificate"), "{err}");
    assert!(err.contains("is not valid at"), "{err}");
    let lasting = Tsa::with_root_until(Key::P256, (2030, 1, 1));
    assert_eq!(
        verified(&lasting, Key::P256, Made::default(), true),
        Ok(AT as i64)
    );
}

#[test]
fn a_signing_time_outside_the_signers_validity_is_refused_as_pkcs7_refuses_it() {
    // The leaf is valid from 2025-01-01 to 2027-01-01, bounds included.
    let (from, to) = (1_735_689_600, 1_798_761_600);
    let tsa = Tsa::good(Key::P256);
    let at = |signing_time: u64| {
        let made = Made {
            signing_time: Some(signing_time),
            ..Made::default()
        };
        (
            verified(&tsa, Key::P256, made, true),
            verified(
                &tsa,
                Key::P256,
                Made {
                    certificates: true,
                    ..made
                },
                false,
            ),
        )
    };
    for inside in [from, AT, to] {
        assert_eq!(at(inside), (Ok(AT as i64), Ok(AT as i64)), "{inside}");
    }
    for outside in [from - 1, to + 1] {
        let (named, carried) = at(outside);
        for err in [named.unwrap_err(), carried.unwrap_err()] {
            assert!(err.ends_with(&format!("the token's signingTime {outside} is outside its signer's validity ({from} to {to})")), "{err}");
        }
    }
}

/// A time with a fraction is past its second: a root that ends at that second holds it, as
/// Go's exact comparison does (0.25 s after the certificate's end is after it), while the
/// whole second itself is within (the bounds are inclusive). Its times are the second and the
/// next, each judged.
#[test]
fn a_fraction_past_a_certificates_end_is_after_it() {
    let tsa = Tsa::with_root_until(Key::P256, (2026, 1, 1));
    assert_eq!(AT, 1_767_225_600, "2026-01-01T00:00:00Z");
    let at = |fraction| {
        let made = Made {
            fraction,
            ..Made::default()
        };
        let response = response(&tsa, Key::P256, made);
        verify(
            &[tsa.authority(true)],
            &response,
            SIGNATURE,
            &Budget::default(),
        )
        .map(|v| v.0)
    };
    assert_eq!(at(None), Ok(vec![AT as i64]));
    let err = at(Some(".25")).unwrap_err();
    assert!(
        err.contains("is not valid at Thu, 01 Jan 2026 00:00:01 GMT"),
        "{err}"
    );
    // Zeros are no fraction: the second itself.
    assert_eq!(at(Some(".000")), Ok(vec![AT as i64]));
    let good = Tsa::good(Key::P256);
    let made = Made {
        fraction: Some(".5"),
        ..Made::default()
    };
    let response = response(&good, Key::P256, made);
    let times = verify(
        &[good.authority(true)],
        &response,
        SIGNATURE,
        &Budget::default(),
    );
    assert_eq!(times.map(|v| v.0), Ok(vec![AT as i64, AT as i64 + 1]));
}

/// RFC 3161 allows a fraction of a second in genTime, and Go reads it (cosign accepts such a
/// timestamp): read here too, as its whole second.
#[test]
fn a_time_with_a_fraction_of_a_second_is_read() {
    let tsa = Tsa::good(Key::P256);
    for (fraction, nonce) in [(".25", false), (".5", true), (".123456789", true)] {
        let made = Made {
            fraction: Some(fraction),
            nonce,
            ..Made::default()
        };
        assert_eq!(
            verified(&tsa, Key::P256, made, true),
            Ok(AT as i64),
            "{fraction}"
        );
    }
    // Spoiled, it still does not verify: the fraction is read, the signed bytes kept.
    let other = Made {
        fraction: Some(".25"),
        other_digest: true,
        ..Made::default()
    };
    assert!(verified(&tsa, Key::P256, other, true).is_err());
    // No digits, or not only digits: not a time.
    for fraction in [".", ".2a"] {
        let made = Made {
            fraction: Some(fraction),
            ..Made::default()
        };
        let err = verified(&tsa, Key::P256, made, true).unwrap_err();
        assert!(err.contains("TSTInfo does not parse"), "{fraction}: {err}");
    }
    // What is no time stays refused.
    assert_eq!(whole_second(b"not der"), None);
}
