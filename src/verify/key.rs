//! The ECDSA public keys a cosign signature may be made with, a `cosign.pub` or a signing
//! certificate's: P-256 (what `cosign generate-key-pair` and Fulcio's clients make) or P-384,
//! each verified with the hash Sigstore pairs with it (SHA-256, SHA-384).

use p256::ecdsa::signature::hazmat::PrehashVerifier;
use p256::ecdsa::{Signature, VerifyingKey};
use p256::pkcs8::DecodePublicKey;
use x509_cert::der::asn1::ObjectIdentifier;
use x509_cert::der::{Decode, Encode};
use x509_cert::spki::SubjectPublicKeyInfoOwned;

/// id-ecPublicKey's named curves.
const P256_CURVE: &str = "1.2.840.10045.3.1.7";
const P384_CURVE: &str = "1.3.132.0.34";

/// A public key of either curve.
#[derive(Debug, Clone)]
pub enum PublicKey {
    P256(VerifyingKey),
    /// The uncompressed point.
    P384(Vec<u8>),
}

impl PublicKey {
    /// From a DER SubjectPublicKeyInfo.
    pub fn from_spki(spki: &SubjectPublicKeyInfoOwned) -> Result<PublicKey, String> {
        let curve = spki
            .algorithm
            .parameters
            .as_ref()
            .and_then(|p| p.decode_as::<ObjectIdentifier>().ok())
            .map(|o| o.to_string());
        match curve.as_deref() {
            Some(P256_CURVE) => {
                let der = spki.to_der().map_err(|e| e.to_string())?;
                VerifyingKey::from_public_key_der(&der)
                    .map(PublicKey::P256)
                    .map_err(|_| "not a P-256 point".to_string())
            }
            Some(P384_CURVE) => Ok(PublicKey::P384(
                spki.subject_public_key.raw_bytes().to_vec(),
            )),
            _ => Err("not an ECDSA P-256 or P-384 key".into()),
        }
    }

    /// From PEM (`PUBLIC KEY`).
    pub fn from_pem(text: &str) -> Result<PublicKey, String> {
        let (label, der) = x509_cert::der::pem::decode_vec(text.trim().as_bytes())
            .map_err(|e| format!("not PEM ({e})"))?;
        if label != "PUBLIC KEY" {
            return Err(format!("a PEM {label}, not a PUBLIC KEY"));
        }
        let spki = SubjectPublicKeyInfoOwned::from_der(&der).map_err(|e| e.to_string())?;
        Self::from_spki(&spki)
    }

    /// Whether `signature` (ASN.1 DER, or P-256's fixed `r || s`) over the bytes whose SHA-256
    /// is `sha256` — `message` — verifies. P-256 takes the digest computed once for every key;
    /// P-384 hashes `message` itself.
    pub fn verifies(&self, message: &[u8], sha256: &[u8], signature: &[u8]) -> bool {
        match self {
            PublicKey::P256(key) => Signature::from_der(signature)
                .or_else(|_| Signature::from_slice(signature))
                .is_ok_and(|s| key.verify_prehash(sha256, &s).is_ok()),
            PublicKey::P384(point) => ring::signature::UnparsedPublicKey::new(
                &ring::signature::ECDSA_P384_SHA384_ASN1,
                point,
            )
            .verify(message, signature)
            .is_ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rcgen::{KeyPair, SigningKey, PKCS_ECDSA_P256_SHA256, PKCS_ECDSA_P384_SHA384};
    use sha2::{Digest, Sha256};

    /// A `cosign.pub` of either curve verifies its own signatures (P-384 with SHA-384) and no
    /// other's; other keys and PEM labels are refused with what they are.
    #[test]
    fn keys_of_both_curves_verify_their_signatures_only() {
        let message = b"DSSEv1 ...";
        let sha256 = Sha256::digest(message);
        for alg in [&PKCS_ECDSA_P256_SHA256, &PKCS_ECDSA_P384_SHA384] {
            let pair = KeyPair::generate_for(alg).unwrap();
            let key = PublicKey::from_pem(&pair.public_key_pem()).unwrap();
            let signature = pair.sign(message).unwrap();
            assert!(key.verifies(message, &sha256, &signature));
            let other = KeyPair::generate_for(alg).unwrap().sign(message).unwrap();
            assert!(!key.verifies(message, &sha256, &other));
            assert!(!key.verifies(b"other", &Sha256::digest(b"other"), &signature));
        }
        let ed = KeyPair::generate_for(&rcgen::PKCS_ED25519).unwrap();
        let err = PublicKey::from_pem(&ed.public_key_pem()).unwrap_err();
        assert_eq!(err, "not an ECDSA P-256 or P-384 key");
        let err = PublicKey::from_pem(&ed.serialize_pem()).unwrap_err();
        assert_eq!(err, "a PEM PRIVATE KEY, not a PUBLIC KEY");
    }
}
