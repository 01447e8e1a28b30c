//! How the notation cases' envelopes are made: a JWS as notation signs it (its times, target
//! descriptor and algorithm as a case asks), and the chains and leaves a case signs with.

use super::log::b64;
use super::notation::{subject, World, MANIFEST, SIZE};
use super::pki::{at, rfc3339, Alg, Ca, Leaf, LeafSpec};
use super::DIGEST;
use base64::Engine;
use rcgen::ExtendedKeyUsagePurpose;
use serde_json::{json, Value};

pub(super) fn url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// What the JWS says besides its chain.
pub(super) struct Signing {
    pub(super) expiry: Option<i64>,
    pub(super) descriptor: Value,
    /// The header names another algorithm than the key's.
    pub(super) alg: Option<&'static str>,
    pub(super) forged: bool,
}

impl Default for Signing {
    fn default() -> Signing {
        Signing {
            expiry: None,
            descriptor: json!({"mediaType": MANIFEST, "digest": DIGEST, "size": SIZE}),
            alg: None,
            forged: false,
        }
    }
}

pub(super) fn jws(leaf: &Leaf, chain: &[Vec<u8>], signing: &Signing) -> Vec<u8> {
    let mut protected = json!({"alg": signing.alg.unwrap_or(leaf.alg.jws()),
        "cty": "application/vnd.cncf.notary.payload.v1+json",
        "crit": ["io.cncf.notary.signingScheme"],
        "io.cncf.notary.signingScheme": "notary.x509",
        "io.cncf.notary.signingTime": rfc3339(at(-60))});
    if let Some(expiry) = signing.expiry {
        protected["io.cncf.notary.expiry"] = json!(rfc3339(at(expiry)));
        protected["crit"] = json!(["io.cncf.notary.signingScheme", "io.cncf.notary.expiry"]);
    }
    let payload = json!({"targetArtifact": signing.descriptor}).to_string();
    let signed = format!(
        "{}.{}",
        url(protected.to_string().as_bytes()),
        url(payload.as_bytes())
    );
    let signature = match signing.forged {
        true => leaf.sign_fixed(b"something else"),
        false => leaf.sign_fixed(signed.as_bytes()),
    };
    let x5c: Vec<String> = chain.iter().map(|c| b64(c)).collect();
    json!({"payload": url(payload.as_bytes()), "protected": url(protected.to_string().as_bytes()),
        "header": {"x5c": x5c, "io.cncf.notary.signingAgent": "corpus"},
        "signature": url(&signature)})
    .to_string()
    .into_bytes()
}

/// Chains and leaves, each as a signature.
pub(super) fn chains(world: &World) -> Vec<(&'static str, Vec<u8>)> {
    let exact = subject("exact");
    let spec = LeafSpec::notation(&exact);
    let signed = |spec: &LeafSpec, ca: &Ca, chain: &[&Ca], signing: &Signing| {
        let leaf = Leaf::new(spec, ca);
        let mut x5c = vec![leaf.der.clone()];
        x5c.extend(chain.iter().map(|c| c.der()));
        jws(&leaf, &x5c, signing)
    };
    let plain = Signing::default();
    let with = |change: &dyn Fn(&mut LeafSpec)| {
        let mut s = spec.clone();
        change(&mut s);
        s
    };
    vec![
        ("root", signed(&spec, &world.root, &[&world.root], &plain)),
        (
            "intermediate",
            signed(
                &spec,
                &world.intermediate,
                &[&world.intermediate, &world.root],
                &plain,
            ),
        ),
        (
            "server-intermediate",
            signed(
                &spec,
                &world.server_intermediate,
                &[&world.server_intermediate, &world.root],
                &plain,
            ),
        ),
        (
            "code-intermediate",
            signed(
                &spec,
                &world.code_intermediate,
                &[&world.code_intermediate, &world.root],
                &plain,
            ),
        ),
        ("no-root-carried", signed(&spec, &world.root, &[], &plain)),
        (
            "intermediate-no-root",
            signed(&spec, &world.intermediate, &[&world.intermediate], &plain),
        ),
        (
            "untrusted",
            signed(&spec, &world.stranger, &[&world.stranger], &plain),
        ),
        (
            "leaf-server-auth",
            signed(
                &with(&|s| s.eku = vec![ExtendedKeyUsagePurpose::ServerAuth]),
                &world.root,
                &[&world.root],
                &plain,
            ),
        ),
        (
            "leaf-no-eku",
            signed(
                &with(&|s| s.eku = Vec::new()),
                &world.root,
                &[&world.root],
                &plain,
            ),
        ),
        (
            "leaf-no-digital-signature",
            signed(
                &with(&|s| s.digital_signature = false),
                &world.root,
                &[&world.root],
                &plain,
            ),
        ),
        (
            "leaf-expired",
            signed(
                &with(&|s| s.validity = (-3 * 86_400, -2 * 86_400)),
                &world.root,
                &[&world.root],
                &plain,
            ),
        ),
        (
            "leaf-not-yet",
            signed(
                &with(&|s| s.validity = (86_400, 2 * 86_400)),
                &world.root,
                &[&world.root],
                &plain,
            ),
        ),
        (
            "p384",
            signed(
                &with(&|s| s.alg = Alg::P384),
                &world.root,
                &[&world.root],
                &plain,
            ),
        ),
        (
            "forged",
            signed(
                &spec,
                &world.root,
                &[&world.root],
                &Signing {
                    forged: true,
                    ..Signing::default()
                },
            ),
        ),
        (
            "alg-mismatch",
            signed(
                &spec,
                &world.root,
                &[&world.root],
                &Signing {
                    alg: Some("ES384"),
                    ..Signing::default()
                },
            ),
        ),
    ]
}
