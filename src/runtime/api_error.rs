//! Kubernetes API errors as sentences, for logs, conditions and the CLI.

/// An API error as a sentence: the server's message with its code and reason
/// (`secrets "x" is forbidden: ... (403 Forbidden)`), not kube's debug dump of the Status.
pub fn describe_api_error(err: &kube::Error) -> String {
    match err {
        kube::Error::Api(status) => {
            let message = match status.message.as_str() {
                "" => "the API server refused the request",
                text => text,
            };
            match status.reason.as_str() {
                "" => format!("{message} ({})", status.code),
                reason => format!("{message} ({} {reason})", status.code),
            }
        }
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::describe_api_error;

    #[test]
    fn api_errors_read_as_sentences() {
        let status: kube::core::Status = serde_json::from_value(serde_json::json!({
            "status": "Failure", "code": 403, "reason": "Forbidden",
            "message": "secrets \"creds\" is forbidden: User \"x\" cannot get resource \"secrets\""
        }))
        .unwrap();
        let text = describe_api_error(&kube::Error::Api(Box::new(status)));
        assert_eq!(
            text,
            "secrets \"creds\" is forbidden: User \"x\" cannot get resource \"secrets\" (403 Forbidden)"
        );
        assert!(!text.contains("Status {") && !text.contains("Some("));
    }
}
