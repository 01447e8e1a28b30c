//! Tests of `reference.rs`.

use super::*;

fn canonical(image: &str) -> String {
    ImageReference::parse(image, false)
        .unwrap_or_else(|e| panic!("{image}: {e}"))
        .canonical()
}

#[test]
fn canonical_names_follow_ggcr() {
    assert_eq!(canonical("alpine"), "index.docker.io/library/alpine");
    assert_eq!(canonical("docker.io/org/x"), "index.docker.io/org/x");
    assert_eq!(
        canonical("docker.io/alpine"),
        "index.docker.io/library/alpine"
    );
    assert_eq!(
        canonical("index.docker.io/library/alpine"),
        "index.docker.io/library/alpine"
    );
    assert_eq!(canonical("ghcr.io/a/b"), "ghcr.io/a/b");
    assert_eq!(
        canonical("localhost/foo"),
        "index.docker.io/localhost/foo",
        "no '.' or ':': Docker Hub"
    );
    assert_eq!(canonical("localhost:5000/foo"), "localhost:5000/foo");
    assert_eq!(
        canonical("example.com:9999/foo/bar"),
        "example.com:9999/foo/bar"
    );
    assert_eq!(
        canonical("127.0.0.1:5001/demo/app"),
        "127.0.0.1:5001/demo/app"
    );
}

#[test]
fn rejects_schemes_tags_and_digests_with_flux_texts() {
    let err = |image: &str| ImageReference::parse(image, false).unwrap_err().to_string();
    assert_eq!(
        err("https://ghcr.io/a/b"),
        "image 'https://ghcr.io/a/b' should not include URL scheme; remove 'https://'"
    );
    assert_eq!(
        err("example.com/foo/bar:baz"),
        "image 'example.com/foo/bar:baz' should not include a tag; remove ':baz'"
    );
    assert_eq!(
        err("docker.io/foo:tag"),
        "image 'docker.io/foo:tag' should not include a tag; remove ':tag'"
    );
    assert_eq!(
        err("alpine:3.20"),
        "image 'alpine:3.20' should not include a tag; remove ':3.20'"
    );
    let digest = format!("alpine@sha256:{}", "a".repeat(64));
    assert_eq!(
        err(&digest),
        format!(
            "image '{digest}' should not include a digest; remove '@sha256:{}' (spec.image \
             names a repository: digests are not accepted in spec.image)",
            "a".repeat(64)
        )
    );
    assert_eq!(
        err("UPPER/case"),
        "could not parse reference: UPPER/case (repository paths are lower case: 'upper/case')"
    );
    assert_eq!(
        err("ghcr.io/Org/App"),
        "could not parse reference: ghcr.io/Org/App (repository paths are lower case: 'ghcr.io/org/app')"
    );
    assert_eq!(
        err("münchen.example.de/app"),
        "could not parse reference: münchen.example.de/app (the registry host \
         'münchen.example.de' is not ASCII: write it in its punycode form, \
         'xn--mnchen-3ya.example.de')"
    );
    for bad in [
        "",
        "[fe80::1%25eth0]:5000/img",
        "[fe80::1%eth0]/img",
        "a",
        "foo:",
        "foo bar",
        "ghcr.io/a/b@sha256:short",
        "host.io:port/ab",
        "localhost:5000/a",
    ] {
        assert_eq!(
            err(bad),
            format!("could not parse reference: {bad}"),
            "{bad:?}"
        );
    }
    // User information is shown as `****`, as a proxy address's is (a password may follow).
    assert_eq!(
        err("user@host.io/a/b"),
        "could not parse reference: ****@host.io/a/b"
    );
    assert!(
        ImageReference::parse(&format!("a/{}", "b".repeat(254)), false).is_err(),
        "repository over 255"
    );
}

#[test]
fn schemes_follow_insecure_and_local_hosts() {
    let scheme =
        |image: &str, insecure: bool| ImageReference::parse(image, insecure).unwrap().scheme();
    assert_eq!(scheme("ghcr.io/a/b", false), Scheme::Https);
    assert_eq!(scheme("ghcr.io/a/b", true), Scheme::Http);
    for local in [
        "localhost:5000/ab",
        "10.1.2.3/ab",
        "172.16.0.1:443/ab",
        "192.168.1.1/ab",
        "127.0.0.1:5001/ab",
        "reg.localhost/ab",
        "reg.localhost:80/ab",
    ] {
        assert_eq!(scheme(local, false), Scheme::HttpsThenHttp, "{local}");
    }
    assert_eq!(
        scheme("172.32.0.1/ab", false),
        Scheme::Https,
        "outside 172.16/12"
    );
    assert_eq!(
        scheme("[::1]:5000/ab", false),
        Scheme::HttpsThenHttp,
        "IPv6 loopback"
    );
    assert_eq!(scheme("[2001:db8::2]/ab", false), Scheme::Https);
    // ggcr's substring rule: any host containing `::1` counts as loopback. Harmless here,
    // because such hosts still try HTTPS first.
    assert_eq!(scheme("[2001:db8::1]/ab", false), Scheme::HttpsThenHttp);
}

#[test]
fn ipv6_registries_need_brackets_and_a_numeric_port() {
    let canonical = |i: &str| ImageReference::parse(i, false).map(|r| r.canonical());
    assert_eq!(
        canonical("[2001:db8::1]:5000/team/app").as_deref(),
        Ok("[2001:db8::1]:5000/team/app")
    );
    assert_eq!(
        canonical("[2001:db8::1]/team/app").as_deref(),
        Ok("[2001:db8::1]/team/app")
    );
    for bad in [
        "[2001:db8::1]x/team/app",
        "[2001:db8::1]:port/team/app",
        "[2001:db8::1/team/app",
    ] {
        assert_eq!(
            canonical(bad),
            Err(ReferenceError::Unparsable(bad.into())),
            "{bad}"
        );
    }
}

#[test]
fn path_components_follow_the_distribution_grammar() {
    for image in [
        "ghcr.io/a/../../../tags",
        "ghcr.io/a/./b",
        "ghcr.io/a//b",
        "ghcr.io/-a/b",
        "ghcr.io/a-/b",
        "ghcr.io/a/b.",
        "ghcr.io/a/.b",
        "ghcr.io/a/b___c",
        "ghcr.io/a/b_.c",
        "ghcr.io/a/",
    ] {
        let err = ImageReference::parse(image, false).unwrap_err();
        assert!(
            matches!(
                err,
                ReferenceError::UnparsableFix { .. } | ReferenceError::Unparsable(_)
            ),
            "{image}: {err}"
        );
        assert!(
            err.to_string().starts_with("could not parse reference: "),
            "{err}"
        );
    }
    let err = ImageReference::parse("ghcr.io/a/../../../tags", false).unwrap_err();
    assert!(
        err.to_string()
            .contains("the path component '..' is not allowed"),
        "{err}"
    );
    for image in [
        "ghcr.io/a--b/c",
        "ghcr.io/a__b/c.d_e-f",
        "ghcr.io/0/1",
        "alpine",
    ] {
        assert!(ImageReference::parse(image, false).is_ok(), "{image}");
    }
}

#[test]
fn a_password_in_the_image_is_never_echoed() {
    for image in [
        "user:s3cret@ghcr.io/a/b",
        "https://user:s3cret@ghcr.io/a/b",
        "user:s3cret@ghcr.io/a/b:1.0",
        "user:s3cret@Ghcr.io/A/b",
        "user:s3cret@ghcr.io",
    ] {
        let err = ImageReference::parse(image, false).unwrap_err().to_string();
        assert!(!err.contains("s3cret"), "{image}: {err}");
        assert!(err.contains("****@"), "{image}: {err}");
    }
}
