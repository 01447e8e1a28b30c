//! `image-reflector ref`: parses an image the way `spec.image` is parsed, without any network
//! call, and prints the canonical name and the scheme. Exit 2 with Flux's message if invalid.

use super::error::CliError;
use super::Output;
use crate::reference::ImageReference;
use crate::reference::ReferenceError;
use std::io::Write;

/// Options of `ref`.
#[derive(clap::Args, Debug)]
pub struct RefArgs {
    /// The image, as in an ImageRepository's `spec.image` (no scheme, no tag).
    pub image: String,
    /// As `spec.insecure`: use plain HTTP.
    #[arg(long)]
    pub insecure: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Runs `ref`, writing the result to `out`.
pub fn run(args: &RefArgs, out: &mut impl Write) -> Result<(), CliError> {
    let reference = ImageReference::parse(&args.image, args.insecure)
        .map_err(|err| CliError::invalid(with_hint(&err, &args.image)))?;
    let written = match args.output {
        Output::Text => {
            writeln!(out, "{}\n{}", reference.canonical(), reference.scheme())
        }
        Output::Json => writeln!(
            out,
            "{}",
            serde_json::json!({ "canonical": reference.canonical(), "scheme": reference.scheme().to_string() })
        ),
    };
    written.map_err(|e| CliError::failed(format!("writing output: {e}")))
}

/// Flux's message (which the controller's condition keeps as it is), then, on the command
/// line, what a reference looks like and the first character that cannot be in one.
fn with_hint(err: &ReferenceError, image: &str) -> String {
    let message = err.to_string();
    // Only a reference that does not parse, and whose error names no fix of its own.
    if !matches!(err, ReferenceError::Unparsable(_)) {
        return message;
    }
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._-/:@".contains(c);
    let first = image.char_indices().find(|(_, c)| !allowed(*c));
    let culprit = match first {
        Some((at, c)) => format!("{:?} at byte {at} cannot be in a reference; ", c),
        None if image.contains("::") => "'::' is not a host:port; ".to_string(),
        None => String::new(),
    };
    format!(
        "{message}\nhint: {culprit}an image is [host[:port]/]path, each path component lower-case \
         letters and digits joined by '.', '_', '__' or '-', e.g. ghcr.io/org/app"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unparsable_reference_names_what_cannot_be_in_one() {
        let err = ImageReference::parse("Not A/Valid::ref", false).unwrap_err();
        let text = with_hint(&err, "Not A/Valid::ref");
        assert!(
            text.starts_with("could not parse reference: Not A/Valid::ref\nhint: ' ' at byte 3"),
            "{text}"
        );
        let err = ImageReference::parse("host:1::x/app", false).unwrap_err();
        assert!(with_hint(&err, "host:1::x/app").contains("'::' is not a host:port"));
        // An error that names its own fix gets no hint.
        let err = ImageReference::parse("ghcr.io/org/app:1.0", false).unwrap_err();
        assert!(!with_hint(&err, "ghcr.io/org/app:1.0").contains("hint:"));
    }
}
