//! What a Rekor v1 entry's body records, compared with the signature in hand as sigstore-go
//! compares them: the entry's first signature and its certificate must be this signature and
//! its leaf, and the hash it records that of the signed payload. A bundle's DSSE envelope is
//! logged as `dsse` (0.0.1) or `intoto` (0.0.2); a legacy simple-signing payload as
//! `hashedrekord` (0.0.1). A legacy attestation layer (`.att`) has no signature beside its
//! envelope: its entry is compared as cosign compares it ([`check_layer`]).

use super::{b64, Signing};
use sha2::{Digest, Sha256};

/// The body (parsed JSON) records `signing`.
pub fn check(body: &serde_json::Value, signing: &Signing<'_>) -> Result<(), String> {
    if signing.kind == "attestation" {
        return check_layer(body, signing);
    }
    let spec = &body["spec"];
    let kind = body["kind"].as_str();
    let kinds: &[&str] = match signing.kind {
        "dsse" => &["dsse", "intoto"],
        _ => &["hashedrekord"],
    };
    if !kind.is_some_and(|k| kinds.contains(&k)) {
        // sigstore-go: a DSSE envelope's entry is dsse or intoto, a payload's hashedrekord;
        // another kind's fields record something else.
        return Err(format!(
            "its body is of kind {kind:?}; this signature is logged as {}",
            kinds.join(" or ")
        ));
    }
    // The recorded payload hash (hex), signature (bytes) and certificate (PEM) of the first
    // signature, as each kind writes them.
    let (hash, signature, certificate) = match kind {
        Some("dsse") => {
            let first = &spec["signatures"][0];
            (
                &spec["payloadHash"]["value"],
                b64_field(&first["signature"]),
                b64_field(&first["verifier"]),
            )
        }
        Some("intoto") => {
            let content = &spec["content"];
            let first = &content["envelope"]["signatures"][0];
            // intoto 0.0.2 writes the envelope's signature base64 twice (a base64 field of
            // the envelope's own base64 text) and the key's PEM once.
            let twice = b64_field(&first["sig"])
                .and_then(|text| std::str::from_utf8(&text).ok().and_then(|t| b64(t).ok()));
            (
                &content["payloadHash"]["value"],
                twice,
                b64_field(&first["publicKey"]),
            )
        }
        _ => (
            &spec["data"]["hash"]["value"],
            b64_field(&spec["signature"]["content"]),
            b64_field(&spec["signature"]["publicKey"]["content"]),
        ),
    };
    let sha = format!("{:x}", Sha256::digest(signing.payload));
    if hash.as_str() != Some(sha.as_str()) {
        return Err("its body records another payload".into());
    }
    let certificate = certificate.and_then(|pem| pem_der(&pem));
    let recorded = signature.is_some_and(|s| signing.signatures.contains(&s))
        && certificate.as_deref() == Some(signing.leaf);
    if !recorded {
        return Err("its body records another signature or certificate".into());
    }
    Ok(())
}

/// A legacy attestation layer's entry, as cosign v2 and v3 compare it (`VerifyBundle`): of
/// kind `intoto` (0.0.1, which cosign v2 writes, or 0.0.2) or `dsse`, with exactly one
/// signature where the kind lists them; its recorded hash is the SHA-256 of the envelope as
/// stored (`signing.payload`), and its key or certificate is this signature's leaf.
fn check_layer(body: &serde_json::Value, signing: &Signing<'_>) -> Result<(), String> {
    let spec = &body["spec"];
    let one = |list: &serde_json::Value| match list.as_array().map(Vec::len) {
        Some(1) => Ok(list[0].clone()),
        _ => Err("its body records other than one signature".to_string()),
    };
    let (hash, key) = match (body["kind"].as_str(), body["apiVersion"].as_str()) {
        (Some("intoto"), Some("0.0.1")) => (&spec["content"]["hash"], spec["publicKey"].clone()),
        (Some("intoto"), Some("0.0.2")) => {
            let first = one(&spec["content"]["envelope"]["signatures"])?;
            (&spec["content"]["hash"], first["publicKey"].clone())
        }
        (Some("dsse"), Some("0.0.1")) => {
            let first = one(&spec["signatures"])?;
            (&spec["envelopeHash"], first["verifier"].clone())
        }
        (kind, version) => {
            return Err(format!(
                "its body is of kind {kind:?} {version:?}; an attestation is logged as intoto \
                 or dsse"
            ))
        }
    };
    let sha = format!("{:x}", Sha256::digest(signing.payload));
    if hash["algorithm"].as_str() != Some("sha256") || hash["value"].as_str() != Some(&sha) {
        return Err("its body records another envelope".into());
    }
    if b64_field(&key).and_then(|pem| pem_der(&pem)).as_deref() != Some(signing.leaf) {
        return Err("its body records another certificate".into());
    }
    Ok(())
}

/// A base64 string field's bytes.
fn b64_field(value: &serde_json::Value) -> Option<Vec<u8>> {
    value.as_str().and_then(|v| b64(v).ok())
}

/// The DER of a PEM certificate.
fn pem_der(pem: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(pem).ok()?;
    let body: String = text
        .split("-----BEGIN CERTIFICATE-----")
        .nth(1)?
        .split("-----END CERTIFICATE-----")
        .next()?
        .split_whitespace()
        .collect();
    b64(&body).ok()
}

#[cfg(test)]
mod tests;
