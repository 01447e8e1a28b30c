//! What a gated election learnt about each image, by digest (`images.jsonl` beside the
//! repository's tags, docs/store.md): its creation time, its platforms, and the signature
//! verdicts per set of trusted keys. A digest names its content, so the creation time and
//! platforms never change; a steady state then costs no registry request
//! (docs/imagepolicy.md, "Gated election").
//!
//! Advisory, like `digests.txt`: a lost or unreadable file costs requests, never a wrong
//! election, so it is written without fsync and malformed lines are skipped. Bounded: at most
//! `MAX_IMAGES` digests (the oldest records go first), a few verdicts each, and a
//! file over `MAX_IMAGE_FILE_BYTES` is not read.

use serde::{Deserialize, Serialize};

/// Digests remembered per repository: a gated walk looks at up to 50 candidates per policy.
pub const MAX_IMAGES: usize = 256;
/// Signature verdicts kept per image (one per set of trusted keys that asked).
pub const MAX_VERDICTS: usize = 4;
/// Platforms kept per image; an index naming more is recorded as its first ones.
pub const MAX_IMAGE_PLATFORMS: usize = 64;
/// The largest file read back.
pub const MAX_IMAGE_FILE_BYTES: u64 = 4 << 20;
/// The longest reason kept in a verdict.
const MAX_REASON_LEN: usize = 512;

/// One image's facts. `platforms` are `os/arch[/variant]` strings.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ImageFacts {
    pub digest: String,
    /// `created` and `platforms` were read (a verify-only policy records verdicts alone).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inspected: bool,
    /// Unix seconds; `None`: the image says nothing (known, not unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<PlatformFact>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub signatures: Vec<SignatureVerdict>,
    /// When these facts were recorded (Unix seconds): the oldest go first.
    #[serde(default)]
    pub recorded_at: i64,
}

/// A platform an image provides (`os/arch[/variant]`) and that platform image's creation
/// time, when known.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlatformFact {
    pub platform: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<i64>,
}

/// What verifying an image's signatures against one set of keys found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignatureVerdict {
    /// The fingerprint of the set of trusted keys.
    pub keys: String,
    /// The key (Secret entry) a valid signature was made with; `None`: not verified.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_by: Option<String>,
    /// Why it was not verified.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Unix seconds: a negative verdict is looked at again once it is old.
    pub checked_at: i64,
    /// Unix seconds until which a valid signature holds (a notation signature's expiry, its
    /// certificate's, at `strict`); `None`: for good.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<i64>,
    /// Unix seconds: when a trusted log or timestamp authority says the valid signature was
    /// made (keyless signatures), the clock `minAge` also reads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_at: Option<i64>,
}

impl ImageFacts {
    /// The verdict for the key set `keys`, if any.
    pub fn verdict(&self, keys: &str) -> Option<&SignatureVerdict> {
        self.signatures.iter().find(|v| v.keys == keys)
    }

    /// Records `verdict`, replacing the one for the same keys; the oldest go beyond the bound.
    pub fn set_verdict(&mut self, mut verdict: SignatureVerdict) {
        verdict.reason = cut(&verdict.reason, MAX_REASON_LEN);
        self.signatures.retain(|v| v.keys != verdict.keys);
        self.signatures.push(verdict);
        self.signatures.sort_by_key(|v| v.checked_at);
        while self.signatures.len() > MAX_VERDICTS {
            self.signatures.remove(0);
        }
    }

    /// Whether the facts can be written and read back as they are.
    fn valid(&self) -> bool {
        let digest = self.digest.split_once(':').is_some_and(|(a, h)| {
            !a.is_empty() && h.len() <= 128 && h.bytes().all(|b| b.is_ascii_hexdigit())
        });
        digest
            && self.platforms.len() <= MAX_IMAGE_PLATFORMS
            && self.platforms.iter().all(|p| p.platform.len() <= 64)
            && self.signatures.len() <= MAX_VERDICTS
            && self
                .signatures
                .iter()
                .all(|v| v.keys.len() <= 128 && v.reason.len() <= MAX_REASON_LEN)
    }
}

/// The facts of one repository, oldest record first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageFactsFile(Vec<ImageFacts>);

impl ImageFactsFile {
    /// Reads one JSON object per line; lines that are not facts are skipped.
    pub fn parse(text: &str) -> ImageFactsFile {
        let mut file = ImageFactsFile::default();
        for line in text.lines() {
            if let Ok(facts) = serde_json::from_str::<ImageFacts>(line) {
                file.record(facts);
            }
        }
        file
    }

    pub fn render(&self) -> String {
        let mut text = String::new();
        for facts in &self.0 {
            if let Ok(line) = serde_json::to_string(facts) {
                text.push_str(&line);
                text.push('\n');
            }
        }
        text
    }

    /// Each image's facts.
    pub fn iter(&self) -> impl Iterator<Item = &ImageFacts> {
        self.0.iter()
    }

    pub fn get(&self, digest: &str) -> Option<&ImageFacts> {
        self.0.iter().find(|f| f.digest == digest)
    }

    /// Records `facts`, replacing what was known of the digest; beyond `MAX_IMAGES` the oldest
    /// records go.
    pub fn record(&mut self, facts: ImageFacts) {
        if !facts.valid() {
            return;
        }
        self.0.retain(|f| f.digest != facts.digest);
        self.0.push(facts);
        self.0.sort_by_key(|f| f.recorded_at);
        while self.0.len() > MAX_IMAGES {
            self.0.remove(0);
        }
    }
}

fn cut(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_string();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(n: usize, recorded_at: i64) -> ImageFacts {
        ImageFacts {
            digest: format!("sha256:{n:064x}"),
            created: Some(1_700_000_000),
            inspected: true,
            platforms: vec![PlatformFact {
                platform: "linux/amd64".into(),
                created: None,
            }],
            recorded_at,
            ..Default::default()
        }
    }

    #[test]
    fn round_trips_and_keeps_the_newest_records() {
        let mut file = ImageFactsFile::default();
        for n in 0..MAX_IMAGES + 5 {
            file.record(facts(n, n as i64));
        }
        let read = ImageFactsFile::parse(&file.render());
        assert_eq!(read, file);
        assert!(read.get(&facts(0, 0).digest).is_none(), "the oldest went");
        assert!(read.get(&facts(MAX_IMAGES + 4, 0).digest).is_some());
        assert!(file.render().len() as u64 <= MAX_IMAGE_FILE_BYTES);
    }

    #[test]
    fn verdicts_are_per_key_set_and_bounded() {
        let mut f = facts(1, 1);
        for i in 0..MAX_VERDICTS as i64 + 2 {
            f.set_verdict(SignatureVerdict {
                valid_until: None,
                keys: format!("k{i}"),
                verified_by: None,
                reason: "x".repeat(10_000),
                checked_at: i,
                signed_at: None,
            });
        }
        assert_eq!(f.signatures.len(), MAX_VERDICTS);
        assert!(f.verdict("k0").is_none());
        assert_eq!(f.verdict("k5").unwrap().reason.len(), MAX_REASON_LEN);
    }

    #[test]
    fn skips_what_is_not_a_fact() {
        let good = serde_json::to_string(&facts(7, 3)).unwrap();
        let text = format!(
            "not json\n{{\"digest\":\"sha256:zz\"}}\n{good}\n{{\"digest\":\"sha256:aa\",\"platforms\":[{}]}}\n",
            vec!["{\"platform\":\"p\"}"; MAX_IMAGE_PLATFORMS + 1].join(",")
        );
        let file = ImageFactsFile::parse(&text);
        assert_eq!(file.0, vec![facts(7, 3)]);
    }
}
