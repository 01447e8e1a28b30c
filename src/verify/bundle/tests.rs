use super::*;

#[test]
fn pae_is_dsses() {
    assert_eq!(pae("t", b"ab"), b"DSSEv1 1 t 2 ab".to_vec());
}

#[test]
fn only_sigstore_bundles_are_read() {
    let err = Bundle::parse(br#"{"mediaType": "application/json"}"#).unwrap_err();
    assert!(err.reason.contains("not a Sigstore bundle's"), "{err}");
    assert_eq!(err.check, Check::Format);
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
        Bundle::parse(text.to_string().as_bytes())
            .map(|_| ())
            .map_err(|refused| {
                assert_eq!(refused.check, Check::Format, "{refused}");
                refused.reason
            })
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
        Err("a v0.3 bundle's log entry has no inclusion proof, which that version requires".into())
    );
}

/// A v0.1 or v0.2 bundle's chain carrying a root is refused (sigstore-python's rule and
/// the suite's `bundle-with-root-cert_fail`): a root would vouch for itself.
#[test]
fn a_chain_carrying_a_root_is_refused() {
    let with_root = include_bytes!(
        "../../../tests/data/sigstore-conformance/bundle-verify/bundle-with-root-cert_fail/bundle.sigstore.json"
    );
    let err = Bundle::parse(with_root)
        .unwrap()
        .certificates()
        .unwrap_err();
    let want =
        "a bundle's certificate chain holds a root certificate ('CN=sigstore,O=sigstore.dev')";
    assert!(
        err.reason.starts_with(want) && err.check == Check::Format,
        "{err}"
    );
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
        Check::Format.refused("a bundle carries over 32 timestamps")
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
        Check::Format
            .refused("a DSSE envelope carries 2 signatures; a Sigstore bundle's has exactly one")
    );
    assert!(envelope(0).decode().is_err());
    assert!(envelope(5000).decode().is_err());
    assert!(envelope(1).decode().is_ok());
}

/// Standard, padded base64 only: the unpadded, URL-safe and line-broken forms protojson also
/// reads are refused, as are spaces (docs/compatibility.md).
#[test]
fn a_bundles_base64_is_read_strictly() {
    assert_eq!(decode("+/8=").unwrap(), vec![0xfb, 0xff]);
    for text in ["+/8", "-_8=", "+/\n8=", " +/8=", "+/8= "] {
        assert!(decode(text).is_err(), "{text:?}");
    }
}
