//! Registry listing benchmark: `cargo bench --bench registry`. Lists 25,000 tags from the
//! in-test fault server (pages of 1000 with `Link` headers, or one page as Distribution 2.8
//! answers), each scenario in its own process; reports requests, median wall time and peak
//! memory above the process's baseline (server and runtime already running).

mod common;
#[path = "../tests/it/support/fault_server.rs"]
#[allow(dead_code)]
mod fault_server;

use common::{peak_rss_kib, run_scenarios, timed};
use fault_server::{FaultServer, Reply, Seen};
use image_reflector::reference::ImageReference;
use image_reflector::registry::{ClientOptions, Registries, RegistryClient};
use std::collections::HashMap;
use std::sync::Arc;

const TAGS: usize = 25_000;

/// CI-style tags, about 30 bytes each.
fn tags() -> Vec<String> {
    (0..TAGS)
        .map(|i| format!("main-{:07x}-{}", i * 7919 % 0xfffffff, 1_700_000_000 + i))
        .collect()
}

/// Pre-rendered pages keyed by the `last` they answer, so serving costs no memory growth.
fn pages(tags: &[String], size: usize) -> HashMap<String, (Vec<u8>, Option<String>)> {
    let mut pages = HashMap::new();
    let mut last = String::new();
    for (i, chunk) in tags.chunks(size).enumerate() {
        let body =
            serde_json::to_vec(&serde_json::json!({ "name": "bench/app", "tags": chunk })).unwrap();
        let end = chunk.last().unwrap().clone();
        let link = (i + 1 < tags.len().div_ceil(size))
            .then(|| format!("</v2/bench/app/tags/list?n={size}&last={end}>; rel=\"next\""));
        pages.insert(std::mem::replace(&mut last, end), (body, link));
    }
    pages
}

fn scenario(name: &str) {
    let (page_size, keep_every) = match name {
        "paged" => (1000, 1),
        "one-page" => (TAGS, 1),
        "paged-keep-10pct" => (1000, 10),
        other => panic!("unknown scenario {other}"),
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pages = Arc::new(pages(&tags(), page_size));
    let server = runtime.block_on(FaultServer::start(move |seen: &Seen| {
        let (body, link) = &pages[&seen.query("last").unwrap_or_default()];
        let reply = Reply::status(200).body(body.clone());
        match link {
            Some(link) => reply.header("Link", link),
            None => reply,
        }
    }));
    let image = ImageReference::parse(&format!("{}/bench/app", server.host()), true).unwrap();
    let client = RegistryClient::new(
        ClientOptions::default(),
        Registries::new(Default::default()),
    )
    .unwrap();
    let list = || {
        runtime
            .block_on(client.list_tags_with(&image, move |t| {
                keep_every == 1 || t.bytes().map(usize::from).sum::<usize>() % keep_every == 0
            }))
            .unwrap()
    };
    let baseline = peak_rss_kib();
    let first = list();
    let growth = peak_rss_kib() - baseline;
    drop(first);
    let listing = list();
    let wall = timed(5, || {
        std::hint::black_box(list());
    });
    println!(
        "| {name} | {} | {} of {} | {wall:.1?} | +{growth} (of {} total) |",
        listing.requests,
        listing.tags.len(),
        listing.listed,
        peak_rss_kib()
    );
}

fn main() {
    run_scenarios(
        "registry",
        "| scenario | requests | tags kept | wall time (median of 5) | peak RSS growth KiB |\n|---|---|---|---|---|",
        &["paged", "one-page", "paged-keep-10pct"],
        scenario,
    );
}
