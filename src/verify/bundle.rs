//! Sigstore bundles (v0.1 to v0.3), as cosign v3 attaches them to an image by default: a DSSE
//! envelope whose payload is an in-toto statement naming the image's digest, signed with a key
//! (the bundle names it by a hint) or a certificate (keyless). Only what verification needs is
//! read; the payload is parsed only after its signature verified.

use base64::Engine;
use serde::Deserialize;

/// What cosign writes (`application/vnd.dev.sigstore.bundle.v0.3+json`) and the older names.
pub const BUNDLE_MEDIA_TYPES: [&str; 4] = [
    "application/vnd.dev.sigstore.bundle.v0.3+json",
    "application/vnd.dev.sigstore.bundle+json;version=0.3",
    "application/vnd.dev.sigstore.bundle+json;version=0.2",
    "application/vnd.dev.sigstore.bundle+json;version=0.1",
];
/// A bundle with a certificate chain and a log entry is a few KiB.
pub const MAX_BUNDLE_BYTES: usize = 256 << 10;

pub mod statement;
mod strict;

/// A bundle, as far as verification reads it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bundle {
    #[serde(default)]
    pub media_type: String,
    #[serde(default)]
    pub verification_material: Material,
    pub dsse_envelope: Option<Envelope>,
    pub message_signature: Option<MessageSignature>,
}

/// A signature over an artifact's bytes (`cosign sign-blob`), and the artifact's digest, which
/// the signature does not cover: a hint.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSignature {
    pub message_digest: Option<MessageDigest>,
    pub signature: String,
}

#[derive(Debug, Deserialize)]
pub struct MessageDigest {
    pub algorithm: String,
    pub digest: String,
}

/// Who signed: a key hint, or a certificate (v0.3) or chain (v0.1, v0.2), and log entries.
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Material {
    pub public_key: Option<serde_json::Value>,
    pub certificate: Option<RawBytes>,
    pub x509_certificate_chain: Option<Chain>,
    #[serde(default)]
    pub tlog_entries: Vec<serde_json::Value>,
    #[serde(default)]
    pub timestamp_verification_data: Timestamps,
}

/// A bundle's RFC 3161 timestamps (`timestampVerificationData.rfc3161Timestamps`).
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timestamps {
    #[serde(default)]
    pub rfc3161_timestamps: Vec<SignedTimestamp>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedTimestamp {
    pub signed_timestamp: String,
}

#[derive(Debug, Deserialize)]
pub struct Chain {
    #[serde(default)]
    pub certificates: Vec<RawBytes>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawBytes {
    pub raw_bytes: String,
}

/// A DSSE envelope: the payload, its type, and signatures over both (PAE).
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub payload: String,
    pub payload_type: String,
    #[serde(default)]
    pub signatures: Vec<EnvelopeSignature>,
}

#[derive(Debug, Deserialize)]
pub struct EnvelopeSignature {
    pub sig: String,
}

impl Bundle {
    /// Reads a bundle, refusing what is not one.
    pub fn parse(bytes: &[u8]) -> Result<Bundle, String> {
        let bundle: Bundle = serde_json::from_slice(bytes)
            .map_err(|e| format!("a signature bundle is not a Sigstore bundle ({e})"))?;
        if !BUNDLE_MEDIA_TYPES.contains(&bundle.media_type.as_str()) {
            return Err(format!(
                "a signature bundle has the media type '{}', not a Sigstore bundle's",
                bundle.media_type
            ));
        }
        bundle.check_shape()?;
        Ok(bundle)
    }

    /// What sigstore-go refuses before it verifies anything: a bundle that names neither key
    /// nor certificate; a v0.3 bundle with a certificate chain (one certificate, the leaf);
    /// log entries without the inclusion promise v0.1 requires or the inclusion proof v0.2
    /// and later require.
    fn check_shape(&self) -> Result<(), String> {
        let material = &self.verification_material;
        let chain = material
            .x509_certificate_chain
            .as_ref()
            .is_some_and(|c| !c.certificates.is_empty());
        if material.public_key.is_none() && material.certificate.is_none() && !chain {
            return Err(
                "a bundle names neither a key nor a certificate (its verificationMaterial)".into(),
            );
        }
        let version = self.version();
        if version >= 3 && material.x509_certificate_chain.is_some() {
            return Err(
                "a v0.3 bundle carries a certificate chain; it may carry the leaf only".into(),
            );
        }
        let (field, named) = match version {
            1 => ("inclusionPromise", "inclusion promise"),
            _ => ("inclusionProof", "inclusion proof"),
        };
        if material.tlog_entries.iter().any(|e| e[field].is_null()) {
            return Err(format!(
                "a v0.{version} bundle's log entry has no {named}, which that version requires"
            ));
        }
        Ok(())
    }

    /// The bundle format's minor version (0.1 to 0.3), from its media type.
    fn version(&self) -> u8 {
        match self.media_type.as_bytes().last() {
            Some(b'1') => 1,
            Some(b'2') => 2,
            _ => 3,
        }
    }

    /// The bundle's RFC 3161 timestamps (DER responses), at most
    /// [`MAX_TIMESTAMPS`](super::timestamp::MAX_TIMESTAMPS), as sigstore-go bounds them.
    pub fn timestamps(&self) -> Result<Vec<Vec<u8>>, String> {
        let written = &self.verification_material.timestamp_verification_data;
        let max = super::timestamp::MAX_TIMESTAMPS;
        if written.rfc3161_timestamps.len() > max {
            return Err(format!("a bundle carries over {max} timestamps"));
        }
        written
            .rfc3161_timestamps
            .iter()
            .map(|t| {
                decode(&t.signed_timestamp).map_err(|_| "a bundle's timestamp is not base64".into())
            })
            .collect()
    }

    /// The signer's certificates, leaf first (DER), when the bundle is keyless.
    pub fn certificates(&self) -> Result<Vec<Vec<u8>>, String> {
        let material = &self.verification_material;
        let raw: Vec<&RawBytes> = match (&material.certificate, &material.x509_certificate_chain) {
            (Some(leaf), _) => vec![leaf],
            (None, Some(chain)) => chain.certificates.iter().collect(),
            (None, None) => Vec::new(),
        };
        let ders = raw
            .iter()
            .map(|c| decode(&c.raw_bytes).map_err(|_| "a bundle's certificate is not base64"))
            .collect::<Result<Vec<_>, _>>()?;
        // A root vouches for itself: one a bundle brings would be trusted by its own word.
        // sigstore-python refuses it, and the suite's bundle-with-root-cert case with it.
        if let Some(root) = ders.iter().skip(1).find_map(|der| self_issued(der)) {
            return Err(format!(
                "a bundle's certificate chain holds a root certificate ('{root:.200}'); roots \
                 come from the trusted root only"
            ));
        }
        Ok(ders)
    }
}

/// The subject of a self-issued certificate (its issuer is its subject: a root).
fn self_issued(der: &[u8]) -> Option<String> {
    use x509_cert::der::Decode;
    let tbs = x509_cert::Certificate::from_der(der).ok()?.tbs_certificate;
    (tbs.issuer == tbs.subject).then(|| tbs.subject.to_string())
}

/// An envelope decoded: the payload, the bytes each signature signs (DSSE's
/// pre-authentication encoding), and the signatures.
pub struct Decoded {
    pub payload: Vec<u8>,
    pub signed: Vec<u8>,
    pub signatures: Vec<Vec<u8>>,
}

impl Envelope {
    /// Exactly one signature, as sigstore-go requires: an envelope of thousands had each tried
    /// against each key (19 s of CPU a digest), and the one a log entry records must be the one
    /// that verifies.
    pub fn decode(&self) -> Result<Decoded, String> {
        if self.signatures.len() != 1 {
            return Err(format!(
                "a DSSE envelope carries {} signatures; a Sigstore bundle's has exactly one",
                self.signatures.len()
            ));
        }
        let payload = decode(&self.payload).map_err(|_| "a DSSE payload is not base64")?;
        let signed = pae(&self.payload_type, &payload);
        let signatures = vec![decode(&self.signatures[0].sig)
            .map_err(|_| "a DSSE signature is not base64".to_string())?];
        Ok(Decoded {
            payload,
            signed,
            signatures,
        })
    }
}

/// DSSE v1's pre-authentication encoding: `DSSEv1 <len> <type> <len> <payload>`.
pub fn pae(payload_type: &str, payload: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "DSSEv1 {} {payload_type} {} ",
        payload_type.len(),
        payload.len()
    )
    .into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A bundle's bytes field: standard base64, padded. sigstore-go (protojson) also takes it
/// URL-safe, unpadded or broken into lines, which is held here; spaces, which it refuses, are
/// refused.
pub(crate) fn decode(text: &str) -> Result<Vec<u8>, base64::DecodeError> {
    base64::engine::general_purpose::STANDARD.decode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pae_is_dsses() {
        assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab".to_vec());
    }

    #[test]
    fn only_sigstore_bundles_are_read() {
        let err = Bundle::parse(br#"{"mediaType": "application/json"}"#).unwrap_err();
        assert!(err.contains("not a Sigstore bundle's"), "{err}");
        assert!(Bundle::parse(b"[]").is_err());
        let bundle = Bundle::parse(
            br#"{"mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
                 "verificationMaterial": {"publicKey": {"hint": "x"}},
                 "dsseEnvelope": {"payload": "e30=", "payloadType": "t", "signatures": [{"sig": "AAAA"}]}}"#,
        )
        .unwrap();
        let decoded = bundle.dsse_envelope.unwrap().decode().unwrap();
        assert_eq!(decoded.payload, b"{}");
        assert_eq!(decoded.signed, b"DSSEv1 1 t 2 {}".to_vec());
        assert_eq!(decoded.signatures, vec![vec![0, 0, 0]]);
    }

    /// What sigstore-go refuses before verifying: no key or certificate named, a v0.3 chain,
    /// an entry without the promise (v0.1) or proof (v0.2, v0.3) its version requires.
    #[test]
    fn a_bundle_is_shaped_as_its_version_requires() {
        let bundle = |media: &str, material: serde_json::Value| {
            let text = serde_json::json!({"mediaType": media, "verificationMaterial": material,
                "dsseEnvelope": {"payload": "e30=", "payloadType": "t", "signatures": []}});
            Bundle::parse(text.to_string().as_bytes()).map(|_| ())
        };
        let v1 = "application/vnd.dev.sigstore.bundle+json;version=0.1";
        let v2 = "application/vnd.dev.sigstore.bundle+json;version=0.2";
        let v3 = BUNDLE_MEDIA_TYPES[0];
        let key = serde_json::json!({"publicKey": {"hint": "k"}});
        assert_eq!(bundle(v3, key.clone()), Ok(()));
        assert_eq!(
            bundle(v3, serde_json::json!({})),
            Err("a bundle names neither a key nor a certificate (its verificationMaterial)".into())
        );
        let chain =
            serde_json::json!({"x509CertificateChain": {"certificates": [{"rawBytes": "AA=="}]}});
        assert_eq!(bundle(v2, chain.clone()), Ok(()));
        assert_eq!(
            bundle(v3, chain),
            Err("a v0.3 bundle carries a certificate chain; it may carry the leaf only".into())
        );
        let entries = |entry: serde_json::Value| {
            let mut m = key.clone();
            m["tlogEntries"] = serde_json::json!([entry]);
            m
        };
        let promise = serde_json::json!({"inclusionPromise": {"signedEntryTimestamp": "AA=="}});
        let proof = serde_json::json!({"inclusionProof": {"logIndex": "1"}});
        assert_eq!(bundle(v1, entries(promise.clone())), Ok(()));
        assert_eq!(
            bundle(v1, entries(proof.clone())),
            Err(
                "a v0.1 bundle's log entry has no inclusion promise, which that version requires"
                    .into()
            )
        );
        assert_eq!(bundle(v2, entries(proof.clone())), Ok(()));
        assert_eq!(bundle(v3, entries(proof)), Ok(()));
        assert_eq!(
            bundle(v3, entries(promise)),
            Err(
                "a v0.3 bundle's log entry has no inclusion proof, which that version requires"
                    .into()
            )
        );
    }

    /// A v0.1 or v0.2 bundle's chain carrying a root is refused (sigstore-python's rule and
    /// the suite's `bundle-with-root-cert_fail`): a root would vouch for itself.
    #[test]
    fn a_chain_carrying_a_root_is_refused() {
        let with_root = include_bytes!(
            "../../tests/data/sigstore-conformance/bundle-verify/bundle-with-root-cert_fail/bundle.sigstore.json"
        );
        let err = Bundle::parse(with_root)
            .unwrap()
            .certificates()
            .unwrap_err();
        let want =
            "a bundle's certificate chain holds a root certificate ('CN=sigstore,O=sigstore.dev')";
        assert!(err.starts_with(want), "{err}");
        let mut json: serde_json::Value = serde_json::from_slice(with_root).unwrap();
        let chain = &mut json["verificationMaterial"]["x509CertificateChain"]["certificates"];
        // The chain reads [leaf, root, intermediate]: without the root it is an ordinary chain.
        chain.as_array_mut().unwrap().remove(1);
        let bytes = serde_json::to_vec(&json).unwrap();
        assert_eq!(
            Bundle::parse(&bytes).unwrap().certificates().unwrap().len(),
            2
        );
    }

    /// At most 32 timestamps a bundle, as sigstore-go (docs/security.md): one more is refused.
    #[test]
    fn a_bundle_carries_at_most_32_timestamps() {
        let bundle = |n: usize| {
            let stamps = vec![serde_json::json!({"signedTimestamp": "AA=="}); n];
            let text = serde_json::json!({"mediaType": BUNDLE_MEDIA_TYPES[0],
                "verificationMaterial": {"publicKey": {"hint": "k"},
                    "timestampVerificationData": {"rfc3161Timestamps": stamps}}});
            Bundle::parse(text.to_string().as_bytes())
                .unwrap()
                .timestamps()
        };
        assert_eq!(bundle(32).unwrap().len(), 32);
        assert_eq!(
            bundle(33).unwrap_err(),
            "a bundle carries over 32 timestamps"
        );
    }

    /// The documented bound (docs/security.md), written out: a bundle of 256 KiB.
    #[test]
    fn a_bundle_is_read_up_to_256_kib() {
        assert_eq!(MAX_BUNDLE_BYTES, 262_144);
    }

    /// sigstore-go refuses an envelope without exactly one signature; one of thousands cost
    /// 19 s of CPU a digest when each was tried against each key.
    #[test]
    fn an_envelope_has_exactly_one_signature() {
        let envelope = |n: usize| Envelope {
            payload: "e30=".into(),
            payload_type: "t".into(),
            signatures: (0..n)
                .map(|_| EnvelopeSignature { sig: "AAAA".into() })
                .collect(),
        };
        let err = envelope(2).decode().err().unwrap();
        assert_eq!(
            err,
            "a DSSE envelope carries 2 signatures; a Sigstore bundle's has exactly one"
        );
        assert!(envelope(0).decode().is_err());
        assert!(envelope(5000).decode().is_err());
        assert!(envelope(1).decode().is_ok());
    }
}
