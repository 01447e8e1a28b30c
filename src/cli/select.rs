//! `image-reflector select`: elects a tag offline, exactly as the controller would.
//!
//! Exit codes: 0 elected (the tag on stdout), 1 nothing elected, 2 invalid manifest, policy or
//! regex.

use super::error::{read_input, CliError};
use super::Output;
use crate::api::{
    HeldBackTag, ImagePolicySpec, ImagePolicyStatus, API_GROUP, DEPRECATED_VERSION, STORAGE_VERSION,
};
use crate::controller::image_policy::downgrade::Floor;
use crate::controller::image_policy::notices;
use crate::policy::{Policy, PolicyKind};
use std::io::Write;

/// Options of `select`.
#[derive(clap::Args, Debug)]
pub struct SelectArgs {
    /// ImagePolicy manifest (YAML or JSON, v1 or v1beta2); `-` for standard input.
    #[arg(short = 'f', long = "file")]
    pub file: String,
    /// Tags, one a line (blank lines ignored); `-` for standard input; a store's compressed
    /// file (`tags.fc.gz`, `tags.txt.gz`) is read as it is.
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

/// The tags of `--tags-file`: lines, or a compressed file from the store (`tags.fc.gz`,
/// `tags.txt.gz`) as it is.
fn read_tags(path: &str) -> Result<String, CliError> {
    if !path.ends_with(".gz") {
        return read_input(path);
    }
    let bytes =
        std::fs::read(path).map_err(|e| CliError::invalid(format!("reading {path}: {e}")))?;
    crate::store::decode_tags_file(path, bytes)
        .map(|tags| tags.as_text().to_string())
        .map_err(|e| CliError::invalid(format!("reading {path}: {e}")))
}

/// Runs `select`, writing the result to `out`.
pub fn run(args: &SelectArgs, out: &mut impl Write) -> Result<(), CliError> {
    if args.file == "-" && args.tags_file == "-" {
        return Err(CliError::invalid(
            "only one of -f and --tags-file can be read from standard input",
        ));
    }
    let (spec, recorded) = parse_policy(&read_input(&args.file)?, &args.file)?;
    let policy = spec.selection_policy().map_err(CliError::invalid)?;
    let Recorded { held, status } = recorded;
    let said = Said {
        // The controller's guard, offline: the repository's image is not known here.
        floor: Floor::recorded(&spec, &status, None, &policy),
        gates: gate_names(&spec)?,
        held,
        frozen: notices::frozen(&spec),
        unwaited: notices::unwaited(&spec),
        unseen: (policy.kind() == PolicyKind::Newest).then_some(UNSEEN),
    };
    let text = read_tags(&args.tags_file)?;
    let mut tags: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    // The store's order, in which the controller holds tags.
    tags.sort_unstable_by(|a, b| b.cmp(a));
    if args.explain || args.output == Output::Json {
        return explained(args, &policy, &tags, &said, out);
    }
    let mut tag = policy
        .select_sorted(tags.iter().copied())
        .map_err(CliError::not_found)?
        .to_string();
    if let Some(at) = said.refused_at(&tag) {
        eprintln!("note: {}", held_note(&at, &tag));
        tag = at;
    }
    if !said.gates.is_empty() {
        eprintln!(
            "note: the gates ({}) are not checked offline; `image-reflector scan` checks them against the registry",
            said.gates.join(", ")
        );
    }
    for note in said.notes() {
        eprintln!("note: {note}");
    }
    writeln!(out, "{tag}").map_err(write_err)
}

/// What `select` says beside the election: the downgrade guard's floor, the gates it cannot
/// check, what the controller last held back, and its notes.
struct Said {
    floor: Option<Floor>,
    gates: Vec<String>,
    held: Vec<HeldBackTag>,
    frozen: Option<String>,
    unwaited: Option<String>,
    unseen: Option<&'static str>,
}

impl Said {
    /// The tag the guard holds at, when electing `elected` would be a downgrade.
    fn refused_at(&self, elected: &str) -> Option<String> {
        let floor = self.floor.as_ref().filter(|f| f.refuses(elected))?;
        Some(floor.tag.clone())
    }

    fn notes(&self) -> impl Iterator<Item = &str> {
        let notes = [self.frozen.as_deref(), self.unwaited.as_deref()];
        notes.into_iter().flatten().chain(self.unseen)
    }
}

fn write_err(e: std::io::Error) -> CliError {
    CliError::failed(format!("writing output: {e}"))
}

/// `--explain` or `-o json`: how the tags were counted, the runners-up, and what is said.
fn explained(
    args: &SelectArgs,
    policy: &Policy,
    tags: &[&str],
    said: &Said,
    out: &mut impl Write,
) -> Result<(), CliError> {
    let x = policy.explain(tags.iter().copied(), args.runners_up);
    let elected = x.elected.as_ref().map(|c| c.tag.as_str());
    let held_at = elected.and_then(|e| said.refused_at(e));
    match args.output {
        Output::Json => {
            let mut json = serde_json::to_value(&x).map_err(CliError::failed)?;
            if let Some(at) = &held_at {
                json["downgradeRefused"] = serde_json::json!({"heldAt": at});
            }
            if !said.gates.is_empty() {
                json["gatesNotChecked"] = serde_json::json!(said.gates);
            }
            if !said.held.is_empty() {
                json["heldBack"] = serde_json::json!(said.held);
            }
            if let Some(frozen) = &said.frozen {
                json["cannotMove"] = serde_json::json!(frozen);
            }
            if let Some(unwaited) = &said.unwaited {
                json["bumpsWaitingNothing"] = serde_json::json!(unwaited);
            }
            if let Some(unseen) = said.unseen {
                json["firstSightingsUnknown"] = serde_json::json!(unseen);
            }
            let json = serde_json::to_string_pretty(&json).map_err(CliError::failed)?;
            writeln!(out, "{json}").map_err(write_err)?;
        }
        Output::Text => {
            write_explanation(out, &x, policy).map_err(write_err)?;
            if let Some(at) = &held_at {
                writeln!(out, "{}", held_note(at, elected.unwrap_or_default()))
                    .map_err(write_err)?;
            }
            write_gates(out, &said.gates, &said.held).map_err(write_err)?;
            for note in said.notes() {
                writeln!(out, "note: {note}").map_err(write_err)?;
            }
        }
    }
    match (&x.elected, x.error) {
        (Some(_), _) => Ok(()),
        (None, why) => Err(CliError::not_found(why.unwrap_or_default())),
    }
}

/// What `select` says of a newest order: it has no record of first sightings.
const UNSEEN: &str = "spec.policy.newest orders by when the controller first saw each tag, \
                      which select does not know: every tag counts as seen at once, so the \
                      byte-greatest name is elected here; `image-reflector scan` keeps a store \
                      of its own (--storage-path) and dates the tags of one sighting";

fn held_note(at: &str, elected: &str) -> String {
    format!(
        "held at {at} (status.latestRef): {elected} ranks below it and no tag given ranks higher (downgrade refused); the controller keeps {at}"
    )
}

/// The gates the spec sets, as `--explain` names them; an invalid one is an invalid policy.
fn gate_names(spec: &ImagePolicySpec) -> Result<Vec<String>, CliError> {
    Ok(spec.gates().map_err(CliError::invalid)?.describe())
}

/// The gated election's part of `--explain`: the elected tag and runners-up are the order the
/// gates would be checked in, and only a registry can answer them.
fn write_gates(
    out: &mut impl Write,
    gates: &[String],
    held: &[HeldBackTag],
) -> std::io::Result<()> {
    if gates.is_empty() {
        return Ok(());
    }
    // What the controller found when it last walked (the manifest's status.heldBack).
    for h in held {
        for (gate, reason) in h.holds() {
            writeln!(
                out,
                "held back (status.heldBack): {} by {gate}: {reason}",
                h.tag
            )?;
        }
    }
    writeln!(out, "gates: {}", gates.join("; "))?;
    writeln!(
        out,
        "gates not checked: select reads no registry; the controller and `image-reflector scan` \
         walk the candidates above in this order and elect the first that passes (status.heldBack \
         says why the others did not)"
    )
}

/// The counts that apply to the policy's kind: a filter's lines only with `filterTags`, the
/// range's only for semver, unparsable values only where a value must parse.
fn write_explanation(
    out: &mut impl Write,
    x: &crate::policy::Explanation,
    policy: &Policy,
) -> std::io::Result<()> {
    match &x.elected {
        Some(c) if c.value != c.tag => writeln!(out, "elected: {} (value {})", c.tag, c.value)?,
        Some(c) => writeln!(out, "elected: {}", c.tag)?,
        None => writeln!(out, "elected: none")?,
    }
    let (filter, extract) = policy.filters();
    writeln!(out, "tags read: {}", x.read)?;
    if filter {
        writeln!(out, "dropped by filterTags: {}", x.filtered_out)?;
    }
    // The count, then the first few tags it counts.
    let named = |count: usize, tags: &[String]| match tags.len() {
        0 => count.to_string(),
        n if n < count => format!("{count} ({}, ...)", tags.join(", ")),
        _ => format!("{count} ({})", tags.join(", ")),
    };
    if policy.kind() == PolicyKind::SemVer {
        let (skipped, outside) = (&x.unparsable_tags, &x.out_of_range_tags);
        writeln!(
            out,
            "skipped as not a version: {}",
            named(x.unparsable, skipped)
        )?;
        writeln!(
            out,
            "outside the semver range: {}",
            named(x.out_of_range, outside)
        )?;
    }
    if policy.kind() == PolicyKind::Numerical {
        let skipped = named(x.unparsable, &x.unparsable_tags);
        writeln!(out, "skipped as not a number: {skipped}")?;
    }
    if extract {
        writeln!(
            out,
            "collided (a byte-smaller tag extracted the same value): {}",
            x.collided
        )?;
    }
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

/// Reads the one ImagePolicy of a manifest file of either served version and returns its
/// spec, with the tags `status.heldBack` lists when the manifest carries a status. The file
/// may hold several YAML documents and `kind: List`s (what `kubectl get imagepolicies -o yaml`
/// prints); exactly one ImagePolicy must be among them. When there were other documents, a
/// note on standard error says which one was used.
pub fn parse_policy(text: &str, source: &str) -> Result<(ImagePolicySpec, Recorded), CliError> {
    let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple(text)
        .map_err(|e| CliError::invalid(format!("{source}: not a YAML or JSON document: {e}")))?;
    let mut found = Vec::new();
    let mut others = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let place = format!("document {}", i + 1);
        match doc.get("kind").and_then(|v| v.as_str()) {
            Some("List") | Some("ImagePolicyList") => {
                let items = doc.get("items").and_then(|v| v.as_array()).cloned();
                for (j, item) in items.into_iter().flatten().enumerate() {
                    let place = format!("{place}, item {}", j + 1);
                    sort_document(item, place, &mut found, &mut others);
                }
            }
            _ => sort_document(doc, place, &mut found, &mut others),
        }
    }
    let (place, doc) = the_one(found, &others, source)?;
    if !others.is_empty() {
        eprintln!(
            "select: using ImagePolicy {} ({place} of {source})",
            name_of(&doc)
        );
    }
    let spec = doc
        .get("spec")
        .cloned()
        .ok_or_else(|| CliError::invalid(format!("{source}: the ImagePolicy has no spec")))?;
    let spec = serde_json::from_value(spec)
        .map_err(|e| CliError::invalid(format!("{source}: invalid ImagePolicy spec: {e}")))?;
    Ok((spec, Recorded::read(&doc)))
}

/// The one ImagePolicy of a served version among `found` (with where it was), or why not.
fn the_one(
    mut found: Vec<(String, serde_json::Value)>,
    others: &[String],
    source: &str,
) -> Result<(String, serde_json::Value), CliError> {
    let served = [STORAGE_VERSION, DEPRECATED_VERSION].map(|v| format!("{API_GROUP}/{v}"));
    let (place, doc) = match found.len() {
        1 => found.remove(0),
        0 => {
            let seen = match others.is_empty() {
                true => "no objects".to_string(),
                false => others.join(", "),
            };
            return Err(CliError::invalid(format!(
                "{source}: expected kind ImagePolicy with apiVersion {} or {}, found {seen}",
                served[0], served[1]
            )));
        }
        n => {
            let names: Vec<String> = found
                .iter()
                .map(|(p, d)| format!("{} ({p})", name_of(d)))
                .collect();
            return Err(CliError::invalid(format!(
                "{source}: holds {n} ImagePolicies ({}); select elects for one: pass a file with only \
                 that one, e.g. `kubectl get imagepolicy NAME -o yaml`",
                names.join(", ")
            )));
        }
    };
    let api_version = doc.get("apiVersion").and_then(|v| v.as_str()).unwrap_or("");
    if !served.iter().any(|v| v == api_version) {
        return Err(CliError::invalid(format!(
            "{source}: expected kind ImagePolicy with apiVersion {} or {}, found apiVersion {api_version:?} ({place})",
            served[0], served[1]
        )));
    }
    Ok((place, doc))
}

impl Recorded {
    /// What can be read of the controller's status, never failing on it: what it held back,
    /// and the elected tag the downgrade guard reads (whatever generation elected it).
    fn read(doc: &serde_json::Value) -> Recorded {
        let held = doc
            .pointer("/status/heldBack")
            .cloned()
            .and_then(|h| serde_json::from_value(h).ok())
            .unwrap_or_default();
        let status = ImagePolicyStatus {
            latest_ref: doc
                .pointer("/status/latestRef")
                .cloned()
                .and_then(|r| serde_json::from_value(r).ok()),
            ..Default::default()
        };
        Recorded { held, status }
    }
}

/// What the manifest's status says of the controller's last election.
#[derive(Debug, Default)]
pub struct Recorded {
    /// `status.heldBack`.
    pub held: Vec<HeldBackTag>,
    /// `status.latestRef`, for the downgrade guard.
    pub status: ImagePolicyStatus,
}

/// Files an object under the ImagePolicies found or, by kind, under the others.
fn sort_document(
    doc: serde_json::Value,
    place: String,
    found: &mut Vec<(String, serde_json::Value)>,
    others: &mut Vec<String>,
) {
    match doc.get("kind").and_then(|v| v.as_str()) {
        Some("ImagePolicy") => found.push((place, doc)),
        Some(kind) => others.push(format!("kind {kind:?} ({place})")),
        None if doc.is_null() => {}
        None => others.push(format!("no kind ({place})")),
    }
}

/// `namespace/name`, or `name`, or `(unnamed)`.
fn name_of(doc: &serde_json::Value) -> String {
    let meta = doc.get("metadata");
    let field = |k: &str| meta.and_then(|m| m.get(k)).and_then(|v| v.as_str());
    match (field("namespace"), field("name")) {
        (Some(ns), Some(name)) => format!("{ns}/{name}"),
        (None, Some(name)) => name.to_string(),
        _ => "(unnamed)".to_string(),
    }
}
