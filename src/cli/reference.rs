//! `image-reflector ref`: parses an image the way `spec.image` is parsed, without any network
//! call, and prints the canonical name and the scheme. Exit 2 with Flux's message if invalid.

use super::error::CliError;
use super::Output;
use crate::registry::ImageReference;
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
    let reference = ImageReference::parse(&args.image, args.insecure).map_err(CliError::invalid)?;
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
