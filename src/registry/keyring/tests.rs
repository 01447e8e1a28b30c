//! Tests of `keyring.rs`.

use super::*;

fn auth(user: &str, pass: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(format!("{user}:{pass}"))
}

fn keyring(entries: &[(&str, &str)]) -> Keyring {
    let auths: serde_json::Map<String, serde_json::Value> = entries
        .iter()
        .map(|(k, u)| (k.to_string(), serde_json::json!({ "auth": auth(u, "pw") })))
        .collect();
    let json = serde_json::json!({ "auths": auths }).to_string();
    let mut ring = Keyring::new();
    let data = BTreeMap::from([(".dockerconfigjson".to_string(), json.into_bytes())]);
    ring.add_secret("kubernetes.io/dockerconfigjson", &data)
        .unwrap();
    ring
}

fn user(ring: &Keyring, target: &str) -> Option<String> {
    ring.lookup(target).map(|c| c.username.clone())
}

#[test]
fn matches_like_the_kubelet() {
    let ring = keyring(&[
        ("https://index.docker.io/v1/", "hub"),
        ("docker.io", "short-hub"),
        ("*.example.com", "glob"),
        ("registry.example.com:5000", "port"),
        ("registry.example.com/team", "team"),
        ("registry.example.com/team/app", "app"),
        ("http://10.0.0.1:5000/v2/", "ip"),
    ]);
    assert_eq!(
        user(&ring, "index.docker.io/library/alpine").as_deref(),
        Some("hub")
    );
    assert_eq!(
        user(&ring, "docker.io/library/alpine").as_deref(),
        Some("short-hub")
    );
    assert_eq!(
        user(&ring, "registry.example.com/team/app").as_deref(),
        Some("app"),
        "the longer path sorts first in reverse order"
    );
    assert_eq!(
        user(&ring, "registry.example.com/team/x").as_deref(),
        Some("team")
    );
    assert_eq!(
        user(&ring, "registry.example.com/other").as_deref(),
        Some("glob")
    );
    assert_eq!(
        user(&ring, "registry.example.com:5000/x").as_deref(),
        Some("port")
    );
    assert_eq!(
        user(&ring, "a.b.example.com/x"),
        None,
        "label count differs"
    );
    assert_eq!(user(&ring, "example.com/x"), None);
    assert_eq!(user(&ring, "10.0.0.1:5000/x").as_deref(), Some("ip"));
    assert_eq!(user(&ring, "10.0.0.1/x"), None, "port differs");
}

#[test]
fn reads_both_secret_types_and_ignores_others() {
    let mut ring = Keyring::new();
    let cfg = serde_json::json!({ "ghcr.io": { "username": "u", "password": "p" } });
    ring.add_secret(
        "kubernetes.io/dockercfg",
        &BTreeMap::from([(".dockercfg".to_string(), cfg.to_string().into_bytes())]),
    )
    .unwrap();
    ring.add_secret(
        "Opaque",
        &BTreeMap::from([(".dockerconfigjson".to_string(), b"{".to_vec())]),
    )
    .unwrap();
    assert_eq!(
        ring.lookup("ghcr.io/org/app"),
        Some(&Credentials {
            username: "u".into(),
            password: "p".into()
        })
    );
    let err = Keyring::new()
        .add_config_json(br#"{"auths":{"ghcr.io":{"auth":"%%%"}}}"#)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid docker config: the 'auth' of ghcr.io is not base64"
    );
}

/// The former recursive matcher: exact but exponential; the reference on short inputs.
fn reference(pattern: &[u8], text: &[u8]) -> bool {
    match pattern.split_first() {
        None => text.is_empty(),
        Some((b'*', rest)) => (0..=text.len()).any(|i| reference(rest, &text[i..])),
        Some((b'?', rest)) => !text.is_empty() && reference(rest, &text[1..]),
        Some((b'[', rest)) => {
            let Some(close) = rest.iter().position(|&b| b == b']') else {
                return false;
            };
            let Some((&c, text_rest)) = text.split_first() else {
                return false;
            };
            let (negated, set) = match rest[..close].split_first() {
                Some((b'^', set)) => (true, set),
                _ => (false, &rest[..close]),
            };
            let mut hit = false;
            let mut i = 0;
            while i < set.len() {
                if i + 2 < set.len() && set[i + 1] == b'-' {
                    hit |= (set[i]..=set[i + 2]).contains(&c);
                    i += 3;
                } else {
                    hit |= set[i] == c;
                    i += 1;
                }
            }
            hit != negated && reference(&rest[close + 1..], text_rest)
        }
        Some((b'\\', rest)) if !rest.is_empty() => {
            text.first() == Some(&rest[0]) && reference(&rest[1..], &text[1..])
        }
        Some((&p, rest)) => text.first() == Some(&p) && reference(rest, &text[1..]),
    }
}

proptest::proptest! {
    #[test]
    fn the_matcher_agrees_with_the_reference(
        pattern in "[ab*?\\\\\\[\\]^-]{0,8}",
        text in "[ab*?\\\\\\[\\]^-]{0,8}",
    ) {
        proptest::prop_assert_eq!(
            glob_match(pattern.as_bytes(), text.as_bytes()),
            reference(pattern.as_bytes(), text.as_bytes()),
            "{} {}", pattern, text
        );
    }
}

#[test]
fn keys_of_any_shape_match_in_linear_time() {
    let label = "a".repeat(64);
    for pattern in [
        format!("{}b", "*".repeat(64)),
        format!("{}b", "*a".repeat(32)),
        format!("{}b", "*[a-z]".repeat(32)),
        format!("{}b", "*?".repeat(32)),
    ] {
        // Exponential matching of these took seconds at 12 stars; here they are a
        // 64 × 64 table each. The result is the point; the suite's watchdog guards the time.
        assert!(
            !glob_match(pattern.as_bytes(), label.as_bytes()),
            "{pattern}"
        );
    }
    assert!(glob_match(b"*a*a*a*", label.as_bytes()));
    // Megabyte keys: stars collapse, sets are tables, and a key needing more bytes than
    // the label has is refused before the walk.
    for (pattern, want) in [
        ("*".repeat(1 << 20), true),
        (format!("{}b", "*a".repeat(1 << 19)), false),
        (format!("[{}]*", "a-z".repeat(1 << 18)), true),
        (format!("{}*", "?".repeat(1 << 20)), false),
    ] {
        assert_eq!(glob_match(pattern.as_bytes(), label.as_bytes()), want);
    }
}

#[test]
fn globs_follow_go_filepath_match() {
    for (p, t, want) in [
        ("*", "abc", true),
        ("a*c", "abbc", true),
        ("a?c", "abc", true),
        ("a?c", "ac", false),
        ("[a-c]x", "bx", true),
        ("[^a-c]x", "bx", false),
        ("\\*", "*", true),
        ("[ab", "a", false),
    ] {
        assert_eq!(glob_match(p.as_bytes(), t.as_bytes()), want, "{p} {t}");
    }
}
