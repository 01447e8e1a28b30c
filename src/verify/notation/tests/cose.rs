//! COSE_Sign1 envelopes as notation writes them (`notation sign --signature-format cose`),
//! made here: the headers by their labels, the chain as one certificate or an array, times as
//! CBOR tag 1; each read as notation-go reads it.

use super::super::*;
use super::{data, pki, DIGEST};
use ciborium::Value;
use rcgen::{CertificateParams, DnType, KeyPair, KeyUsagePurpose, SigningKey};

/// What a COSE envelope says.
struct Cose {
    crit: Vec<Value>,
    expiry: Option<u64>,
    /// `x5chain` as a single byte string rather than an array.
    single: bool,
    forged: bool,
}

fn cose(key: &KeyPair, chain: &[Vec<u8>], c: &Cose) -> Vec<u8> {
    let text = |s: &str| Value::Text(s.into());
    let mut protected = vec![
        (Value::Integer(1.into()), Value::Integer((-7).into())),
        (Value::Integer(2.into()), Value::Array(c.crit.clone())),
        (
            Value::Integer(3.into()),
            text("application/vnd.cncf.notary.payload.v1+json"),
        ),
        (text("io.cncf.notary.signingScheme"), text("notary.x509")),
        (
            text("io.cncf.notary.signingTime"),
            Value::Tag(1, Box::new(Value::Integer(1_735_689_600.into()))),
        ),
    ];
    if let Some(expiry) = c.expiry {
        protected.push((
            text("io.cncf.notary.expiry"),
            Value::Tag(1, Box::new(Value::Integer(expiry.into()))),
        ));
    }
    let mut header = Vec::new();
    ciborium::into_writer(&Value::Map(protected), &mut header).unwrap();
    let payload = serde_json::json!({"targetArtifact": pki::target()})
        .to_string()
        .into_bytes();
    let structure = Value::Array(vec![
        text("Signature1"),
        Value::Bytes(header.clone()),
        Value::Bytes(Vec::new()),
        Value::Bytes(payload.clone()),
    ]);
    let mut signed = Vec::new();
    ciborium::into_writer(&structure, &mut signed).unwrap();
    let message = if c.forged {
        b"another".to_vec()
    } else {
        signed
    };
    let der = key.sign(&message).unwrap();
    let fixed = p256::ecdsa::Signature::from_der(&der)
        .unwrap()
        .to_bytes()
        .to_vec();
    let x5chain = match c.single {
        true => Value::Bytes(chain[0].clone()),
        false => Value::Array(chain.iter().map(|c| Value::Bytes(c.clone())).collect()),
    };
    let unprotected = Value::Map(vec![(Value::Integer(33.into()), x5chain)]);
    let sign1 = Value::Tag(
        18,
        Box::new(Value::Array(vec![
            Value::Bytes(header),
            unprotected,
            Value::Bytes(payload),
            Value::Bytes(fixed),
        ])),
    );
    let mut out = Vec::new();
    ciborium::into_writer(&sign1, &mut out).unwrap();
    out
}

fn leaf_of(issuer: Option<&pki::Ca>) -> (KeyPair, Vec<u8>) {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(DnType::CommonName, "cose signer");
    params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
    let key = KeyPair::generate().unwrap();
    let cert = match issuer {
        Some(ca) => params.signed_by(&key, &ca.0).unwrap(),
        None => params.self_signed(&key).unwrap(),
    };
    (key, cert.der().to_vec())
}

fn trust(store: &[u8]) -> NotationTrust {
    let policy = serde_json::json!({"version": "1.0", "trustPolicies": [{"name": "p",
        "registryScopes": ["*"], "signatureVerification": {"level": "strict"},
        "trustStores": ["ca:x"], "trustedIdentities": ["*"]}]});
    use base64::Engine;
    let body = base64::engine::general_purpose::STANDARD.encode(store);
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|l| std::str::from_utf8(l).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    );
    NotationTrust::from_secret(&data(
        policy.to_string().as_bytes(),
        &[("ca.crt", pem.as_bytes())],
    ))
    .unwrap()
}

fn verify(
    trust: &NotationTrust,
    envelope: &[u8],
    now: SystemTime,
) -> Result<(String, Option<SystemTime>), String> {
    let served = super::super::super::Subject {
        media_type: "application/vnd.oci.image.manifest.v1+json".into(),
        size: 7,
    };
    trust
        .verify(
            "r.example/app",
            "application/cose",
            envelope,
            (DIGEST, Some(&served)),
            now,
        )
        .map_err(|refused| refused.to_string())
}

/// A chain as an array or as the lone certificate, the expiry tag, the critical labels and the
/// signature, each as notation-go reads it.
#[test]
fn a_cose_envelope_is_read_as_notation_writes_it() {
    let root = pki::Ca::root();
    let (key, leaf) = leaf_of(Some(&root));
    let plain = Cose {
        crit: vec![Value::Text("io.cncf.notary.signingScheme".into())],
        expiry: None,
        single: false,
        forged: false,
    };
    let now = SystemTime::now();
    let trusted = trust(&root.der());
    assert_eq!(
        verify(
            &trusted,
            &cose(&key, &[leaf.clone(), root.der()], &plain),
            now
        )
        .map(|(w, _)| w),
        Ok("CN=cose signer".into())
    );
    let forged = Cose {
        forged: true,
        ..plain
    };
    let err = verify(
        &trusted,
        &cose(&key, &[leaf.clone(), root.der()], &forged),
        now,
    )
    .unwrap_err();
    assert!(err.contains("does not verify"), "{err}");
    // A lone self-signed leaf as the one x5chain certificate.
    let (own_key, own) = leaf_of(None);
    let single = Cose {
        crit: vec![Value::Text("io.cncf.notary.signingScheme".into())],
        expiry: None,
        single: true,
        forged: false,
    };
    assert!(verify(&trust(&own), &cose(&own_key, &[own], &single), now).is_ok());
    // The expiry (CBOR tag 1): a verdict ends with it, and after it the signature is refused.
    let expiring = Cose {
        crit: vec![
            Value::Text("io.cncf.notary.signingScheme".into()),
            Value::Text("io.cncf.notary.expiry".into()),
        ],
        expiry: Some(1_893_456_000),
        single: false,
        forged: false,
    };
    let envelope = cose(&key, &[leaf.clone(), root.der()], &expiring);
    let expiry = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_893_456_000);
    let (_, until) = verify(&trusted, &envelope, now).unwrap();
    assert!(until.is_some_and(|u| u <= expiry), "{until:?}");
    let err = verify(
        &trusted,
        &envelope,
        expiry + std::time::Duration::from_secs(1),
    )
    .unwrap_err();
    assert!(err.contains("expired"), "{err}");
    // At most 8 certificates in x5chain: a ninth is refused, not dropped.
    let long = cose(
        &key,
        &vec![leaf.clone(); 9],
        &Cose {
            crit: vec![Value::Text("io.cncf.notary.signingScheme".into())],
            expiry: None,
            single: false,
            forged: false,
        },
    );
    let err = verify(&trusted, &long, now).unwrap_err();
    assert!(err.contains("over 8 certificates"), "{err}");
    // A critical label this reader does not know, named by its text or its number.
    for unknown in [Value::Text("x-unknown".into()), Value::Integer(99.into())] {
        let odd = Cose {
            crit: vec![Value::Text("io.cncf.notary.signingScheme".into()), unknown],
            expiry: None,
            single: false,
            forged: false,
        };
        let err = verify(
            &trusted,
            &cose(&key, &[leaf.clone(), root.der()], &odd),
            now,
        )
        .unwrap_err();
        assert!(err.contains("critical header"), "{err}");
    }
}
