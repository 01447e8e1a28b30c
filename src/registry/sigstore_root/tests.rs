//! What the root provider does without a mirror, or with one that does not answer; reading a
//! real TUF repository (made and served by go-tuf, `make sigtools`) is
//! tests/it/signatures/public_good.rs's.

use super::*;

#[test]
fn the_embedded_roots_are_sigstores() {
    let root = crate::verify::keyless::TrustedRoot::parse(EMBEDDED_ROOT).unwrap();
    assert!(!root.logs.is_empty() && !root.ctlogs.is_empty());
    let anchor: serde_json::Value = serde_json::from_slice(EMBEDDED_ANCHOR).unwrap();
    assert_eq!(anchor["signed"]["_type"], "root");
    assert_eq!(MAX_ROOT_BYTES, 262_144);
}

/// docs/imagepolicy.md: read every 24 hours, 10 minutes after a failed read, 60 s at most.
#[test]
fn the_mirror_is_read_on_the_documented_schedule() {
    assert_eq!(REFRESH_EVERY, Duration::from_secs(86_400));
    assert_eq!(RETRY_AFTER_FAILURE, Duration::from_secs(600));
    assert_eq!(READ_DEADLINE, Duration::from_secs(60));
}

#[tokio::test]
async fn without_a_mirror_the_embedded_root_is_used_and_said_so() {
    let roots = PublicGoodRoot::new(Settings::default());
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Embedded);
    assert_eq!(current.bytes.as_deref(), Some(EMBEDDED_ROOT));
    assert_eq!(current.expires, None);
    assert_eq!(
        current.stale.as_deref(),
        Some("no TUF mirror is set (--sigstore-tuf-mirror); the root embedded in the binary is in use")
    );
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    closed.local_addr().unwrap().port()
}

/// The mirror out of reach and nothing TUF verified in the store: a `trusted_root.json` alone
/// there is not used (nothing vouches for it), the embedded root is, under the embedded
/// anchor only; under another anchor there is no root.
#[tokio::test]
async fn a_mirror_out_of_reach_with_nothing_verified_kept_never_trusts_an_unvouched_root() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = include_bytes!("../../verify/fixtures/rekor-v2/trusted_root.json");
    std::fs::write(dir.path().join(TARGET), fixture).unwrap();
    let port = closed_port();
    let mut settings = Settings {
        mirror: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
        anchor: None,
        cache: Some(dir.path().to_path_buf()),
    };
    let current = PublicGoodRoot::new(settings.clone()).refresh().await;
    assert_eq!(current.source, Source::Embedded, "{:?}", current.stale);
    assert_eq!(current.bytes.as_deref(), Some(EMBEDDED_ROOT));
    let stale = current.stale.clone().unwrap();
    let unread = format!("the TUF mirror http://127.0.0.1:{port}/ could not be read (");
    assert!(stale.starts_with(&unread), "{stale}");
    assert!(
        stale.ends_with("; the root embedded in the binary is in use"),
        "{stale}"
    );
    // Another instance's anchor: never the public-good root shipped in the binary.
    settings.anchor = Some(EMBEDDED_ANCHOR.to_vec());
    let roots = PublicGoodRoot::new(settings);
    assert_eq!(roots.current().source, Source::Nothing, "before any read");
    let current = roots.refresh().await;
    assert_eq!(
        (current.source, current.bytes.is_none()),
        (Source::Nothing, true)
    );
    let stale = current.stale.clone().unwrap();
    assert!(stale.starts_with(&unread), "{stale}");
    assert!(
        stale.contains("no root verified under the --sigstore-tuf-root anchor is kept"),
        "{stale}"
    );
}

/// A root whose metadata expired is expired at once, whatever the next read's schedule.
#[test]
fn a_root_expires_with_its_metadata() {
    let now = SystemTime::now();
    let current = |expires| Current {
        bytes: Some(EMBEDDED_ROOT.into()),
        source: Source::Mirror,
        stale: None,
        expires,
    };
    assert!(current(Some(now)).expired(now));
    assert!(!current(Some(now + Duration::from_secs(1))).expired(now));
    assert!(
        !current(None).expired(now),
        "the embedded root has no TUF expiry"
    );
}

/// The schedule of reads: the first call and any call with an expired root wait for one; a
/// good root is read again after 24 hours, a stale one 10 minutes after the failed read, each
/// in the background; without a mirror, never in the background.
#[test]
fn a_read_is_due_on_its_schedule() {
    let now = SystemTime::now();
    let root = |stale: Option<&str>, expires| Current {
        bytes: Some(EMBEDDED_ROOT.into()),
        source: Source::Mirror,
        stale: stale.map(str::to_string),
        expires,
    };
    let last = std::time::Instant::now();
    let after = |secs| last + Duration::from_secs(secs);
    let good = root(None, Some(now + Duration::from_secs(3_600)));
    let stale = root(Some("unreachable"), None);
    let due = |last, current: &Current, mirror, at| read_due(last, current, mirror, now, at);
    assert_eq!(due(None, &good, true, last), MirrorRead::Now);
    assert_eq!(due(None, &good, false, last), MirrorRead::Now);
    let expired = root(None, Some(now));
    assert_eq!(due(Some(last), &expired, true, last), MirrorRead::Now);
    assert_eq!(due(Some(last), &expired, false, last), MirrorRead::Now);
    // (the root, whether a mirror is set, seconds since the last read, what is due)
    let schedule = [
        (&good, true, 86_399, MirrorRead::NotYet),
        (&good, true, 86_400, MirrorRead::InBackground),
        (&good, false, 86_400, MirrorRead::NotYet),
        (&stale, true, 599, MirrorRead::NotYet),
        (&stale, true, 600, MirrorRead::InBackground),
        (&stale, false, 600, MirrorRead::NotYet),
    ];
    for (current, mirror, secs, read) in schedule {
        let stale = current.stale.is_some();
        assert_eq!(
            due(Some(last), current, mirror, after(secs)),
            read,
            "stale {stale}, mirror {mirror}, {secs} s"
        );
    }
}

/// A mirror's file is read up to 4 MiB: one byte more fails the read, whatever tough's own
/// limits would say later.
#[tokio::test]
async fn a_mirrors_file_is_read_up_to_4_mib() {
    use std::io::{Read, Write};
    use tough::Transport;
    assert_eq!(transport::MAX_FILE_BYTES, 4_194_304);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for (size, stream) in [transport::MAX_FILE_BYTES, transport::MAX_FILE_BYTES + 1]
            .into_iter()
            .zip(listener.incoming())
        {
            let mut stream = stream.unwrap();
            let mut request = [0u8; 1024];
            let _ = stream.read(&mut request);
            let head =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {size}\r\nConnection: close\r\n\r\n");
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&vec![b'x'; size]);
        }
    });
    let http = transport::Http::new().unwrap();
    let url: url::Url = format!("http://127.0.0.1:{port}/timestamp.json")
        .parse()
        .unwrap();
    let whole = http.fetch(url.clone()).await;
    let bytes = tough::IntoVec::into_vec(whole.unwrap()).await.unwrap();
    assert_eq!(bytes.len(), transport::MAX_FILE_BYTES);
    let err = http.fetch(url).await.err().unwrap();
    assert!(format!("{err:?}").contains("over 4194304 bytes"), "{err:?}");
}

/// A loopback mirror answering every path with `answer(path)`: a status and a body.
fn mirror(answer: fn(&str) -> (u16, &'static str)) -> url::Url {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            let path = line.split(' ').nth(1).unwrap_or("/").to_string();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let (status, body) = answer(&path);
            let head = format!(
                "HTTP/1.1 {status} X\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(body.as_bytes());
        }
    });
    format!("http://127.0.0.1:{port}/").parse().unwrap()
}

/// TUF asks whether a next root exists: "not found" (404, or 403 as S3 answers) is an answer,
/// any other failure the mirror out of reach; what was served is recorded, in order.
#[tokio::test]
async fn a_mirrors_missing_file_is_an_answer_and_its_failure_is_not() {
    use tough::{Transport, TransportErrorKind};
    let base = mirror(|path| match path {
        "/missing" => (404, ""),
        "/forbidden" => (403, ""),
        "/broken" => (500, "no"),
        _ => (200, "served"),
    });
    let http = transport::Http::new().unwrap();
    let fetch = |path: &str| http.fetch(base.join(path).unwrap());
    let body = tough::IntoVec::into_vec(fetch("file").await.unwrap())
        .await
        .unwrap();
    assert_eq!(body, b"served");
    for missing in ["missing", "forbidden"] {
        let kind = fetch(missing).await.err().unwrap().kind();
        assert_eq!(kind, TransportErrorKind::FileNotFound, "{missing}");
    }
    assert_eq!(http.failure(), None);
    let recorded = http.recorded().lock().unwrap().clone();
    assert_eq!(
        recorded,
        vec![(base.join("file").unwrap(), b"served".to_vec())]
    );
    let kind = fetch("broken").await.err().unwrap().kind();
    assert_eq!(kind, TransportErrorKind::Other);
    let said = http.failure().unwrap();
    assert_eq!(
        said,
        format!(
            "{}: HTTP 500 Internal Server Error",
            base.join("broken").unwrap()
        )
    );
    fetch("missing").await.err().unwrap();
    fetch("broken").await.err().unwrap();
    assert_eq!(http.failure(), Some(said), "the first failure is kept");
}

/// A mirror that answers is judged by TUF: here nothing newer than the embedded anchor
/// (version 14, expired in June 2026) is served, so TUF refuses it, whatever the answer for
/// the next root ("not found" either way); a mirror failing its answers is out of reach.
#[tokio::test]
async fn what_a_mirror_answers_is_refused_and_its_failure_is_out_of_reach() {
    let trust = tuf::Trust {
        anchor: EMBEDDED_ANCHOR,
        datastore: None,
    };
    for base in [mirror(|_| (404, "")), mirror(|_| (403, ""))] {
        match tuf::online(&trust, &base).await {
            Err(tuf::Failure::Refused(why)) => assert!(why.contains("xpired"), "{why}"),
            other => panic!("{base}: {other:?}"),
        }
    }
    let failing = mirror(|_| (500, "no"));
    match tuf::online(&trust, &failing).await {
        // tough took the next root it could not fetch for none, then judged the anchor: the
        // transport's failure makes that out of reach, not a refusal, and is the reason.
        Err(tuf::Failure::Unreachable(why)) => {
            let next = failing.join("15.root.json").unwrap();
            assert_eq!(why, format!("{next}: HTTP 500 Internal Server Error"));
        }
        other => panic!("{other:?}"),
    }
}

/// The store's copy is read only when one is kept (its timestamp.json); one kept is judged by
/// TUF as the mirror is.
#[tokio::test]
async fn the_kept_copy_is_read_only_when_kept() {
    let trust = tuf::Trust {
        anchor: EMBEDDED_ANCHOR,
        datastore: None,
    };
    let dir = tempfile::tempdir().unwrap();
    let none = tuf::kept(&trust, dir.path()).await.err();
    let expected = tuf::Failure::Unreachable("no copy is kept in the store".into());
    assert_eq!(none, Some(expected));
    let copy = dir.path().join(tuf::MIRROR_COPY);
    std::fs::create_dir_all(copy.join("targets")).unwrap();
    std::fs::write(copy.join("timestamp.json"), b"{}").unwrap();
    match tuf::kept(&trust, dir.path()).await {
        Err(tuf::Failure::Refused(why)) => assert!(why.contains("xpired"), "{why}"),
        other => panic!("{other:?}"),
    }
}

/// tough's bounds, by their numbers.
#[test]
fn tough_reads_within_its_stated_bounds() {
    assert_eq!(tuf::LIMITS.max_root_size, 1_048_576);
    assert_eq!(tuf::LIMITS.max_targets_size, 4_194_304);
    assert_eq!(tuf::LIMITS.max_timestamp_size, 1_048_576);
    assert_eq!(tuf::LIMITS.max_root_updates, 1_024);
}

/// A read that puts another root in use (here the embedded one after none) is told to the
/// subscribers, once; a read that keeps the same root is not.
#[tokio::test]
async fn another_root_put_in_use_is_told() {
    let roots = PublicGoodRoot::new(Settings::default());
    let mut changes = roots.changes();
    roots.refresh().await;
    assert!(!changes.has_changed().unwrap(), "the same embedded root");
    *roots.current.write().unwrap() = Arc::new(Current::nothing("revoked".into()));
    let current = roots.refresh().await;
    assert_eq!(current.bytes.as_deref(), Some(EMBEDDED_ROOT));
    assert!(changes.has_changed().unwrap());
    assert_eq!(*changes.borrow_and_update(), 1);
    roots.refresh().await;
    assert!(!changes.has_changed().unwrap());
}
