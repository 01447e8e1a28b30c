//! `image-reflector ref` through the binary.

use crate::support::run_bin;

fn run(args: &[&str]) -> (i32, String, String) {
    let out = run_bin(args, None);
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn prints_canonical_name_and_scheme() {
    assert_eq!(
        run(&["ref", "alpine"]),
        (
            0,
            "index.docker.io/library/alpine\nhttps\n".into(),
            String::new()
        )
    );
    assert_eq!(
        run(&["ref", "registry.local:5000/team/app", "--insecure"]).1,
        "registry.local:5000/team/app\nhttp\n"
    );
    assert_eq!(
        run(&["ref", "localhost:5000/app"]).1,
        "localhost:5000/app\nhttps-then-http\n"
    );
    let (code, out, _) = run(&["ref", "docker.io/org/app", "-o", "json"]);
    assert_eq!(code, 0);
    let json: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"canonical": "index.docker.io/org/app", "scheme": "https"})
    );
}

#[test]
fn invalid_images_exit_2_with_flux_messages() {
    let (code, out, err) = run(&["ref", "https://ghcr.io/org/app"]);
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(
        err.contains(
            "image 'https://ghcr.io/org/app' should not include URL scheme; remove 'https://'"
        ),
        "{err}"
    );
    let (code, _, err) = run(&["ref", "ghcr.io/org/app:v1"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("should not include a tag; remove ':v1'"),
        "{err}"
    );
    let (code, _, err) = run(&["ref", "Ghcr.io/Org/App"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("could not parse reference: Ghcr.io/Org/App"),
        "{err}"
    );
}

#[test]
fn unparsable_images_name_the_fix() {
    let cases = [
        (
            "[fe80::1%25eth0]:5000/img".to_string(),
            "could not parse reference: [fe80::1%25eth0]:5000/img".to_string(),
        ),
        (
            "münchen.example.de/app".to_string(),
            "could not parse reference: münchen.example.de/app (the registry host \
             'münchen.example.de' is not ASCII: write it in its punycode form, \
             'xn--mnchen-3ya.example.de')"
                .to_string(),
        ),
        (
            "ghcr.io/Org/App".to_string(),
            "could not parse reference: ghcr.io/Org/App (repository paths are lower case: \
             'ghcr.io/org/app')"
                .to_string(),
        ),
        (
            "Not A/Valid::ref".to_string(),
            "could not parse reference: Not A/Valid::ref\nhint: ' ' at byte 3 cannot be in a \
             reference; an image is [host[:port]/]path"
                .to_string(),
        ),
        (
            format!("ghcr.io/org/app@sha256:{}", "a".repeat(64)),
            format!(
                "image 'ghcr.io/org/app@sha256:{0}' should not include a digest; remove \
                 '@sha256:{0}' (spec.image names a repository: digests are not accepted in \
                 spec.image)",
                "a".repeat(64)
            ),
        ),
    ];
    for (image, message) in cases {
        let (code, out, err) = run(&["ref", &image]);
        assert_eq!((code, out.as_str()), (2, ""), "{image}");
        assert!(err.contains(&message), "{image}: {err}");
    }
}
