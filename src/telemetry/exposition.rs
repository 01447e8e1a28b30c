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
    lists(accept, "application/openmetrics-text")
}

/// Whether a list header (`Accept`, `Accept-Encoding`) names `value` with a non-zero quality.
fn lists(header: Option<&str>, value: &str) -> bool {
    header.is_some_and(|header| {
        header.split(',').any(|item| {
            let mut parts = item.split(';').map(str::trim);
            let name = parts.next().unwrap_or_default();
            let refused = parts.any(|p| {
                p.strip_prefix("q=")
                    .and_then(|q| q.parse::<f32>().ok())
                    .is_some_and(|q| q == 0.0)
            });
            name.eq_ignore_ascii_case(value) && !refused
        })
    })
}

/// OpenMetrics text as Prometheus text 0.0.4.
pub fn to_text_004(openmetrics: &str) -> String {
    let mut out = String::with_capacity(openmetrics.len());
    let mut converter = Text004::default();
    converter.push(openmetrics, &mut out);
    converter.finish(&mut out);
    out
}

/// The 0.0.4 conversion, line by line, of OpenMetrics text that arrives in pieces.
#[derive(Default)]
pub struct Text004 {
    /// The end of the last piece, until its line is complete.
    partial: String,
    /// prometheus-client writes HELP before TYPE: a HELP waits for its TYPE to learn the name.
    help: Option<(String, String)>,
}

impl Text004 {
    /// Converts the complete lines of `piece` (with what was left of the last one) into `out`.
    pub fn push(&mut self, piece: &str, out: &mut String) {
        let mut rest = piece;
        while let Some(end) = rest.find('\n') {
            let (line, after) = (&rest[..end], &rest[end + 1..]);
            if self.partial.is_empty() {
                self.line(line, out);
            } else {
                let mut whole = std::mem::take(&mut self.partial);
                whole.push_str(line);
                self.line(&whole, out);
            }
            rest = after;
        }
        self.partial.push_str(rest);
    }

    /// Converts what is left: a last line without a newline, a HELP without its TYPE.
    pub fn finish(&mut self, out: &mut String) {
        let last = std::mem::take(&mut self.partial);
        if !last.is_empty() {
            self.line(&last, out);
        }
        self.flush_help(out, None);
    }

    fn flush_help(&mut self, out: &mut String, name: Option<&str>) {
        if let Some((family, text)) = self.help.take() {
            out.push_str(&format!("# HELP {} {text}\n", name.unwrap_or(&family)));
        }
    }

    fn line(&mut self, line: &str, out: &mut String) {
        if line == "# EOF" || line.starts_with("# UNIT ") {
            return;
        }
        if let Some(rest) = line.strip_prefix("# HELP ") {
            self.flush_help(out, None);
            let (name, text) = rest.split_once(' ').unwrap_or((rest, ""));
            self.help = Some((name.to_string(), text.to_string()));
            return;
        }
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap_or((rest, "untyped"));
            let (name, kind) = match kind {
                "counter" => (format!("{name}_total"), "counter"),
                "info" => (format!("{name}_info"), "gauge"),
                "unknown" => (name.to_string(), "untyped"),
                other => (name.to_string(), other),
            };
            self.flush_help(out, Some(&name));
            out.push_str(&format!("# TYPE {name} {kind}\n"));
            return;
        }
        self.flush_help(out, None);
        let sample = line.split(['{', ' ']).next().unwrap_or_default();
        if sample.ends_with("_created") {
            return;
        }
        // Exemplars (` # {...}`) are OpenMetrics only.
        let line = line.split(" # ").next().unwrap_or(line);
        out.push_str(line);
        out.push('\n');
    }
}

/// The size of the pieces a scrape's answer is written in.
pub const CHUNK_BYTES: usize = 64 * 1024;

/// Collects encoded text in pieces of about `CHUNK_BYTES`, converted to 0.0.4 on the way
/// when asked, and gzipped piece by piece when the scraper accepts it (Prometheus does): a
/// scrape of 10,000 objects' series is tens of megabytes of text, which one growing String
/// would hold up to twice over while it doubles, plus a copy for the conversion. Gzipped, the
/// answer is held at about a tenth of its size.
pub struct Chunks {
    done: Vec<Vec<u8>>,
    current: String,
    text_004: Option<Text004>,
    gzip: Option<flate2::write::GzEncoder<Vec<u8>>>,
}

impl Chunks {
    pub fn new(text_004: bool, gzip: bool) -> Self {
        Chunks {
            done: Vec::new(),
            current: String::with_capacity(CHUNK_BYTES + 1024),
            text_004: text_004.then(Text004::default),
            gzip: gzip
                .then(|| flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast())),
        }
    }

    fn flush_current(&mut self) {
        use std::io::Write;
        match self.gzip.as_mut() {
            // Writing into a Vec cannot fail.
            Some(encoder) => {
                let _ = encoder.write_all(self.current.as_bytes());
                self.current.clear();
            }
            None => {
                let full =
                    std::mem::replace(&mut self.current, String::with_capacity(CHUNK_BYTES + 1024));
                self.done.push(full.into_bytes());
            }
        }
    }

    /// The pieces of the answer, in order (one, when gzipped).
    pub fn finish(mut self) -> Vec<Vec<u8>> {
        if let Some(converter) = self.text_004.as_mut() {
            converter.finish(&mut self.current);
        }
        if !self.current.is_empty() {
            self.flush_current();
        }
        if let Some(encoder) = self.gzip.take() {
            self.done.push(encoder.finish().unwrap_or_default());
        }
        self.done
    }
}

impl std::fmt::Write for Chunks {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        match self.text_004.as_mut() {
            Some(converter) => converter.push(s, &mut self.current),
            None => self.current.push_str(s),
        }
        if self.current.len() >= CHUNK_BYTES {
            self.flush_current();
        }
        Ok(())
    }
}

/// Whether the `Accept-Encoding` header accepts gzip (with a non-zero quality).
pub fn accepts_gzip(accept_encoding: Option<&str>) -> bool {
    lists(accept_encoding, "gzip")
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

    #[test]
    fn the_conversion_does_not_depend_on_where_pieces_end() {
        use std::fmt::Write;
        let om = "# HELP requests Requests made.\n# TYPE requests counter\nrequests_total{code=\"200\"} 3\nrequests_created{code=\"200\"} 1.7e9\n\
                  # HELP up Up.\n# TYPE up gauge\n# UNIT up seconds\nup 1\n# EOF\n";
        let whole = to_text_004(om);
        for size in 1..om.len() {
            let mut chunks = Chunks::new(true, false);
            let mut at = 0;
            while at < om.len() {
                let end = (at + size).min(om.len());
                chunks.write_str(&om[at..end]).unwrap();
                at = end;
            }
            assert_eq!(
                chunks.finish().concat(),
                whole.as_bytes(),
                "pieces of {size} bytes"
            );
        }
        let mut chunks = Chunks::new(false, false);
        chunks.write_str(om).unwrap();
        assert_eq!(
            chunks.finish().concat(),
            om.as_bytes(),
            "OpenMetrics passes unchanged"
        );
    }

    #[test]
    fn a_large_answer_is_held_in_bounded_pieces_or_gzipped() {
        use std::fmt::Write;
        use std::io::Read;
        let line = "gotk_reconcile_duration_seconds_bucket{kind=\"ImagePolicy\",name=\"app\",namespace=\"team\",le=\"0.5\"} 1\n";
        let write = |chunks: &mut Chunks| {
            for _ in 0..100_000 {
                chunks.write_str(line).unwrap();
            }
        };
        let mut chunks = Chunks::new(true, false);
        write(&mut chunks);
        let pieces = chunks.finish();
        assert!(pieces.len() > 100);
        assert!(pieces
            .iter()
            .all(|p| p.len() < CHUNK_BYTES + line.len() + 1024));
        assert_eq!(
            pieces.iter().map(Vec::len).sum::<usize>(),
            100_000 * line.len()
        );

        let mut gzipped = Chunks::new(true, true);
        write(&mut gzipped);
        let pieces = gzipped.finish();
        assert_eq!(pieces.len(), 1);
        assert!(
            pieces[0].len() < 100_000 * line.len() / 10,
            "held at a tenth or less"
        );
        let mut text = String::new();
        flate2::read::GzDecoder::new(&pieces[0][..])
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, line.repeat(100_000));
    }

    #[test]
    fn gzip_when_accepted() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=1.0, *;q=0.5")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(None));
    }
}
