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

#[tokio::test]
async fn without_a_mirror_the_embedded_root_is_used_and_said_so() {
    let roots = PublicGoodRoot::new(Settings::default());
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Embedded);
    assert_eq!(&*current.bytes, EMBEDDED_ROOT);
    assert_eq!(
        current.stale.as_deref(),
        Some("no TUF mirror is set (--sigstore-tuf-mirror)")
    );
}

#[tokio::test]
async fn a_mirror_that_does_not_answer_leaves_the_kept_root_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = include_bytes!("../../verify/fixtures/rekor-v2/trusted_root.json");
    keep(dir.path(), fixture).unwrap();
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let settings = Settings {
        mirror: Some(format!("http://127.0.0.1:{port}").parse().unwrap()),
        anchor: None,
        cache: Some(dir.path().to_path_buf()),
    };
    let roots = PublicGoodRoot::new(settings.clone());
    assert_eq!(roots.current().source, Source::Cached);
    let current = roots.refresh().await;
    assert_eq!(current.source, Source::Cached);
    assert_eq!(&*current.bytes, &fixture[..]);
    let stale = current.stale.clone().unwrap();
    assert!(
        stale.starts_with(&format!(
            "the TUF mirror http://127.0.0.1:{port}/ could not be read ("
        )),
        "{stale}"
    );
    assert!(
        stale.ends_with("); the root kept in the store is in use"),
        "{stale}"
    );
    // A kept file that is not a trusted root is not used.
    std::fs::write(dir.path().join(TARGET), b"{}").unwrap();
    assert_eq!(
        PublicGoodRoot::new(settings).current().source,
        Source::Embedded
    );
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
