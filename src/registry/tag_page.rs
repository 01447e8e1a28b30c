//! One `tags/list` page, read as it is parsed: each tag is looked at in the body's own bytes
//! and only those kept are allocated, so a page costs its body plus what is kept, however many
//! tags it lists and however long they are (docs/security.md). A tag the OCI distribution spec
//! does not allow (`[a-zA-Z0-9_][a-zA-Z0-9._-]{0,127}`) is dropped and counted: no registry
//! that follows the spec can serve one, and every tag kept is then at most 128 bytes.

use super::tag_buf::{tag_cost, TagBuf};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// The longest tag the OCI distribution spec allows.
pub const MAX_TAG_LEN: usize = 128;

/// What a page held.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PageTags {
    /// Tags the page listed, kept or not.
    pub listed: usize,
    /// Tags dropped as not valid OCI tags.
    pub invalid: usize,
    /// The valid tags `keep` accepted, in the page's order.
    pub kept: TagBuf,
    /// Bytes the kept tags hold in memory ([`tag_cost`]).
    pub kept_bytes: usize,
}

/// Whether `tag` is a tag the OCI distribution spec allows.
pub fn is_valid_tag(tag: &str) -> bool {
    let bytes = tag.as_bytes();
    let word = |b: &u8| b.is_ascii_alphanumeric() || *b == b'_';
    !bytes.is_empty()
        && bytes.len() <= MAX_TAG_LEN
        && word(&bytes[0])
        && bytes[1..]
            .iter()
            .all(|b| word(b) || *b == b'.' || *b == b'-')
}

/// Why a page was not read: what the registry sent is malformed (the registry's fault), or
/// the budget refused what it held (ours to stop).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PageError {
    #[error("the tag list is not valid JSON ({0})")]
    Malformed(String),
    #[error("{0}")]
    Refused(String),
}

/// Parses a `{"name": ..., "tags": [...]}` body (`null` or missing tags is an empty page),
/// keeping the valid tags `keep` accepts.
pub fn parse_page(body: &[u8], keep: &dyn Fn(&str) -> bool) -> Result<PageTags, PageError> {
    parse_page_charged(body, keep, &mut |_| Ok(()))
}

/// [`parse_page`], charging `charge` with each kept tag's cost before keeping it: a budget
/// that refuses stops the parse with its reason, so a page never holds more than allowed.
pub fn parse_page_charged(
    body: &[u8],
    keep: &dyn Fn(&str) -> bool,
    charge: &mut dyn FnMut(usize) -> Result<(), String>,
) -> Result<PageTags, PageError> {
    let mut page = PageTags::default();
    let mut refused = None;
    let mut de = serde_json::Deserializer::from_slice(body);
    let parsed = PageSeed {
        keep,
        charge,
        refused: &mut refused,
        page: &mut page,
    }
    .deserialize(&mut de)
    .and_then(|()| de.end());
    if let Some(reason) = refused {
        return Err(PageError::Refused(reason));
    }
    parsed.map_err(|e| PageError::Malformed(e.to_string()))?;
    Ok(page)
}

struct PageSeed<'a> {
    keep: &'a dyn Fn(&str) -> bool,
    charge: &'a mut dyn FnMut(usize) -> Result<(), String>,
    refused: &'a mut Option<String>,
    page: &'a mut PageTags,
}

impl<'de> DeserializeSeed<'de> for PageSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for PageSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a tag list object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<Text<'de>>()? {
            if key.0 == "tags" {
                map.next_value_seed(TagsSeed {
                    keep: self.keep,
                    charge: &mut *self.charge,
                    refused: &mut *self.refused,
                    page: &mut *self.page,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

struct TagsSeed<'a> {
    keep: &'a dyn Fn(&str) -> bool,
    charge: &'a mut dyn FnMut(usize) -> Result<(), String>,
    refused: &'a mut Option<String>,
    page: &'a mut PageTags,
}

impl<'de> DeserializeSeed<'de> for TagsSeed<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for TagsSeed<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an array of tags or null")
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(tag) = seq.next_element::<Text<'de>>()? {
            self.page.listed += 1;
            if !is_valid_tag(&tag.0) {
                self.page.invalid += 1;
            } else if (self.keep)(&tag.0) {
                let cost = tag_cost(&tag.0);
                if let Err(reason) = (self.charge)(cost) {
                    *self.refused = Some(reason);
                    return Err(de::Error::custom("over budget"));
                }
                self.page.kept_bytes += cost;
                self.page.kept.push(&tag.0);
            }
        }
        Ok(())
    }
}

/// A JSON string, borrowed from the body unless it holds escapes. An escaped string is copied
/// only when it is a valid tag: any other comes back empty (which is no valid tag either), so
/// what the spec does not allow is never allocated, escaped or not.
struct Text<'de>(Cow<'de, str>);

impl<'de> de::Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                match is_valid_tag(s) {
                    true => Ok(Text(Cow::Owned(s.to_owned()))),
                    false => Ok(Text(Cow::Borrowed(""))),
                }
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        d.deserialize_str(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_tags_follow_the_distribution_spec() {
        for ok in ["1.0.0", "latest", "v1_2-rc.3", "_x", "A", &"a".repeat(128)] {
            assert!(is_valid_tag(ok), "{ok}");
        }
        for bad in [
            "",
            ".x",
            "-x",
            "a/b",
            "a b",
            "a:b",
            "é",
            "a\n",
            &"a".repeat(129),
        ] {
            assert!(!is_valid_tag(bad), "{bad:?}");
        }
    }

    #[test]
    fn escaped_tags_are_judged_after_unescaping() {
        let long = format!("\\u0061{}", "a".repeat(200));
        let body = format!(r#"{{"tags": ["\u0031.0", "{long}", "a\u0020b", "2.0"]}}"#);
        let page = parse_page(body.as_bytes(), &|_| true).unwrap();
        assert_eq!((page.listed, page.invalid), (4, 2));
        assert_eq!(page.kept.to_vec(), ["1.0", "2.0"]);
    }

    #[test]
    fn pages_keep_valid_accepted_tags_and_count_the_rest() {
        let body = br#"{"name":"a/b","tags":["1.0.0","x.sig","bad tag","2.0.0","\u0031.1"],"extra":{"k":[1]}}"#;
        let page = parse_page(body, &|t: &str| !t.ends_with(".sig")).unwrap();
        assert_eq!(page.kept.to_vec(), ["1.0.0", "2.0.0", "1.1"]);
        assert_eq!((page.listed, page.invalid), (5, 1));
        assert_eq!(page.kept_bytes, 5 + 5 + 3 + 3 * std::mem::size_of::<u32>());
        for empty in [
            &br#"{"name":"a","tags":null}"#[..],
            br#"{"name":"a"}"#,
            br#"{}"#,
        ] {
            assert_eq!(parse_page(empty, &|_| true).unwrap(), PageTags::default());
        }
        for bad in [
            &b"[]"[..],
            b"{\"tags\":[1]}",
            b"{\"tags\":\"x\"}",
            b"{} x",
            b"",
        ] {
            assert!(
                parse_page(bad, &|_| true).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn a_refusing_budget_stops_the_parse_with_its_reason() {
        let body = br#"{"tags":["a","b","c","d"]}"#;
        let mut charged = 0;
        let err = parse_page_charged(body, &|_| true, &mut |cost| {
            charged += cost;
            if charged > 2 * tag_cost("a") {
                Err("over the limit".into())
            } else {
                Ok(())
            }
        })
        .unwrap_err();
        assert_eq!(err, PageError::Refused("over the limit".into()));
        assert_eq!(err.to_string(), "over the limit");
        let err = parse_page(b"{\"tags\": [1]", &|_| true).unwrap_err();
        assert!(matches!(err, PageError::Malformed(_)), "{err:?}");
        assert!(
            err.to_string()
                .starts_with("the tag list is not valid JSON ("),
            "{err}"
        );
    }

    /// A page of 100 000 tags of 1000 bytes (100 MB) keeps nothing and allocates no tag.
    #[test]
    fn over_long_tags_are_never_allocated() {
        let tag = "a".repeat(1000);
        let body = format!(
            "{{\"tags\":[{}]}}",
            vec![format!("\"{tag}\""); 100_000].join(",")
        );
        let page = parse_page(body.as_bytes(), &|_| true).unwrap();
        assert_eq!(
            (page.listed, page.invalid, page.kept.len()),
            (100_000, 100_000, 0)
        );
    }
}
