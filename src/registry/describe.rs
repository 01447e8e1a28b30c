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
