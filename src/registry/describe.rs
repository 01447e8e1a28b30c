//! How registry requests and errors read in messages: a URL's host, a method's name, an error
//! with its causes.

use reqwest::{Method, Url};

/// `host[:port]` of a URL, as the scheduler keys hosts.
pub(crate) fn url_host(url: &Url) -> String {
    match (url.host_str(), url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_string(),
        (None, _) => String::new(),
    }
}

pub(crate) fn method_name(method: &Method) -> &'static str {
    match *method {
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        _ => "GET",
    }
}

/// The error and its causes, `: `-joined (reqwest's own text alone is "error sending request").
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_keep_their_port_and_errors_their_causes_once() {
        let url = |u: &str| Url::parse(u).unwrap();
        assert_eq!(url_host(&url("https://ghcr.io/v2/")), "ghcr.io");
        assert_eq!(
            url_host(&url("http://127.0.0.1:5000/v2/")),
            "127.0.0.1:5000"
        );
        assert_eq!(method_name(&Method::HEAD), "HEAD");
        assert_eq!(
            method_name(&Method::DELETE),
            "GET",
            "only what the client sends"
        );

        #[derive(Debug)]
        struct E(&'static str, Option<Box<E>>);
        impl std::fmt::Display for E {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.0)
            }
        }
        impl std::error::Error for E {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                self.1.as_deref().map(|e| e as _)
            }
        }
        let inner = E("connection refused", None);
        let middle = E(
            "error sending request: connection refused",
            Some(Box::new(inner)),
        );
        let outer = E("request failed", Some(Box::new(middle)));
        assert_eq!(
            chain(&outer),
            "request failed: error sending request: connection refused",
            "a cause already in the text is not repeated"
        );
    }
}
