//! `image-reflector conditions`: a policy's attestation conditions evaluated on a sample
//! statement, offline, as the verify gate evaluates them once the attestation has verified
//! (nothing is verified here), for trying conditions before applying them and for CI.
//!
//! Exit codes: 0 every condition true, 1 one is not, 2 invalid input (manifest, expression,
//! statement, flags).

use super::error::{read_input, CliError};
use super::select::parse_policy;
use super::Output;
use crate::api::AttestationRequirement;
use crate::policy::conditions::Input;
use std::io::Write;

/// Options of `conditions`.
#[derive(clap::Args, Debug)]
pub struct ConditionsArgs {
    /// ImagePolicy manifest (YAML or JSON); `-` for standard input.
    #[arg(short = 'f', long = "file")]
    pub file: String,
    /// An in-toto statement (JSON), or a DSSE envelope or Sigstore bundle holding one (its
    /// signature is not checked); `-` for standard input.
    #[arg(
        long,
        conflicts_with = "predicate",
        required_unless_present = "predicate"
    )]
    pub statement: Option<String>,
    /// A predicate alone (JSON), judged as the statement of the entry's predicate type.
    #[arg(long)]
    pub predicate: Option<String>,
    /// The `spec.verify.attestations` entry, by name (else every entry of the statement's
    /// predicate type; with --predicate, the policy's only entry).
    #[arg(long)]
    pub attestation: Option<String>,
    /// The image digest (`digest` in the expressions); else the statement's first subject's.
    #[arg(long)]
    pub digest: Option<String>,
    /// The time (`now`), RFC 3339; else the current time.
    #[arg(long)]
    pub now: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
}

/// One condition's verdict: the entry's name and the condition's index in it.
#[derive(serde::Serialize)]
struct Verdict {
    attestation: String,
    condition: usize,
    expression: String,
    holds: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
}

/// Runs `conditions`, writing each condition's verdict to `out`.
pub fn run(args: &ConditionsArgs, out: &mut impl Write) -> Result<(), CliError> {
    let (spec, _) = parse_policy(&read_input(&args.file)?, &args.file)?;
    let verify = spec
        .verify
        .as_ref()
        .ok_or_else(|| CliError::invalid("the policy sets no spec.verify"))?;
    verify.check_attestations().map_err(CliError::invalid)?;
    let entries = verify.attestations();
    let (statement, entries) = match (&args.statement, &args.predicate) {
        (Some(path), _) => {
            let statement = statement_in(&read_json(path)?, path)?;
            let kind = statement["predicateType"].as_str().unwrap_or_default();
            (statement.clone(), chosen(entries, args, Some(kind))?)
        }
        (None, Some(path)) => {
            let entries = chosen(entries, args, None)?;
            let kind = &entries[0].predicate_type;
            let statement = serde_json::json!({"_type": "https://in-toto.io/Statement/v1",
                "subject": [], "predicateType": kind, "predicate": read_json(path)?});
            (statement, entries)
        }
        (None, None) => return Err(CliError::invalid("give --statement or --predicate")),
    };
    let digest = match &args.digest {
        Some(digest) => digest.clone(),
        None => subject_digest(&statement),
    };
    let now = match &args.now {
        Some(text) => text.parse::<k8s_openapi::jiff::Timestamp>().map_err(|e| {
            CliError::invalid(format!("--now {text:?} is not an RFC 3339 time: {e}"))
        })?,
        None => k8s_openapi::jiff::Timestamp::now(),
    };
    let input = Input::new(&statement, &digest).map_err(CliError::invalid)?;
    let verdicts = judged(&entries, &input, now.as_second())?;
    if verdicts.is_empty() {
        eprintln!("conditions: the attestations chosen have no conditions (their presence alone is required)");
    }
    write(out, args.output, &verdicts).map_err(|e| CliError::failed(format!("writing: {e}")))?;
    match verdicts.iter().all(|v| v.holds) {
        true => Ok(()),
        false => Err(CliError::not_found("a condition is not true")),
    }
}

/// The entries to judge: the one named, else those of the statement's predicate type (with a
/// predicate alone, the policy's only entry).
fn chosen<'a>(
    entries: &'a [AttestationRequirement],
    args: &ConditionsArgs,
    kind: Option<&str>,
) -> Result<Vec<&'a AttestationRequirement>, CliError> {
    let names: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let picked: Vec<_> = match (&args.attestation, kind) {
        (Some(name), _) => entries.iter().filter(|e| &e.name == name).collect(),
        (None, Some(kind)) => entries
            .iter()
            .filter(|e| e.predicate_type == kind)
            .collect(),
        (None, None) if entries.len() == 1 => entries.iter().collect(),
        (None, None) => {
            return Err(CliError::invalid(format!(
                "the policy lists {} attestations ({}); name one with --attestation",
                entries.len(),
                names.join(", ")
            )))
        }
    };
    match (picked.first(), kind) {
        (None, _) => Err(CliError::invalid(format!(
            "no spec.verify.attestations entry {} (the policy lists: {})",
            match (&args.attestation, kind) {
                (Some(name), _) => format!("is named '{name}'"),
                (None, kind) => format!("is of the statement's type '{}'", kind.unwrap_or("")),
            },
            names.join(", ")
        ))),
        (Some(e), Some(kind)) if e.predicate_type != kind => Err(CliError::invalid(format!(
            "attestation '{}' is of type '{}'; the statement's is '{kind}'",
            e.name, e.predicate_type
        ))),
        _ => Ok(picked),
    }
}

/// Every condition of `entries` on `input` at `now` (seconds), in order.
fn judged(
    entries: &[&AttestationRequirement],
    input: &Input,
    now: i64,
) -> Result<Vec<Verdict>, CliError> {
    let mut verdicts = Vec::new();
    for entry in entries {
        for (i, condition) in entry.conditions.iter().enumerate() {
            let compiled = condition.compile().map_err(CliError::invalid)?;
            let reason = compiled.holds(input, now).err().map(|unmet| unmet.message);
            verdicts.push(Verdict {
                attestation: entry.name.clone(),
                condition: i,
                expression: condition.expression.clone(),
                holds: reason.is_none(),
                reason,
            });
        }
    }
    Ok(verdicts)
}

fn write(out: &mut impl Write, output: Output, verdicts: &[Verdict]) -> std::io::Result<()> {
    if output == Output::Json {
        let json = serde_json::to_string_pretty(verdicts).map_err(std::io::Error::other)?;
        return writeln!(out, "{json}");
    }
    for v in verdicts {
        let why = v.reason.as_deref().unwrap_or("true");
        writeln!(out, "{}.conditions[{}]: {why}", v.attestation, v.condition)?;
    }
    Ok(())
}

fn read_json(path: &str) -> Result<serde_json::Value, CliError> {
    serde_json::from_str(&read_input(path)?)
        .map_err(|e| CliError::invalid(format!("{path}: not JSON: {e}")))
}

/// The statement `json` is or holds: itself, a DSSE envelope's payload, or a bundle's.
fn statement_in(json: &serde_json::Value, path: &str) -> Result<serde_json::Value, CliError> {
    let envelope = json.get("dsseEnvelope").unwrap_or(json);
    let Some(payload) = envelope["payload"].as_str() else {
        return match json.get("predicateType") {
            Some(_) => Ok(json.clone()),
            None => Err(CliError::invalid(format!(
                "{path}: neither an in-toto statement (no predicateType), a DSSE envelope nor a \
                 Sigstore bundle holding one; a predicate alone goes with --predicate"
            ))),
        };
    };
    // Read as the verify gate reads an envelope's payload.
    let bytes = crate::verify::bundle::decode(payload)
        .map_err(|e| CliError::invalid(format!("{path}: the envelope's payload: {e}")))?;
    serde_json::from_slice(&bytes)
        .map_err(|e| CliError::invalid(format!("{path}: the envelope's payload is not JSON: {e}")))
}

/// The statement's first subject's sha256 digest, as `sha256:<hex>`; empty without one.
fn subject_digest(statement: &serde_json::Value) -> String {
    statement["subject"][0]["digest"]["sha256"]
        .as_str()
        .map_or(String::new(), |hex| format!("sha256:{hex}"))
}
