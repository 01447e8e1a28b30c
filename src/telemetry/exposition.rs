//! The exposition format `/metrics` answers in, chosen from the scraper's `Accept` header:
//! OpenMetrics 1.0 when asked for (Prometheus asks for it first), else Prometheus text 0.0.4,
//! as the Go client does: what `curl`, `promtool check metrics` and older scrapers read.
//!
//! prometheus-client writes OpenMetrics; 0.0.4 differs in what the HELP and TYPE lines of a
//! counter name (`x_total`, the sample's name, not the family's `x`), and has no `# UNIT`,
//! no `_created` samples, no `info`/`unknown` types and no `# EOF`.

/// OpenMetrics' content type.
pub const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";
/// Prometheus text format 0.0.4's content type.
pub const TEXT_004: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Whether the `Accept` header asks for OpenMetrics (with a non-zero quality).
pub fn wants_openmetrics(accept: Option<&str>) -> bool {
    accept.is_some_and(|accept| {
        accept.split(',').any(|range| {
            let mut parts = range.split(';').map(str::trim);
            let media = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
        })
    })
}

/// OpenMetrics text as Prometheus text 0.0.4.
pub fn to_text_004(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    // prometheus-client writes HELP before TYPE: a HELP waits for its TYPE to learn the name.
    let mut help: Option<(String, String)> = None;
    let flush = |out: &mut String, help: &mut Option<(String, String)>, name: Option<&str>| {
        if let Some((family, text)) = help.take() {
            out.push_str(&format!("# HELP {} {text}\n", name.unwrap_or(&family)));
        }
    };
    for line in openmetrics.lines() {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            flush(&mut out, &mut help, None);
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            help = Some((name.to_string(), text.to_string()));
            continue;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "unknown" => (name.to_string(), "untyped"),
                other => (name.to_string(), other),
            };
            flush(&mut out, &mut help, Some(&name));
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            continue;
        }
        flush(&mut out, &mut help, None);
        let sample = line.split(['{', ' ']).next().unwrap_or_default();
        if sample.ends_with("_created") {
            continue;
        }
        // Exemplars (` # {...}`) are OpenMetrics only.
        let line = line.split(" # ").next().unwrap_or(line);
        out.push_str(line);
        out.push('\n');
    }
    flush(&mut out, &mut help, None);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scrapers_get_what_they_ask_for() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert!(wants_openmetrics(Some(prometheus)));
        assert!(!wants_openmetrics(Some("text/plain;version=0.0.4")));
        assert!(!wants_openmetrics(Some("*/*")));
        assert!(!wants_openmetrics(None));
        assert!(!wants_openmetrics(Some("application/openmetrics-text;q=0")));
    }

    #[test]
    fn openmetrics_becomes_text_004() {
        let om = "# HELP requests Requests made.\n# TYPE requests counter\nrequests_total{code=\"200\"} 3\nrequests_created{code=\"200\"} 1.7e9\n\
                  # HELP up Up.\n# TYPE up gauge\n# UNIT up seconds\nup 1\n\
                  # HELP build Build.\n# TYPE build info\nbuild_info{version=\"1\"} 1\n# EOF\n";
        assert_eq!(
            to_text_004(om),
            "# HELP requests_total Requests made.\n# TYPE requests_total counter\nrequests_total{code=\"200\"} 3\n\
             # HELP up Up.\n# TYPE up gauge\nup 1\n\
             # HELP build_info Build.\n# TYPE build_info gauge\nbuild_info{version=\"1\"} 1\n"
        );
    }
}
