//! Every fuzz target's seed corpus and past findings (`fuzz/corpus/<target>`,
//! `fuzz/regressions/<target>`) replayed on the stable toolchain, no fuzzer needed. Each input
//! runs under a watchdog of seconds: a parser that turns exponential again (the keyring's
//! twelve-star key took 40 s) fails the suite instead of hanging it.

use image_reflector::fuzzing::{Target, TARGETS};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Generous on purpose: each input takes micro- to milliseconds in a debug build.
const WATCHDOG: Duration = Duration::from_secs(10);

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| entries.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    files
}

/// Runs `target` on `data` in its own thread; the finding, if any, names the file.
fn replay(target: Target, file: &Path, watchdog: Duration) -> Result<(), String> {
    let data = std::fs::read(file).unwrap();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || {
        let outcome = std::panic::catch_unwind(|| target(&data));
        let _ = done.send(outcome.is_ok());
    });
    match finished.recv_timeout(watchdog) {
        Ok(true) => Ok(()),
        Ok(false) => Err(format!("{}: panicked", file.display())),
        Err(_) => Err(format!(
            "{}: still running after {watchdog:?}",
            file.display()
        )),
    }
}

#[test]
fn every_corpus_and_finding_replays_within_the_watchdog() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    let mut failures = Vec::new();
    let mut replayed = 0;
    for (name, target) in TARGETS {
        let seeds = inputs(&root.join("corpus").join(name));
        assert!(!seeds.is_empty(), "fuzz target {name} has no seed corpus");
        let findings = inputs(&root.join("regressions").join(name));
        for file in seeds.iter().chain(&findings) {
            replayed += 1;
            if let Err(failure) = replay(*target, file, WATCHDOG) {
                failures.push(failure);
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        replayed >= TARGETS.len() * 3,
        "only {replayed} inputs replayed"
    );
}

#[test]
fn every_target_has_a_fuzz_binary() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/Cargo.toml"))
            .unwrap();
    for (name, _) in TARGETS {
        assert!(
            manifest.contains(&format!("name = \"{name}\"")),
            "fuzz/Cargo.toml has no [[bin]] for {name}"
        );
        let source = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/fuzz_targets")
            .join(format!("{name}.rs"));
        let text = std::fs::read_to_string(&source).unwrap();
        assert!(text.contains(&format!("image_reflector::fuzzing::{name}(data)")));
    }
}

#[test]
fn the_watchdog_catches_a_slow_input() {
    fn slow(_: &[u8]) {
        std::thread::sleep(Duration::from_secs(2));
    }
    let dir = std::env::temp_dir().join(format!("fuzz-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("input");
    std::fs::write(&file, b"x").unwrap();
    let err = replay(slow, &file, Duration::from_millis(100)).unwrap_err();
    assert!(err.contains("still running"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}
