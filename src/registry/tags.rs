//! Tag listing (docs/imagerepository.md): `tags/list?n=1000`, following `Link: <...>;
//! rel="next"` (relative or absolute) until there is none. Beyond Flux: a registry that rejects
//! the page size (Quay's `TOO_MANY_TAGS_REQUESTED`) is asked again with `n=100`; a `next` URL
//! seen before, too many pages or tags, or an oversized body stop the listing with an error.
//! A listing never returns part of the tags as if it were all of them.

use super::body::status_error;
use super::budget::Held;
use super::client::{Redirects, RegistryClient, Target};
use super::describe::url_host;
use super::tag_buf::TagBuf;
use super::tag_page::PageTags;
use super::RegistryError;
use crate::reference::ImageReference;
use reqwest::header::LINK;
use reqwest::{Method, StatusCode, Url};
use std::collections::HashSet;

/// Statistics of a listing, for logs and benchmarks.
#[derive(Debug, Default)]
pub struct Listing {
    /// The tags kept, in the registry's order.
    pub tags: TagBuf,
    /// Tags the registry listed, kept or not.
    pub listed: usize,
    /// Tags dropped as not valid OCI tags (over 128 bytes, other characters).
    pub invalid: usize,
    /// Requests made, page-size retries included.
    pub requests: usize,
    /// The memory the kept tags hold, reserved from the process-wide budget until the listing
    /// is dropped.
    pub held: Held,
}

impl RegistryClient {
    /// Every tag of the repository, in the registry's order.
    pub async fn list_tags(&self, image: &ImageReference) -> Result<Vec<String>, RegistryError> {
        Ok(self.list_tags_with(image, |_| true).await?.tags.to_vec())
    }

    /// Lists the tags, keeping those `keep` accepts (the exclusion list) as each page
    /// arrives, so memory holds the kept tags and one page, never every raw body. Parsing a
    /// page and filtering it run on the blocking pool: a page may be 64 MiB and the
    /// exclusion list is a tenant's.
    pub async fn list_tags_with(
        &self,
        image: &ImageReference,
        keep: impl Fn(&str) -> bool + Clone + Send + 'static,
    ) -> Result<Listing, RegistryError> {
        let limits = &self.options.limits;
        let stop = |detail: String| RegistryError::Listing {
            host: image.registry().into(),
            repository: image.repository().into(),
            detail,
        };
        let first = format!(
            "/v2/{}/tags/list?n={}",
            image.repository(),
            limits.page_size
        );
        let mut target = Target::Path(&first);
        let mut small_pages = false;
        let mut seen: HashSet<String> = HashSet::new();
        let mut listing = Listing {
            held: Held::for_tenant(self.options.tenant.as_deref()),
            ..Listing::default()
        };
        loop {
            if listing.requests >= limits.max_pages {
                return Err(stop(format!(
                    "more than {} pages; the listing was stopped and nothing is kept",
                    limits.max_pages
                )));
            }
            let answer = self.request_page(image, target, small_pages).await?;
            listing.requests += 1;
            let (url, response) = match answer {
                Answer::Page(url, response) => (url, response),
                Answer::PageTooLarge(url) => {
                    small_pages = true;
                    target = Target::Url(with_page_size(&url, limits.small_page_size));
                    continue;
                }
            };
            let next =
                next_link(&url, response.headers()).map_err(|detail| invalid(&url, detail))?;
            let held = &mut listing.held;
            let page = self.read_tag_page(image, &url, response, keep.clone(), held);
            let page = page.await?;
            listing.add(page, limits.max_tags).map_err(stop)?;
            seen.insert(url.to_string());
            let Some(next) = next else {
                return Ok(listing.done());
            };
            let next = next_page(next, small_pages.then_some(limits.small_page_size), &seen);
            target = Target::Url(
                next.map_err(|e| stop(format!("{e}, after {} pages", listing.requests)))?,
            );
        }
    }

    /// Asks for one page: the registry's own answer, or that it refuses the page size (asked
    /// again smaller, once).
    async fn request_page(
        &self,
        image: &ImageReference,
        target: Target<'_>,
        small_pages: bool,
    ) -> Result<Answer, RegistryError> {
        let asked = (None, Redirects::SameOrigin);
        let (url, response) = self.send_with(Method::GET, image, target, asked).await?;
        // A page another host answered (through a redirect) lists that host's tags, not the
        // registry's: never merged (redirect.rs).
        if response.url().host_str() != url.host_str() {
            let detail = format!(
                "the tag list was redirected to {}, another host: refused, a listing comes \
                 from the registry itself",
                url_host(response.url())
            );
            return Err(invalid(&url, detail));
        }
        if response.status() == StatusCode::OK {
            return Ok(Answer::Page(url, response));
        }
        let host = url_host(&url);
        let err = status_error(Method::GET, &url, &host, response, &self.options).await;
        match !small_pages && rejects_page_size(&err) {
            true => Ok(Answer::PageTooLarge(url)),
            false => Err(err),
        }
    }
}

/// What a page request came to.
enum Answer {
    Page(Url, reqwest::Response),
    /// The registry refused the page size: ask `Url`'s page again, smaller.
    PageTooLarge(Url),
}

impl Listing {
    /// Adds a page's tags; more than `max_tags` listed stops the listing.
    fn add(&mut self, page: PageTags, max_tags: usize) -> Result<(), String> {
        self.listed += page.listed;
        self.invalid += page.invalid;
        self.tags.append(&page.kept);
        if self.listed > max_tags {
            return Err(format!(
                "more than {max_tags} tags; the listing was stopped and nothing is kept"
            ));
        }
        Ok(())
    }

    /// The listing, complete.
    fn done(self) -> Listing {
        if self.invalid > 0 {
            tracing::debug!(
                invalid = self.invalid,
                "dropped tags the OCI distribution spec does not allow"
            );
        }
        self
    }
}

/// The next page's URL (with the smaller page size, when the registry asked for it), unless
/// it was asked for before: a pagination loop.
fn next_page(mut next: Url, small: Option<u32>, seen: &HashSet<String>) -> Result<Url, String> {
    if let Some(size) = small {
        next = with_page_size(&next, size);
    }
    match seen.contains(next.as_str()) {
        true => Err(format!(
            "pagination loop: the registry sent {next} as the next page again"
        )),
        false => Ok(next),
    }
}

/// A page answer that is not a page.
fn invalid(url: &Url, detail: String) -> RegistryError {
    RegistryError::InvalidResponse {
        method: "GET",
        url: url.to_string(),
        host: url_host(url),
        detail,
    }
}

/// Quay answers `400` with `TOO_MANY_TAGS_REQUESTED` when `n` is above its limit.
fn rejects_page_size(err: &RegistryError) -> bool {
    matches!(err, RegistryError::Status { status_code: 400, codes, .. }
        if codes.iter().any(|c| c.starts_with("TOO_MANY_TAGS_REQUESTED")))
}

/// `url` with its `n` query parameter set to `size`.
fn with_page_size(url: &Url, size: u32) -> Url {
    let pairs: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| k != "n")
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    let mut url = url.clone();
    {
        let mut query = url.query_pairs_mut();
        query.clear();
        query.append_pair("n", &size.to_string());
        for (k, v) in &pairs {
            query.append_pair(k, v);
        }
    }
    url
}

/// The `rel="next"` target of the `Link` headers (RFC 8288), resolved against `base`. A next
/// page that is not an http(s) URL, or not on `base`'s origin, is an error: stopping there
/// would keep part of the tags as if they were all of them.
pub(crate) fn next_link(
    base: &Url,
    headers: &reqwest::header::HeaderMap,
) -> Result<Option<Url>, String> {
    for value in headers.get_all(LINK).iter().filter_map(|v| v.to_str().ok()) {
        // `<target>; params, <target>; params`: targets may hold commas, so scan by brackets.
        let mut rest = value;
        while let Some(open) = rest.find('<') {
            let after = &rest[open + 1..];
            let Some(close) = after.find('>') else {
                break;
            };
            let target = after[..close].trim();
            let tail = &after[close + 1..];
            let params_end = tail.find('<').unwrap_or(tail.len());
            rest = &tail[params_end..];
            let is_next = tail[..params_end].split([';', ',']).any(|p| {
                let p = p.trim().to_ascii_lowercase();
                p == "rel=\"next\"" || p == "rel=next"
            });
            if !is_next {
                continue;
            }
            let url = base.join(target).map_err(|e| {
                format!("the Link header's next page '{target}' is not a URL ({e})")
            })?;
            if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
                return Err(format!(
                    "the Link header's next page '{target}' is not an http(s) URL"
                ));
            }
            // A next page is asked with the registry's credentials and merged into its tags:
            // it must be on the registry's own origin (docs/security.md).
            if url.origin() != base.origin() {
                return Err(format!(
                    "the Link header's next page is on {}, not on the registry ({}): refused, \
                     a listing stays on the registry's own origin",
                    url_host(&url),
                    base.origin().ascii_serialization()
                ));
            }
            return Ok(Some(url));
        }
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::{HeaderMap, HeaderValue};

    fn link(value: &str) -> Option<String> {
        let base = Url::parse("https://r.example/v2/a/b/tags/list?n=1000").unwrap();
        let mut headers = HeaderMap::new();
        headers.insert(LINK, HeaderValue::from_str(value).unwrap());
        next_link(&base, &headers).unwrap().map(|u| u.to_string())
    }

    #[test]
    fn follows_relative_and_absolute_next_links() {
        assert_eq!(
            link(r#"</v2/a/b/tags/list?n=1000&last=x>; rel="next""#).as_deref(),
            Some("https://r.example/v2/a/b/tags/list?n=1000&last=x")
        );
        assert_eq!(
            link(r#"<https://r.example/v2/a/b/tags/list?last=y>; rel=next"#).as_deref(),
            Some("https://r.example/v2/a/b/tags/list?last=y")
        );
        assert_eq!(
            link(r#"</prev>; rel="prev", </next>; rel="next""#).as_deref(),
            Some("https://r.example/next")
        );
        assert_eq!(link(r#"</x>; rel="prev""#), None);
        assert_eq!(
            link(r#"</v2/a/b/tags/list?last=a,b>; rel="next""#).as_deref(),
            Some("https://r.example/v2/a/b/tags/list?last=a,b")
        );
    }

    #[test]
    fn a_next_page_that_is_not_http_is_an_error() {
        let base = Url::parse("https://r.example/v2/a/b/tags/list").unwrap();
        for value in [
            r#"<htt0X:/-other.example/x>; rel=next"#,
            r#"<mailto:me@x>; rel="next""#,
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(LINK, HeaderValue::from_str(value).unwrap());
            let err = next_link(&base, &headers).unwrap_err();
            assert!(err.contains("is not an http(s) URL"), "{err}");
        }
    }

    #[test]
    fn a_next_page_on_another_origin_is_refused() {
        let base = Url::parse("https://r.example/v2/a/b/tags/list").unwrap();
        for value in [
            r#"<https://cdn.example/page2>; rel=next"#,
            r#"<http://r.example/v2/a/b/tags/list?last=x>; rel=next"#,
            r#"<https://r.example:444/v2/a/b/tags/list?last=x>; rel=next"#,
        ] {
            let mut headers = HeaderMap::new();
            headers.insert(LINK, HeaderValue::from_str(value).unwrap());
            let err = next_link(&base, &headers).unwrap_err();
            assert!(
                err.contains("not on the registry (https://r.example)"),
                "{err}"
            );
        }
    }

    #[test]
    fn page_size_is_replaced() {
        let url = Url::parse("https://r.example/v2/a/tags/list?n=1000&last=v1").unwrap();
        assert_eq!(
            with_page_size(&url, 100).as_str(),
            "https://r.example/v2/a/tags/list?n=100&last=v1"
        );
    }
}
