//! Trusted roots kept parsed: the public-good root (and a tenant's) is the same document at
//! every election.

use super::TrustedRoot;

/// Roots parsed lately, by their bytes' digest: the public-good root (and a tenant's) is the
/// same document at every election, and parsing it (base64, DER, the authorities' pools) is
/// done once, not per reconcile. FIFO, [`KEPT_ROOTS`] of them.
static PARSED: std::sync::Mutex<Vec<([u8; 32], TrustedRoot)>> = std::sync::Mutex::new(Vec::new());
const KEPT_ROOTS: usize = 8;

impl TrustedRoot {
    /// [`TrustedRoot::parse`], kept: a document parsed lately is not parsed again. A refused
    /// one is not kept (it is refused again, for the same reason).
    pub fn parse_kept(bytes: &[u8]) -> Result<TrustedRoot, String> {
        use sha2::Digest;
        let digest: [u8; 32] = sha2::Sha256::digest(bytes).into();
        let kept = PARSED.lock().ok().and_then(|parsed| {
            parsed
                .iter()
                .find(|(d, _)| *d == digest)
                .map(|(_, root)| root.clone())
        });
        if let Some(root) = kept {
            return Ok(root);
        }
        let root = TrustedRoot::parse(bytes)?;
        if let Ok(mut parsed) = PARSED.lock() {
            if parsed.len() == KEPT_ROOTS {
                parsed.remove(0);
            }
            parsed.push((digest, root.clone()));
        }
        Ok(root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_root_is_the_root_parsed_and_a_refused_one_is_refused_again() {
        let bytes: &[u8] = include_bytes!("../fixtures/rekor-v2/trusted_root.json");
        let kept = TrustedRoot::parse_kept(bytes).unwrap();
        let again = TrustedRoot::parse_kept(bytes).unwrap();
        let parsed = TrustedRoot::parse(bytes).unwrap();
        assert_eq!(format!("{kept:?}"), format!("{parsed:?}"));
        assert_eq!(format!("{again:?}"), format!("{parsed:?}"));
        for _ in 0..2 {
            let err = TrustedRoot::parse_kept(b"{}").unwrap_err();
            assert_eq!(err, TrustedRoot::parse(b"{}").unwrap_err());
        }
    }
}
