//! The statement a verified DSSE envelope carries, read only after its signature verified: an
//! in-toto statement of cosign's signing predicate, naming the image's digest.

use crate::verify::refusal::{Check, Refused};
use serde::Deserialize;

pub const IN_TOTO: &str = "application/vnd.in-toto+json";
/// The predicate `cosign sign` (v3) writes in the statement of the bundle it attaches: only a
/// statement of this type is a signature of the image. Any other predicate (an SBOM, a scan,
/// provenance) is an attestation about it, even when the release identity signed it.
pub const SIGNING_PREDICATE: &str = "https://sigstore.dev/cosign/sign/v1";
/// How much of a predicate type a refusal repeats.
const SHOWN_PREDICATE: usize = 120;

/// Checks a verified DSSE payload: an in-toto statement of cosign's signing predicate whose
/// subjects include `digest`. `cosign verify` takes any predicate; we do not (an attestation is
/// not a signature, docs/compatibility.md). Refused at [`Check::Subject`]: the envelope
/// verified, what it is about does not fit.
pub fn check_statement(payload_type: &str, payload: &[u8], digest: &str) -> Result<(), Refused> {
    let statement = read(payload_type, payload)?;
    if statement.predicate_type != SIGNING_PREDICATE {
        return Err(subject(not_a_signature(&statement.predicate_type)));
    }
    names_digest(&statement.subject, digest)
}

fn subject(reason: String) -> Refused {
    Check::Subject.refused(reason)
}

/// Checks a verified DSSE payload as an attestation: an in-toto statement of `predicate_type`
/// whose subjects include `digest`; the statement itself, for the conditions on it.
pub fn check_attestation(
    payload_type: &str,
    payload: &[u8],
    digest: &str,
    predicate_type: &str,
) -> Result<serde_json::Value, Refused> {
    let statement = read(payload_type, payload)?;
    if statement.predicate_type != predicate_type {
        let shown: String = statement
            .predicate_type
            .chars()
            .take(SHOWN_PREDICATE)
            .collect();
        return Err(subject(format!(
            "an attestation of another type ('{shown}')"
        )));
    }
    names_digest(&statement.subject, digest)?;
    Ok(statement.json)
}

/// Checks a verified DSSE payload as a statement about an artifact, whatever its predicate
/// (as sigstore-go's `verify-bundle` does): an in-toto statement whose subjects include
/// `digest`.
pub fn check_subject(payload_type: &str, payload: &[u8], digest: &str) -> Result<(), Refused> {
    names_digest(&read(payload_type, payload)?.subject, digest)
}

/// A verified payload read as an in-toto statement, whatever its predicate.
fn read(payload_type: &str, payload: &[u8]) -> Result<Statement, Refused> {
    if payload_type != IN_TOTO {
        return Err(subject(format!(
            "a signed envelope holds '{payload_type}', not an in-toto statement"
        )));
    }
    let not_in_toto = |e: String| {
        subject(format!(
            "a signed statement is not an in-toto statement ({e})"
        ))
    };
    // Read as sigstore-go reads it (no key twice, no field in-toto's statement has not), then
    // its fields.
    let json = super::strict::statement(payload).map_err(not_in_toto)?;
    let mut statement: Statement =
        serde_json::from_value(json.clone()).map_err(|e| not_in_toto(e.to_string()))?;
    statement.json = json;
    if !statement.kind.starts_with("https://in-toto.io/Statement/") {
        return Err(subject(format!(
            "a signed statement has the type '{}'",
            statement.kind
        )));
    }
    Ok(statement)
}

#[derive(Deserialize)]
struct Statement {
    #[serde(rename = "_type", default)]
    kind: String,
    #[serde(rename = "predicateType", default)]
    predicate_type: String,
    #[serde(default)]
    subject: Vec<Subject>,
    /// The whole statement, as read.
    #[serde(skip)]
    json: serde_json::Value,
}

#[derive(Deserialize)]
struct Subject {
    #[serde(default)]
    digest: std::collections::BTreeMap<String, String>,
}

/// The refusal of a statement of another predicate: what it is, cut to a line.
fn not_a_signature(predicate_type: &str) -> String {
    if predicate_type.is_empty() {
        return format!(
            "a signed statement has no predicateType; a signature's is {SIGNING_PREDICATE}"
        );
    }
    let shown: String = predicate_type.chars().take(SHOWN_PREDICATE).collect();
    let cut = if shown.len() < predicate_type.len() {
        "..."
    } else {
        ""
    };
    format!(
        "a signed statement is an attestation ('{shown}{cut}'), not a signature \
         (a signature's predicateType is {SIGNING_PREDICATE})"
    )
}

/// `digest` is one of the subjects' digests, whole.
fn names_digest(subjects: &[Subject], digest: &str) -> Result<(), Refused> {
    let (algorithm, hex) = digest.split_once(':').unwrap_or(("", digest));
    let named: Vec<String> = subjects
        .iter()
        .filter_map(|s| s.digest.get(algorithm).map(|h| format!("{algorithm}:{h}")))
        .collect();
    if named
        .iter()
        .any(|d| d.ends_with(hex) && d.len() == digest.len())
    {
        return Ok(());
    }
    let reason = match named.first() {
        Some(other) => format!("a signed statement is for {other}, not this digest"),
        None => "a signed statement names no subject with a sha256 digest".into(),
    };
    Err(subject(reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_statement_must_name_this_digest() {
        let digest = format!("sha256:{}", "1".repeat(64));
        let statement = |hex: &str| {
            serde_json::to_vec(&serde_json::json!({
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"digest": {"sha256": hex}}],
                "predicateType": SIGNING_PREDICATE, "predicate": {}
            }))
            .unwrap()
        };
        assert!(check_statement(IN_TOTO, &statement(&"1".repeat(64)), &digest).is_ok());
        let err = check_statement(IN_TOTO, &statement(&"2".repeat(64)), &digest).unwrap_err();
        // The envelope verified; what it is about does not fit: the subject check.
        assert_eq!(err.check, Check::Subject);
        let err = err.reason;
        assert!(err.contains("is for sha256:2222"), "{err}");
        // A prefix of the digest is not the digest.
        assert!(check_statement(IN_TOTO, &statement(&"1".repeat(63)), &digest).is_err());
        let err = check_statement("text/plain", &statement(&"1".repeat(64)), &digest).unwrap_err();
        let err = err.reason;
        assert!(err.contains("not an in-toto statement"), "{err}");
    }

    #[test]
    fn an_attestation_is_of_its_type_and_names_the_digest() {
        let digest = format!("sha256:{}", "1".repeat(64));
        let statement = |predicate: &str, hex: &str| {
            serde_json::to_vec(&serde_json::json!({
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"digest": {"sha256": hex}}],
                "predicateType": predicate, "predicate": {"a": 1}}))
            .unwrap()
        };
        let slsa = "https://slsa.dev/provenance/v1";
        let ones = "1".repeat(64);
        let read = check_attestation(IN_TOTO, &statement(slsa, &ones), &digest, slsa).unwrap();
        assert_eq!(read["predicate"]["a"], 1);
        let err = check_attestation(IN_TOTO, &statement(SIGNING_PREDICATE, &ones), &digest, slsa)
            .unwrap_err();
        assert_eq!(err.check, Check::Subject);
        assert_eq!(
            err.reason,
            format!("an attestation of another type ('{SIGNING_PREDICATE}')")
        );
        let other = check_attestation(IN_TOTO, &statement(slsa, &"2".repeat(64)), &digest, slsa);
        assert!(other.unwrap_err().reason.contains("is for sha256:2222"));
        assert!(check_attestation("text/plain", &statement(slsa, &ones), &digest, slsa).is_err());
    }

    /// An SBOM, a scan or provenance signed by the release identity is an attestation, not a
    /// signature: only cosign's signing predicate passes (issue 73).
    #[test]
    fn only_the_signing_predicate_is_a_signature() {
        let digest = format!("sha256:{}", "1".repeat(64));
        let statement = |predicate: Option<&str>| {
            let mut s = serde_json::json!({
                "_type": "https://in-toto.io/Statement/v1",
                "subject": [{"digest": {"sha256": "1".repeat(64)}}], "predicate": {}});
            if let Some(p) = predicate {
                s["predicateType"] = p.into();
            }
            serde_json::to_vec(&s).unwrap()
        };
        let check = |p| check_statement(IN_TOTO, &statement(p), &digest).map_err(|r| r.reason);
        assert_eq!(check(Some(SIGNING_PREDICATE)), Ok(()));
        assert_eq!(
            check(Some("https://spdx.dev/Document")),
            Err(
                "a signed statement is an attestation ('https://spdx.dev/Document'), not a \
                 signature (a signature's predicateType is https://sigstore.dev/cosign/sign/v1)"
                    .into()
            )
        );
        for other in [
            "https://cosign.sigstore.dev/attestation/v1",
            "https://slsa.dev/provenance/v1",
            "https://sigstore.dev/cosign/sign/v1/",
            "https://sigstore.dev/cosign/sign/v2",
            " https://sigstore.dev/cosign/sign/v1",
            "HTTPS://sigstore.dev/cosign/sign/v1",
        ] {
            assert!(check(Some(other)).is_err(), "{other}");
        }
        let none = check(None).unwrap_err();
        assert!(none.contains("has no predicateType"), "{none}");
        // A hostile type is repeated only so far.
        let long = "x".repeat(10_000);
        let err = check(Some(&long)).unwrap_err();
        assert!(err.len() < 300 && err.contains("x..."), "{}", err.len());
    }
}
