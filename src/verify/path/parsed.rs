//! A certificate read as far as a path is built from it (names, validity, key, the signed part
//! and its signature), without judging the rest: webpki judges the paths found.

use rustls_pki_types::CertificateDer;
use sha2::{Digest, Sha256};
use x509_cert::der::{Decode, Reader, SliceReader, Tag, TagNumber};

/// The parts of a certificate a path is built from, read without judging the rest (webpki
/// judges it).
#[derive(Debug)]
pub(super) struct Parsed {
    pub(super) der: CertificateDer<'static>,
    /// The signed part, as signed; the signature algorithm's contents and the signature.
    pub(super) tbs: Vec<u8>,
    pub(super) algorithm: Vec<u8>,
    pub(super) signature: Vec<u8>,
    /// Names' contents, compared as bytes as webpki compares them.
    pub(super) issuer: Vec<u8>,
    pub(super) subject: Vec<u8>,
    /// The key's algorithm identifier contents and the key's bits.
    pub(super) key_algorithm: Vec<u8>,
    pub(super) key: Vec<u8>,
    pub(super) valid: (i64, i64),
    /// Digests of the certificate and of its key, what a verdict is remembered by.
    pub(super) id: [u8; 32],
    pub(super) key_id: [u8; 32],
}

/// The contents of the next element, which must have `tag`.
fn contents<'a>(reader: &mut SliceReader<'a>, tag: Tag) -> Option<&'a [u8]> {
    let header = reader.peek_header().ok()?;
    if header.tag != tag {
        return None;
    }
    let whole = reader.tlv_bytes().ok()?;
    Some(&whole[whole.len() - usize::try_from(header.length).ok()?..])
}

pub(super) fn parse(der: &[u8]) -> Option<Parsed> {
    let mut outer = SliceReader::new(der).ok()?;
    let mut certificate = SliceReader::new(contents(&mut outer, Tag::Sequence)?).ok()?;
    let tbs = certificate.tlv_bytes().ok()?;
    let algorithm = contents(&mut certificate, Tag::Sequence)?;
    let signature = match contents(&mut certificate, Tag::BitString)? {
        [0, bits @ ..] => bits,
        _ => return None,
    };
    let mut fields =
        SliceReader::new(contents(&mut SliceReader::new(tbs).ok()?, Tag::Sequence)?).ok()?;
    let version = Tag::ContextSpecific {
        constructed: true,
        number: TagNumber::N0,
    };
    if fields.peek_tag().ok()? == version {
        fields.tlv_bytes().ok()?;
    }
    fields.tlv_bytes().ok()?; // serial number
    fields.tlv_bytes().ok()?; // signature algorithm, again
    let issuer = contents(&mut fields, Tag::Sequence)?;
    let validity = x509_cert::time::Validity::from_der(fields.tlv_bytes().ok()?).ok()?;
    let subject = contents(&mut fields, Tag::Sequence)?;
    let mut spki = SliceReader::new(contents(&mut fields, Tag::Sequence)?).ok()?;
    let key_algorithm = contents(&mut spki, Tag::Sequence)?;
    let key = match contents(&mut spki, Tag::BitString)? {
        [0, bits @ ..] => bits,
        _ => return None,
    };
    let seconds = |t: x509_cert::time::Time| t.to_unix_duration().as_secs() as i64;
    let key_id = Sha256::new()
        .chain_update(key_algorithm)
        .chain_update(key)
        .finalize();
    Some(Parsed {
        id: Sha256::digest(der).into(),
        key_id: key_id.into(),
        der: CertificateDer::from(der.to_vec()),
        tbs: tbs.to_vec(),
        algorithm: algorithm.to_vec(),
        signature: signature.to_vec(),
        issuer: issuer.to_vec(),
        subject: subject.to_vec(),
        key_algorithm: key_algorithm.to_vec(),
        key: key.to_vec(),
        valid: (seconds(validity.not_before), seconds(validity.not_after)),
    })
}

impl Parsed {
    /// Whether `issuer`'s key made this certificate's signature, by the algorithms webpki
    /// verifies with (the same identifiers matched the same way).
    /// Go's x509 verifies more ECDSA pairs (P-521 keys, SHA-512 on any curve); those are
    /// verified by [`super::prehashed`], and webpki, shown such a path, refuses it unless it can
    /// verify it too: they count where the chain is Go's alone to judge ([`signed`]).
    pub(super) fn signed_by(&self, issuer: &Parsed) -> bool {
        let webpki = webpki::ALL_VERIFICATION_ALGS
            .iter()
            .filter(|a| a.signature_alg_id().as_ref() == self.algorithm.as_slice())
            .find(|a| a.public_key_alg_id().as_ref() == issuer.key_algorithm.as_slice());
        match webpki {
            Some(a) => a
                .verify_signature(&issuer.key, &self.tbs, &self.signature)
                .is_ok(),
            None => self.ecdsa_signed_by(issuer),
        }
    }

    /// ecdsa-with-SHA256, -384 or -512 by an EC key on P-256, P-384 or P-521.
    fn ecdsa_signed_by(&self, issuer: &Parsed) -> bool {
        use x509_cert::der::asn1::ObjectIdentifier as Oid;
        let oids = |contents: &[u8]| -> Option<Vec<String>> {
            let mut reader = SliceReader::new(contents).ok()?;
            let mut oids = Vec::new();
            while !reader.is_finished() {
                oids.push(reader.decode::<Oid>().ok()?.to_string());
            }
            Some(oids)
        };
        let (Some(signature), Some(key)) = (oids(&self.algorithm), oids(&issuer.key_algorithm))
        else {
            return false;
        };
        let digest = match signature.as_slice() {
            [s] if s == "1.2.840.10045.4.3.2" => Sha256::digest(&self.tbs).to_vec(),
            [s] if s == "1.2.840.10045.4.3.3" => sha2::Sha384::digest(&self.tbs).to_vec(),
            [s] if s == "1.2.840.10045.4.3.4" => sha2::Sha512::digest(&self.tbs).to_vec(),
            _ => return false,
        };
        match key.as_slice() {
            [ec, curve] if ec == "1.2.840.10045.2.1" => crate::verify::prehashed::ecdsa_verifies(
                curve,
                &issuer.key,
                &digest,
                &self.signature,
            ),
            _ => false,
        }
    }

    /// Webpki's and Go's loop check: the same subject and key is the same CA.
    pub(super) fn same_ca(&self, other: &Parsed) -> bool {
        self.subject == other.subject
            && self.key == other.key
            && self.key_algorithm == other.key_algorithm
    }
}
