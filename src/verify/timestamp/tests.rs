//! RFC 3161 responses made here, as a timestamp authority makes them (a TSTInfo over the
//! signature's hash, in CMS signed data signed by the authority's time-stamping leaf), each with
//! one thing spoiled. The real timestamp-server's are judged in `tlog/v2/tests.rs` and
//! `signatures::rekor_v2`.

use super::*;
use cms::cert::IssuerAndSerialNumber;
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{CertificateSet, EncapsulatedContentInfo, SignerInfo, SignerInfos};
use rcgen::{CertificateParams, CertifiedIssuer, CustomExtension, KeyPair};
use x509_cert::attr::Attribute;
use x509_cert::der::asn1::{Any, GeneralizedTime, ObjectIdentifier as Oid, SetOfVec};
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_tsp::{MessageImprint, TspVersion};

const SIGNATURE: &[u8] = b"the signature a timestamp vouches for";
/// 2026-01-01.
const AT: u64 = 1_767_225_600;
const RSA_KEY: &str = include_str!("../fixtures/timestamp/rsa-2048.pem");

fn oid(text: &str) -> Oid {
    Oid::new(text).unwrap()
}

fn algorithm(text: &str) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned {
        oid: oid(text),
        parameters: None,
    }
}

fn hash_oid(hash: Hash) -> &'static str {
    match hash {
        Hash::Sha256 => "2.16.840.1.101.3.4.2.1",
        Hash::Sha384 => "2.16.840.1.101.3.4.2.2",
        Hash::Sha512 => "2.16.840.1.101.3.4.2.3",
    }
}

/// The DER of an extended key usage extension's value listing `purposes`.
fn eku(purposes: &[&str]) -> Vec<u8> {
    let oids: Vec<Oid> = purposes.iter().map(|p| oid(p)).collect();
    x509_cert::ext::pkix::ExtendedKeyUsage(oids)
        .to_der()
        .unwrap()
}

/// The authority's key type.
#[derive(Clone, Copy, PartialEq)]
enum Key {
    P256,
    P384,
    Rsa,
}

/// An authority: a root, and a leaf for time stamping (its EKU as `purposes`, critical or not).
struct Tsa {
    root: CertifiedIssuer<'static, KeyPair>,
    key: KeyPair,
    leaf: Vec<u8>,
}

impl Tsa {
    fn new(key: Key, purposes: &[&str], critical: bool) -> Tsa {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let root = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
        let key = match key {
            Key::P256 => KeyPair::generate().unwrap(),
            Key::P384 => KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384).unwrap(),
            Key::Rsa => {
                KeyPair::from_pkcs8_pem_and_sign_algo(RSA_KEY, &rcgen::PKCS_RSA_SHA256).unwrap()
            }
        };
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.not_before = rcgen::date_time_ymd(2025, 1, 1);
        leaf.not_after = rcgen::date_time_ymd(2027, 1, 1);
        let mut usage = CustomExtension::from_oid_content(&[2, 5, 29, 37], eku(purposes));
        usage.set_criticality(critical);
        leaf.custom_extensions = vec![usage];
        let leaf = leaf.signed_by(&key, &root).unwrap().der().to_vec();
        Tsa { root, key, leaf }
    }

    fn good(key: Key) -> Tsa {
        Tsa::new(key, &[TIME_STAMPING_OID], true)
    }

    /// This authority in a trusted root, naming its leaf or not.
    fn authority(&self, leaf: bool) -> Authority {
        Authority {
            anchor: CertificateDer::from(self.root.der().to_vec()),
            intermediates: Vec::new(),
            leaf: leaf.then(|| self.leaf.clone()),
            valid: ValidFor::default(),
            uri: "https://tsa.example".into(),
        }
    }
}

/// How a response is made.
#[derive(Clone, Copy)]
struct Made {
    imprint: Option<Hash>,
    /// The message imprint's hash algorithm is SHA-1.
    sha1: bool,
    digest: Hash,
    certificates: bool,
    signed_attributes: bool,
    /// The signed attributes' message digest is of other bytes.
    other_digest: bool,
    status: u8,
    signers: usize,
}

impl Default for Made {
    fn default() -> Made {
        Made {
            imprint: Some(Hash::Sha256),
            sha1: false,
            digest: Hash::Sha256,
            certificates: false,
            signed_attributes: true,
            other_digest: false,
            status: 0,
            signers: 1,
        }
    }
}

/// A signature over `message` with `hash`, as the key signs (P-256 with SHA-384 prehashed).
fn sign(tsa: &Tsa, key: Key, hash: Hash, message: &[u8]) -> Vec<u8> {
    use p256::ecdsa::signature::hazmat::PrehashSigner;
    use rcgen::SigningKey;
    match (key, hash) {
        (Key::P256, Hash::Sha384) => {
            let der = tsa.key.serialize_der();
            let key =
                <p256::ecdsa::SigningKey as p256::pkcs8::DecodePrivateKey>::from_pkcs8_der(&der)
                    .unwrap();
            let signature: p256::ecdsa::Signature =
                key.sign_prehash(&Hash::Sha384.digest(message)).unwrap();
            signature.to_der().as_bytes().to_vec()
        }
        (Key::Rsa, Hash::Sha384 | Hash::Sha512) => {
            let alg = match hash {
                Hash::Sha384 => &rcgen::PKCS_RSA_SHA384,
                _ => &rcgen::PKCS_RSA_SHA512,
            };
            KeyPair::from_pkcs8_pem_and_sign_algo(RSA_KEY, alg)
                .unwrap()
                .sign(message)
                .unwrap()
        }
        _ => tsa.key.sign(message).unwrap(),
    }
}

/// A DER TimeStampResp over [`SIGNATURE`] by `tsa`, as `made` says.
fn response(tsa: &Tsa, key: Key, made: Made) -> Vec<u8> {
    let imprint = made.imprint.unwrap_or(Hash::Sha256);
    let info = TstInfo {
        version: TspVersion::V1,
        policy: oid("1.2.3.4"),
        message_imprint: MessageImprint {
            hash_algorithm: x509_cert::spki::AlgorithmIdentifier {
                oid: oid(if made.sha1 {
                    "1.3.14.3.2.26"
                } else {
                    hash_oid(imprint)
                }),
                parameters: None,
            },
            hashed_message: OctetString::new(imprint.digest(SIGNATURE)).unwrap(),
        },
        serial_number: x509_cert::der::asn1::Int::new(&[7]).unwrap(),
        gen_time: GeneralizedTime::from_unix_duration(std::time::Duration::from_secs(AT)).unwrap(),
        accuracy: None,
        ordering: false,
        nonce: None,
        tsa: None,
        extensions: None,
    };
    let info = info.to_der().unwrap();
    let leaf = x509_cert::Certificate::from_der(&tsa.leaf).unwrap();
    let digested = if made.other_digest {
        b"other".to_vec()
    } else {
        info.clone()
    };
    let attributes: SetOfVec<Attribute> = SetOfVec::try_from(vec![
        Attribute {
            oid: oid("1.2.840.113549.1.9.3"),
            values: SetOfVec::try_from(vec![Any::encode_from(&oid(TST_INFO)).unwrap()]).unwrap(),
        },
        Attribute {
            oid: oid(MESSAGE_DIGEST),
            values: SetOfVec::try_from(vec![Any::encode_from(
                &OctetString::new(made.digest.digest(&digested)).unwrap(),
            )
            .unwrap()])
            .unwrap(),
        },
    ])
    .unwrap();
    let signed = match made.signed_attributes {
        true => attributes.to_der().unwrap(),
        false => info.clone(),
    };
    let signer = SignerInfo {
        version: CmsVersion::V1,
        sid: SignerIdentifier::IssuerAndSerialNumber(IssuerAndSerialNumber {
            issuer: leaf.tbs_certificate.issuer.clone(),
            serial_number: leaf.tbs_certificate.serial_number.clone(),
        }),
        digest_alg: algorithm(hash_oid(made.digest)),
        signed_attrs: made.signed_attributes.then_some(attributes),
        signature_algorithm: algorithm(match key {
            Key::Rsa => "1.2.840.113549.1.1.1",
            _ => "1.2.840.10045.2.1",
        }),
        signature: OctetString::new(sign(tsa, key, made.digest, &signed)).unwrap(),
        unsigned_attrs: None,
    };
    let mut signers = vec![signer.clone()];
    if made.signers == 2 {
        let mut second = signer;
        second.signature = OctetString::new(vec![1, 2, 3]).unwrap();
        signers.push(second);
    }
    let data = SignedData {
        version: CmsVersion::V3,
        digest_algorithms: SetOfVec::try_from(vec![algorithm(hash_oid(made.digest))]).unwrap(),
        encap_content_info: EncapsulatedContentInfo {
            econtent_type: oid(TST_INFO),
            econtent: Some(Any::encode_from(&OctetString::new(info).unwrap()).unwrap()),
        },
        certificates: made.certificates.then(|| {
            CertificateSet(
                SetOfVec::try_from(vec![CertificateChoices::Certificate(leaf.clone())]).unwrap(),
            )
        }),
        crls: None,
        signer_infos: SignerInfos(SetOfVec::try_from(signers).unwrap()),
    };
    let token = ContentInfo {
        content_type: oid(SIGNED_DATA),
        content: Any::encode_from(&data).unwrap(),
    };
    // TimeStampResp ::= SEQUENCE { PKIStatusInfo SEQUENCE { INTEGER status }, token }.
    let mut body = vec![0x30, 0x03, 0x02, 0x01, made.status];
    body.extend(token.to_der().unwrap());
    let mut out = vec![0x30, 0x82];
    out.extend_from_slice(&(body.len() as u16).to_be_bytes());
    out.extend(body);
    out
}

fn verified(tsa: &Tsa, key: Key, made: Made, leaf: bool) -> Result<i64, String> {
    verify(&[tsa.authority(leaf)], &response(tsa, key, made), SIGNATURE).map(|(time, _)| time)
}

#[test]
fn every_key_and_hash_an_authority_signs_with_verifies() {
    let cases = [
        (Key::P256, Hash::Sha256),
        (Key::P256, Hash::Sha384),
        (Key::P384, Hash::Sha384),
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
        assert!(verify(&[tsa.authority(true)], &named, SIGNATURE).is_err());
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
    let response = response(&tsa, Key::P256, Made::default());
    let err = verify(&[tsa.authority(true)], &response, b"another").unwrap_err();
    assert_eq!(
        err,
        "a timestamp is of another signature (its message imprint)"
    );
    // Another authority's leaf named in the root.
    let other = Tsa::good(Key::P256);
    let mut named = tsa.authority(true);
    named.leaf = Some(other.leaf.clone());
    let carried = super::tests::response(
        &tsa,
        Key::P256,
        Made {
            certificates: true,
            ..Made::default()
        },
    );
    let err = verify(&[named], &carried, SIGNATURE).unwrap_err();
    assert!(
        err.ends_with("the token's signer is not the authority's certificate"),
        "{err}"
    );
    assert!(verify(&[], &response, SIGNATURE).is_err());
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
    // An intermediate that lists usages must list time stamping.
    for (purpose, allowed) in [
        (rcgen::ExtendedKeyUsagePurpose::ServerAuth, false),
        (rcgen::ExtendedKeyUsagePurpose::TimeStamping, true),
        // Go's x509 lets anyExtendedKeyUsage stand for time stamping; webpki does not
        // (docs/compatibility.md).
        (rcgen::ExtendedKeyUsagePurpose::Any, false),
    ] {
        let mut tsa = Tsa::good(Key::P256);
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        params.extended_key_usages = vec![purpose.clone()];
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
        authority.intermediates = vec![CertificateDer::from(intermediate.der().to_vec())];
        let response = response(&tsa, Key::P256, Made::default());
        let verdict = verify(&[authority], &response, SIGNATURE);
        match allowed {
            true => assert_eq!(verdict.map(|v| v.0), Ok(AT as i64)),
            false => {
                let err = verdict.unwrap_err();
                assert!(err.contains("does not chain to it"), "{purpose:?}: {err}");
            }
        }
    }
}
