//! One page of a tag listing, read within its bounds (tags.rs walks the pages): the body is
//! held from the process-wide memory budget while it is read and parsed, then given back; the
//! tags kept are charged as they are parsed, to the listing's limit and to the budget, where
//! they stay reserved until the listing is dropped. Parsing and the tenant's exclusion list
//! run on the blocking pool.

use super::body::read_limited_with;
use super::budget::Held;
use super::client::RegistryClient;
use super::describe::url_host;
use super::tag_page::{parse_page_charged, PageError, PageTags};
use super::RegistryError;
use crate::reference::ImageReference;
use reqwest::{Method, Url};

/// The budget is reserved 64 KiB at a time, not per tag (a million tags would be a million
/// semaphore operations); the limit itself is exact.
const STEP: usize = 64 << 10;

impl RegistryClient {
    /// The tags of `response`'s page that `keep` accepts, charged to `held`.
    pub(super) async fn read_tag_page(
        &self,
        image: &ImageReference,
        url: &Url,
        response: reqwest::Response,
        keep: impl Fn(&str) -> bool + Send + 'static,
        held: &mut Held,
    ) -> Result<PageTags, RegistryError> {
        let limits = &self.options.limits;
        let stop = |detail: String| RegistryError::Listing {
            host: image.registry().into(),
            repository: image.repository().into(),
            detail,
        };
        let host = url_host(url);
        let memory = &self.shared.memory;
        // The page's body is the listing's read too: stopped (the budget), both stop.
        let mut body_held = Held::beside(held);
        let stopped = body_held.stopped();
        let body = read_limited_with(
            &Method::GET,
            url,
            &host,
            response,
            limits.max_body_bytes,
            |bytes| memory.reserve(&mut body_held, bytes),
            stopped,
        )
        .await?;
        let span = tracing::debug_span!("tag page", bytes = body.len());
        // A TagBuf addresses its text with u32 ends: no limit lets a listing past that.
        let max_kept = limits.max_kept_bytes.min(u32::MAX as usize);
        let budget = memory.clone();
        let mut kept_held = std::mem::take(held);
        let parsed = tokio::task::spawn_blocking(move || {
            let _entered = span.enter();
            let mut pending = 0;
            let mut charge = |cost: usize| {
                if kept_held.bytes() + pending + cost > max_kept {
                    return Err(format!(
                        "the tags kept exceed the {max_kept}-byte limit one repository may \
                         hold in memory; the listing was stopped and nothing is kept"
                    ));
                }
                pending += cost;
                if pending >= STEP {
                    budget.reserve(&mut kept_held, std::mem::take(&mut pending))?;
                }
                Ok(())
            };
            let page = parse_page_charged(&body, &keep, &mut charge).and_then(|page| {
                let rest = budget.reserve(&mut kept_held, pending);
                rest.map_err(PageError::Refused)?;
                Ok(page)
            });
            (page, kept_held)
        })
        .await;
        drop(body_held);
        let (parsed, kept_held) = parsed.map_err(|e| stop(e.to_string()))?;
        *held = kept_held;
        parsed.map_err(|err| match err {
            PageError::Malformed(_) => RegistryError::InvalidResponse {
                method: "GET",
                url: url.to_string(),
                host,
                detail: err.to_string(),
            },
            PageError::Refused(reason) => stop(reason),
        })
    }
}
