//! Judges the oracle's cosign cases (ORACLE_DUMP) with sigstore-verify, mapped as the judge
//! maps our policy onto sigstore-go: keys without the log; keyless with the log when required
//! or present, else none; identities as regular expressions over issuer and SAN; no SCTs.
use serde_json::Value;
use sigstore_verify::trust_root::TrustedRoot;
use sigstore_verify::types::{Artifact, Bundle, DerPublicKey, Sha256Hash};
use sigstore_verify::{PublicKeyVerificationPolicy, VerificationPolicy, Verifier};
use std::io::BufRead;

const EMPTY_ROOT: &str = r#"{"mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1", "tlogs": [], "certificateAuthorities": [], "ctlogs": [], "timestampAuthorities": []}"#;

fn judge(c: &Value) -> Result<(), String> {
    let bundle =
        Bundle::from_json(c["bundle"].as_str().unwrap()).map_err(|e| format!("bundle: {e}"))?;
    let digest = Sha256Hash::from_hex(&c["digest"].as_str().unwrap()[7..]).unwrap();
    let artifact = || Artifact::from_digest(digest);
    let keys: Vec<&str> = c["keys"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|k| k.as_str())
        .collect();
    let identities: Vec<(regex::Regex, regex::Regex)> = c["identities"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|i| {
            (
                regex::Regex::new(i["issuer"].as_str().unwrap()).unwrap(),
                regex::Regex::new(i["subject"].as_str().unwrap()).unwrap(),
            )
        })
        .collect();
    let has_cert = c["bundle"].as_str().unwrap().contains("\"certificate\"")
        || c["bundle"]
            .as_str()
            .unwrap()
            .contains("x509CertificateChain");
    if !has_cert {
        if keys.is_empty() {
            return Err("no key".into());
        }
        let root = TrustedRoot::from_json(EMPTY_ROOT).map_err(|e| e.to_string())?;
        let verifier = Verifier::new(&root).map_err(|e| e.to_string())?;
        let mut why = Vec::new();
        for pem in keys {
            let key = DerPublicKey::from_pem(pem).map_err(|e| e.to_string())?;
            let policy = PublicKeyVerificationPolicy::new(key).skip_tlog_unsafe();
            match verifier.verify(artifact(), &bundle, &policy) {
                Ok(_) => return Ok(()),
                Err(e) => why.push(e.to_string()),
            }
        }
        return Err(why.join("; "));
    }
    if identities.is_empty() {
        return Err("keys only".into());
    }
    let root = TrustedRoot::from_json(c["trustedRoot"].as_str().unwrap())
        .map_err(|e| format!("root: {e}"))?;
    let verifier = Verifier::new(&root).map_err(|e| format!("verifier: {e}"))?;
    let entries = !bundle.verification_material.tlog_entries.is_empty();
    let mut policy = VerificationPolicy::any_identity().skip_sct();
    if !c["requireTlog"].as_bool().unwrap() && !entries {
        policy = policy.skip_tlog_unsafe();
    }
    let result = verifier
        .verify(artifact(), &bundle, &policy)
        .map_err(|e| e.to_string())?;
    let issuer = result.issuer().unwrap_or_default().to_string();
    let subject = result
        .identity()
        .map(|s| s.as_str().to_string())
        .unwrap_or_default();
    if identities
        .iter()
        .any(|(i, s)| i.is_match(&issuer) && s.is_match(&subject))
    {
        Ok(())
    } else {
        Err(format!("identity mismatch: {issuer} {subject}"))
    }
}

fn main() {
    for line in std::io::stdin().lock().lines() {
        let v: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let Some(c) = v.get("cosign") else { continue };
        let verdict =
            std::panic::catch_unwind(|| judge(c)).unwrap_or_else(|_| Err("panicked".into()));
        println!(
            "{}",
            serde_json::json!({"id": v["id"], "valid": verdict.is_ok(), "reason": verdict.err().unwrap_or_default()})
        );
    }
}
