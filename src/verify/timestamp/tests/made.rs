//! Responses made as an authority makes them, for the tests beside.

use super::super::*;
use cms::cert::IssuerAndSerialNumber;
use cms::content_info::{CmsVersion, ContentInfo};
use cms::signed_data::{CertificateSet, EncapsulatedContentInfo, SignerInfo, SignerInfos};
use rcgen::{CertificateParams, CertifiedIssuer, CustomExtension, KeyPair};
use x509_cert::attr::Attribute;
use x509_cert::der::asn1::{Any, GeneralizedTime, ObjectIdentifier as Oid, SetOfVec};
use x509_cert::spki::AlgorithmIdentifierOwned;
use x509_tsp::{MessageImprint, TspVersion};

pub const SIGNATURE: &[u8] = b"the signature a timestamp vouches for";
/// 2026-01-01.
pub const AT: u64 = 1_767_225_600;
pub const RSA_KEY: &str = include_str!("../../fixtures/timestamp/rsa-2048.pem");

fn oid(text: &str) -> Oid {
    Oid::new(text).unwrap()
}

fn algorithm(text: &str) -> AlgorithmIdentifierOwned {
    AlgorithmIdentifierOwned {
        oid: oid(text),
        parameters: None,
    }
}

pub fn hash_oid(hash: Hash) -> &'static str {
    match hash {
        Hash::Sha256 => "2.16.840.1.101.3.4.2.1",
        Hash::Sha384 => "2.16.840.1.101.3.4.2.2",
        Hash::Sha512 => "2.16.840.1.101.3.4.2.3",
    }
}

/// The DER of an extended key usage extension's value listing `purposes`.
pub fn eku(purposes: &[&str]) -> Vec<u8> {
    let oids: Vec<Oid> = purposes.iter().map(|p| oid(p)).collect();
    x509_cert::ext::pkix::ExtendedKeyUsage(oids)
        .to_der()
        .unwrap()
}

/// The authority's key type.
#[derive(Clone, Copy, PartialEq)]
pub enum Key {
    P256,
    P384,
    Rsa,
}

/// An authority: a root, and a leaf for time stamping (its EKU as `purposes`, critical or not).
pub struct Tsa {
    pub root: CertifiedIssuer<'static, KeyPair>,
    pub key: KeyPair,
    pub leaf: Vec<u8>,
    /// The leaf again, with another serial number: the same key, another certificate.
    pub twin: Vec<u8>,
}

impl Tsa {
    pub fn new(key: Key, purposes: &[&str], critical: bool) -> Tsa {
        Tsa::rooted(key, purposes, critical, None)
    }

    /// A good authority whose root certificate is valid only until `(year, month, day)`.
    pub fn with_root_until(key: Key, until: (i32, u8, u8)) -> Tsa {
        Tsa::rooted(key, &[TIME_STAMPING_OID], true, Some(until))
    }

    fn rooted(key: Key, purposes: &[&str], critical: bool, until: Option<(i32, u8, u8)>) -> Tsa {
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        if let Some((year, month, day)) = until {
            ca.not_after = rcgen::date_time_ymd(year, month, day);
        }
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
        leaf.serial_number = Some(rcgen::SerialNumber::from(vec![1]));
        let mut twin = leaf.clone();
        twin.serial_number = Some(rcgen::SerialNumber::from(vec![2]));
        let twin = twin.signed_by(&key, &root).unwrap().der().to_vec();
        let leaf = leaf.signed_by(&key, &root).unwrap().der().to_vec();
        Tsa {
            root,
            key,
            leaf,
            twin,
        }
    }

    pub fn good(key: Key) -> Tsa {
        Tsa::new(key, &[TIME_STAMPING_OID], true)
    }

    /// This authority in a trusted root, naming its leaf or not.
    pub fn authority(&self, leaf: bool) -> Authority {
        Authority {
            anchor: CertificateDer::from(self.root.der().to_vec()),
            intermediates: Default::default(),
            leaf: leaf.then(|| self.leaf.clone()),
            valid: ValidFor::default(),
            uri: "https://tsa.example".into(),
        }
    }
}

/// How a response is made.
#[derive(Clone, Copy)]
pub struct Made {
    pub imprint: Option<Hash>,
    /// The message imprint's hash algorithm is SHA-1.
    pub sha1: bool,
    pub digest: Hash,
    pub certificates: bool,
    pub signed_attributes: bool,
    /// The signed attributes' message digest is of other bytes.
    pub other_digest: bool,
    pub status: u8,
    pub signers: usize,
    /// The token carries the leaf's twin (another serial) instead of the leaf.
    pub twin: bool,
    /// A signingTime signed attribute (Unix seconds).
    pub signing_time: Option<u64>,
    /// genTime with a fraction of a second (`...00<this>Z`, e.g. `.25`), as RFC 3161 allows.
    pub fraction: Option<&'static str>,
    /// A nonce after genTime.
    pub nonce: bool,
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
            twin: false,
            signing_time: None,
            fraction: None,
            nonce: false,
        }
    }
}

/// A signature over `message` with `hash`, as the key signs (P-256 with SHA-384 prehashed).
fn sign(tsa: &Tsa, key: Key, hash: Hash, message: &[u8]) -> Vec<u8> {
    use p256::ecdsa::signature::hazmat::PrehashSigner;
    use rcgen::SigningKey;
    match (key, hash) {
        (Key::P256, Hash::Sha384 | Hash::Sha512) => {
            let der = tsa.key.serialize_der();
            let key =
                <p256::ecdsa::SigningKey as p256::pkcs8::DecodePrivateKey>::from_pkcs8_der(&der)
                    .unwrap();
            let signature: p256::ecdsa::Signature =
                key.sign_prehash(&hash.digest(message)).unwrap();
            signature.to_der().as_bytes().to_vec()
        }
        (Key::P384, Hash::Sha256 | Hash::Sha512) => {
            let der = tsa.key.serialize_der();
            let key =
                <p384::ecdsa::SigningKey as p384::pkcs8::DecodePrivateKey>::from_pkcs8_der(&der)
                    .unwrap();
            let signature: p384::ecdsa::Signature =
                key.sign_prehash(&hash.digest(message)).unwrap();
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
pub fn response(tsa: &Tsa, key: Key, made: Made) -> Vec<u8> {
    response_over(tsa, key, made, SIGNATURE)
}

/// A DER TimeStampResp over `signature` by `tsa`, as `made` says.
pub fn response_over(tsa: &Tsa, key: Key, made: Made, signature: &[u8]) -> Vec<u8> {
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
            hashed_message: OctetString::new(imprint.digest(signature)).unwrap(),
        },
        serial_number: x509_cert::der::asn1::Int::new(&[7]).unwrap(),
        gen_time: GeneralizedTime::from_unix_duration(std::time::Duration::from_secs(AT)).unwrap(),
        accuracy: None,
        ordering: false,
        nonce: made
            .nonce
            .then(|| x509_cert::der::asn1::Int::new(&[0x2a, 0x17]).unwrap()),
        tsa: None,
        extensions: None,
    };
    let mut info = info.to_der().unwrap();
    if let Some(fraction) = made.fraction {
        info = with_fraction(&info, fraction);
    }
    let leaf = x509_cert::Certificate::from_der(&tsa.leaf).unwrap();
    let digested = if made.other_digest {
        b"other".to_vec()
    } else {
        info.clone()
    };
    let signing_time = made.signing_time.map(|at| Attribute {
        oid: oid(SIGNING_TIME),
        values: SetOfVec::try_from(vec![Any::encode_from(
            &x509_cert::time::Time::try_from(
                std::time::UNIX_EPOCH + std::time::Duration::from_secs(at),
            )
            .unwrap(),
        )
        .unwrap()])
        .unwrap(),
    });
    let attributes: SetOfVec<Attribute> = SetOfVec::try_from(
        signing_time
            .into_iter()
            .chain([
                Attribute {
                    oid: oid("1.2.840.113549.1.9.3"),
                    values: SetOfVec::try_from(vec![Any::encode_from(&oid(TST_INFO)).unwrap()])
                        .unwrap(),
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
            .collect::<Vec<_>>(),
    )
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
                SetOfVec::try_from(vec![CertificateChoices::Certificate(match made.twin {
                    true => x509_cert::Certificate::from_der(&tsa.twin).unwrap(),
                    false => leaf.clone(),
                })])
                .unwrap(),
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

/// `info` (a TSTInfo) with `fraction` after its genTime's seconds.
fn with_fraction(info: &[u8], fraction: &str) -> Vec<u8> {
    use x509_cert::der::{Header, Length, Reader, SliceReader, Tag};
    let mut outer = SliceReader::new(info).unwrap();
    let header = Header::decode(&mut outer).unwrap();
    let contents = outer.read_slice(header.length).unwrap();
    let at = contents.windows(2).position(|w| w == [0x18, 15]).unwrap();
    let mut changed = contents[..at].to_vec();
    changed.extend_from_slice(&[0x18, (15 + fraction.len()) as u8]);
    changed.extend_from_slice(&contents[at + 2..at + 16]);
    changed.extend_from_slice(fraction.as_bytes());
    changed.push(b'Z');
    changed.extend_from_slice(&contents[at + 17..]);
    let length = Length::try_from(changed.len()).unwrap();
    let mut out = Header::new(Tag::Sequence, length)
        .unwrap()
        .to_der()
        .unwrap();
    out.extend(changed);
    out
}
