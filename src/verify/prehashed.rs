//! ECDSA pairs ring has no algorithm for and Go's crypto/ecdsa verifies: a digest longer than
//! the curve (P-256 or P-384 with SHA-512: truncated to the curve's size, as FIPS 186 says), and
//! P-521 keys, for a timestamp authority's signer and for certificates of every chain. RustCrypto's
//! p256, p384 and p521 verify the prehash, truncating it the same way.

use p256::ecdsa::signature::hazmat::PrehashVerifier;

const P256: &str = "1.2.840.10045.3.1.7";
const P384: &str = "1.3.132.0.34";
const P521: &str = "1.3.132.0.35";

/// Whether `signature` (ASN.1 DER) over `digest` verifies with the EC `key` (SEC1 bytes) of the
/// named curve (its OID).
pub fn ecdsa_verifies(curve: &str, key: &[u8], digest: &[u8], signature: &[u8]) -> bool {
    match curve {
        P256 => {
            let (Ok(key), Ok(signature)) = (
                p256::ecdsa::VerifyingKey::from_sec1_bytes(key),
                p256::ecdsa::Signature::from_der(signature),
            ) else {
                return false;
            };
            key.verify_prehash(digest, &signature).is_ok()
        }
        P384 => {
            let (Ok(key), Ok(signature)) = (
                p384::ecdsa::VerifyingKey::from_sec1_bytes(key),
                p384::ecdsa::Signature::from_der(signature),
            ) else {
                return false;
            };
            key.verify_prehash(digest, &signature).is_ok()
        }
        P521 => {
            let (Ok(key), Ok(signature)) = (
                p521::ecdsa::VerifyingKey::from_sec1_bytes(key),
                p521::ecdsa::Signature::from_der(signature),
            ) else {
                return false;
            };
            // A digest shorter than half the field (SHA-256's 32 bytes against 66) is refused
            // by the crate; as a number it is the same with leading zeros, as Go reads it.
            let mut padded = vec![0u8; 66usize.saturating_sub(digest.len())];
            padded.extend_from_slice(digest);
            key.verify_prehash(&padded, &signature).is_ok()
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use p256::ecdsa::signature::hazmat::PrehashSigner;
    use sha2::{Digest, Sha512};

    #[test]
    fn a_sha512_digest_verifies_truncated_on_either_curve_and_nothing_else_does() {
        let digest = Sha512::digest(b"signed");
        let p256_key = p256::ecdsa::SigningKey::from_slice(&[7; 32]).unwrap();
        let signed: p256::ecdsa::Signature = p256_key.sign_prehash(&digest).unwrap();
        let key = p256_key.verifying_key().to_encoded_point(false);
        assert!(ecdsa_verifies(
            P256,
            key.as_bytes(),
            &digest,
            signed.to_der().as_bytes()
        ));
        // Signed over the first 32 bytes alone: the same, as the digest is truncated so.
        assert!(ecdsa_verifies(
            P256,
            key.as_bytes(),
            &digest[..32],
            signed.to_der().as_bytes()
        ));
        assert!(!ecdsa_verifies(
            P256,
            key.as_bytes(),
            &Sha512::digest(b"other"),
            signed.to_der().as_bytes()
        ));
        assert!(!ecdsa_verifies(
            P384,
            key.as_bytes(),
            &digest,
            signed.to_der().as_bytes()
        ));
        assert!(!ecdsa_verifies(
            "1.3.132.0.35",
            key.as_bytes(),
            &digest,
            signed.to_der().as_bytes()
        ));
        let p384_key = p384::ecdsa::SigningKey::from_slice(&[7; 48]).unwrap();
        let signed: p384::ecdsa::Signature = p384_key.sign_prehash(&digest).unwrap();
        let key = p384_key.verifying_key().to_encoded_point(false);
        assert!(ecdsa_verifies(
            P384,
            key.as_bytes(),
            &digest,
            signed.to_der().as_bytes()
        ));
        assert!(!ecdsa_verifies(P384, key.as_bytes(), &digest, b"not DER"));
        let p521_key = p521::ecdsa::SigningKey::from_slice(&[1; 66]).unwrap();
        let signed: p521::ecdsa::Signature = p521_key.sign_prehash(&digest).unwrap();
        let key = p521::ecdsa::VerifyingKey::from(&p521_key).to_encoded_point(false);
        assert!(ecdsa_verifies(
            P521,
            key.as_bytes(),
            &digest,
            signed.to_der().as_bytes()
        ));
    }
}
