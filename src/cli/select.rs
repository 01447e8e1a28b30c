//! `image-reflector select`: elects a tag offline, exactly as the controller would.
//!
//! Exit codes: 0 elected (the tag on stdout), 1 nothing elected, 2 invalid manifest, policy or
//! regex.

use super::error::{read_input, CliError};
use super::Output;
use crate::api::{ImagePolicySpec, API_GROUP, DEPRECATED_VERSION, STORAGE_VERSION};
use std::io::Write;

/// Options of `select`.
#[derive(clap::Args, Debug)]
pub struct SelectArgs {
    /// ImagePolicy manifest (YAML or JSON, v1 or v1beta2); `-` for standard input.
    #[arg(short = 'f', long = "file")]
    pub file: String,
    /// Tags, one a line (blank lines ignored); `-` for standard input.
    #[arg(long = "tags-file")]
    pub tags_file: String,
    /// Report how the tags were counted and the runner-up candidates.
    #[arg(long)]
    pub explain: bool,
    /// How many runner-up candidates `--explain` lists.
    #[arg(long, default_value_t = 5)]
    pub runners_up: usize,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// Runs `select`, writing the result to `out`.
pub fn run(args: &SelectArgs, out: &mut impl Write) -> Result<(), CliError> {
    if args.file == "-" && args.tags_file == "-" {
        return Err(CliError::invalid(
            "only one of -f and --tags-file can be read from standard input",
        ));
    }
    let spec = parse_manifest(&read_input(&args.file)?, &args.file)?;
    let policy = spec.selection_policy().map_err(CliError::invalid)?;
    let text = read_input(&args.tags_file)?;
    let mut tags: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // The store's order, in which the controller holds tags.
    tags.sort_unstable_by(|a, b| b.cmp(a));

    let write_err = |e: std::io::Error| CliError::failed(format!("writing output: {e}"));
    if args.explain || args.output == Output::Json {
        let x = policy.explain(tags.iter().copied(), args.runners_up);
        match args.output {
            Output::Json => {
                let json = serde_json::to_string_pretty(&x).map_err(CliError::failed)?;
                writeln!(out, "{json}").map_err(write_err)?;
            }
            Output::Text => write_explanation(out, &x).map_err(write_err)?,
        }
        return match (&x.elected, x.error) {
            (Some(_), _) => Ok(()),
            (None, why) => Err(CliError::not_found(why.unwrap_or_default())),
        };
    }
    let tag = policy
        .select_sorted(tags.iter().copied())
        .map_err(CliError::not_found)?;
    writeln!(out, "{tag}").map_err(write_err)
}

fn write_explanation(out: &mut impl Write, x: &crate::policy::Explanation) -> std::io::Result<()> {
    match &x.elected {
        Some(c) if c.value != c.tag => writeln!(out, "elected: {} (value {})", c.tag, c.value)?,
        Some(c) => writeln!(out, "elected: {}", c.tag)?,
        None => writeln!(out, "elected: none")?,
    }
    writeln!(out, "tags read: {}", x.read)?;
    writeln!(out, "dropped by filterTags: {}", x.filtered_out)?;
    writeln!(out, "skipped as unparsable: {}", x.unparsable)?;
    writeln!(out, "outside the semver range: {}", x.out_of_range)?;
    writeln!(out, "candidates: {}", x.candidates)?;
    for (i, c) in x.runners_up.iter().enumerate() {
        if c.value != c.tag {
            writeln!(out, "runner-up {}: {} (value {})", i + 1, c.tag, c.value)?;
        } else {
            writeln!(out, "runner-up {}: {}", i + 1, c.tag)?;
        }
    }
    Ok(())
}

/// Reads an ImagePolicy manifest of either served version and returns its spec.
pub fn parse_manifest(text: &str, source: &str) -> Result<ImagePolicySpec, CliError> {
    let doc: serde_json::Value = serde_saphyr::from_str(text)
        .map_err(|e| CliError::invalid(format!("{source}: not a YAML or JSON document: {e}")))?;
    let api_version = doc.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    let kind = doc.get("kind").and_then(|v| v.as_str()).unwrap_or("");
    let served = [STORAGE_VERSION, DEPRECATED_VERSION].map(|v| format!("{API_GROUP}/{v}"));
    if kind != "ImagePolicy" || !served.iter().any(|v| v == api_version) {
        return Err(CliError::invalid(format!(
            "{source}: expected kind ImagePolicy with apiVersion {} or {}, found kind {kind:?} apiVersion {api_version:?}",
            served[0], served[1]
        )));
    }
    let spec = doc
        .get("spec")
        .cloned()
        .ok_or_else(|| CliError::invalid(format!("{source}: the ImagePolicy has no spec")))?;
    serde_json::from_value(spec)
        .map_err(|e| CliError::invalid(format!("{source}: invalid ImagePolicy spec: {e}")))
}
