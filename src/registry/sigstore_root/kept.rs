//! What the store keeps of the mirror's last read that TUF accepted: the trusted root (for a
//! reader of the store) and a copy of every file the mirror served for it (tuf.rs verifies it
//! again from them), each written whole or not at all; and forgotten when the mirror is refused.

use super::tuf::{Verified, MIRROR_COPY, TARGET};
use std::path::Path;

/// Keeps `verified` in `dir`: the copy replaced whole (written beside, then renamed over).
pub fn keep(dir: &Path, verified: &Verified) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let partial = dir.join(format!("{MIRROR_COPY}.partial"));
    let _ = std::fs::remove_dir_all(&partial);
    for (path, bytes) in &verified.files {
        // Paths the mirror's URLs gave: nothing outside the copy.
        let relative = Path::new(path);
        let inside = relative
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
        if !inside {
            continue;
        }
        let file = partial.join(relative);
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(file, bytes)?;
    }
    let copy = dir.join(MIRROR_COPY);
    let _ = std::fs::remove_dir_all(&copy);
    std::fs::rename(&partial, &copy)?;
    let root = dir.join(format!("{TARGET}.partial"));
    std::fs::write(&root, &verified.bytes)?;
    std::fs::rename(root, dir.join(TARGET))
}

/// Forgets what a now refused mirror served.
pub fn forget(dir: &Path) {
    let _ = std::fs::remove_dir_all(dir.join(MIRROR_COPY));
    let _ = std::fs::remove_file(dir.join(TARGET));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_copy_is_written_inside_and_forgotten_whole() {
        let dir = tempfile::tempdir().unwrap();
        let verified = Verified {
            bytes: b"root".to_vec(),
            expires: std::time::SystemTime::now(),
            files: vec![
                ("timestamp.json".into(), b"t".to_vec()),
                ("targets/abc.trusted_root.json".into(), b"root".to_vec()),
                ("../escape.json".into(), b"x".to_vec()),
                ("/etc/absolute.json".into(), b"x".to_vec()),
            ],
        };
        keep(dir.path(), &verified).unwrap();
        let copy = dir.path().join(MIRROR_COPY);
        assert_eq!(std::fs::read(copy.join("timestamp.json")).unwrap(), b"t");
        assert!(copy.join("targets/abc.trusted_root.json").is_file());
        assert!(!dir.path().join("escape.json").exists());
        assert_eq!(std::fs::read(dir.path().join(TARGET)).unwrap(), b"root");
        forget(dir.path());
        assert!(!copy.exists() && !dir.path().join(TARGET).exists());
    }
}
