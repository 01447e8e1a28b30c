//! What `scan` prints: `kubectl get`'s tables per kind (the held-back candidates in a third),
//! or each object with its status as YAML; and its exit status.

use super::Reconciled;
use crate::api::ConditionStatus;
use crate::cli::error::CliError;
use crate::controller::outcome::next::Next;
use serde_json::{json, Value};
use std::io::Write;

/// Exit 0 when all are Ready; else 2 if any is Stalled, 3 otherwise.
pub(super) fn exit_status(results: &[Reconciled]) -> Result<(), CliError> {
    let not_ready: Vec<&Reconciled> = results.iter().filter(|r| ready(r).0 != "True").collect();
    if not_ready.is_empty() {
        return Ok(());
    }
    let names: Vec<String> = not_ready
        .iter()
        .map(|r| format!("{} {}/{}", r.kind, r.namespace, r.name))
        .collect();
    let message = format!("not ready: {}", names.join(", "));
    if not_ready.iter().any(|r| r.next == Next::AwaitChange) {
        Err(CliError::invalid(message))
    } else {
        Err(CliError::failed(message))
    }
}

/// The Ready condition's status and message.
fn ready(r: &Reconciled) -> (String, String) {
    r.status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .map(|c| {
            let status =
                serde_json::from_value(c["status"].clone()).unwrap_or(ConditionStatus::Unknown);
            let text = match status {
                ConditionStatus::True => "True",
                ConditionStatus::False => "False",
                ConditionStatus::Unknown => "Unknown",
            };
            (
                text.to_string(),
                c["message"].as_str().unwrap_or_default().to_string(),
            )
        })
        .unwrap_or_default()
}

/// `kubectl get`'s columns per kind, with the namespace first (and the digest for policies).
pub(super) fn write_tables(out: &mut impl Write, results: &[Reconciled]) -> std::io::Result<()> {
    const REPOSITORIES: &[&str] = &["NAMESPACE", "NAME", "IMAGE", "TAGS", "READY", "STATUS"];
    const POLICIES: &[&str] = &[
        "NAMESPACE",
        "NAME",
        "IMAGE",
        "TAG",
        "DIGEST",
        "READY",
        "STATUS",
    ];
    const HELD: &[&str] = &["NAMESPACE", "POLICY", "HELD BACK", "GATE", "REASON"];
    let of = |kind: &'static str| results.iter().filter(move |r| r.kind == kind);
    let tables = [
        (
            REPOSITORIES,
            of("ImageRepository").map(repository_row).collect(),
        ),
        (POLICIES, of("ImagePolicy").map(policy_row).collect()),
        (
            HELD,
            of("ImagePolicy").flat_map(held_rows).collect::<Vec<_>>(),
        ),
    ];
    let mut first = true;
    for (header, rows) in tables {
        if rows.is_empty() {
            continue;
        }
        if !first {
            writeln!(out)?;
        }
        first = false;
        let mut all = vec![header.iter().map(|h| h.to_string()).collect::<Vec<_>>()];
        all.extend(rows);
        write_aligned(out, &all)?;
    }
    Ok(())
}

/// A cell: a string as it is, anything else as JSON, nothing empty.
fn text(v: &Value) -> String {
    match (v.as_str(), v.is_null()) {
        (Some(s), _) => s.to_string(),
        (None, true) => String::new(),
        (None, false) => v.to_string(),
    }
}

fn repository_row(r: &Reconciled) -> Vec<String> {
    let (ready, message) = ready(r);
    let tags = text(&r.status["lastScanResult"]["tagCount"]);
    let image = text(&r.spec["image"]);
    vec![
        r.namespace.clone(),
        r.name.clone(),
        image,
        tags,
        ready,
        message,
    ]
}

fn policy_row(r: &Reconciled) -> Vec<String> {
    let (ready, message) = ready(r);
    let latest = &r.status["latestRef"];
    let [image, tag, digest] = [&latest["name"], &latest["tag"], &latest["digest"]].map(text);
    let (namespace, name) = (r.namespace.clone(), r.name.clone());
    vec![namespace, name, image, tag, digest, ready, message]
}

/// One row per candidate the policy held back.
/// A row per gate that holds a tag, the longest hold first.
fn held_rows(r: &Reconciled) -> Vec<Vec<String>> {
    let list = r.status["heldBack"].as_array().cloned().unwrap_or_default();
    let mut rows = Vec::new();
    for h in &list {
        let also = h["alsoHeldBy"].as_array().into_iter().flatten();
        for hold in std::iter::once(h).chain(also) {
            let [tag, gate, reason] = [&h["tag"], &hold["gate"], &hold["reason"]].map(text);
            rows.push(vec![r.namespace.clone(), r.name.clone(), tag, gate, reason]);
        }
    }
    rows
}

/// Columns padded to their widest cell, three spaces apart; the last one as it is.
fn write_aligned(out: &mut impl Write, rows: &[Vec<String>]) -> std::io::Result<()> {
    let columns = rows[0].len();
    let widths: Vec<usize> = (0..columns - 1)
        .map(|i| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0))
        .collect();
    for row in rows {
        for (cell, width) in row.iter().zip(&widths) {
            write!(out, "{cell:<width$}   ")?;
        }
        writeln!(out, "{}", row[columns - 1])?;
    }
    Ok(())
}

/// Each object with the status the controller would write, as YAML documents.
pub(super) fn write_yaml(out: &mut impl Write, results: &[Reconciled]) -> std::io::Result<()> {
    for r in results {
        let doc = json!({
            "apiVersion": "image.toolkit.fluxcd.io/v1",
            "kind": r.kind,
            "metadata": {"name": r.name, "namespace": r.namespace},
            "spec": r.spec,
            "status": r.status,
        });
        let text = serde_saphyr::to_string(&doc).map_err(std::io::Error::other)?;
        write!(out, "---\n{text}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The HELD BACK table has a row per gate that holds a tag, the longest hold first.
    #[test]
    fn each_gate_that_holds_a_tag_has_a_row() {
        let policy = Reconciled {
            kind: "ImagePolicy",
            namespace: "team".into(),
            name: "app".into(),
            spec: json!({}),
            status: json!({"heldBack": [
                {"tag": "1.6.0", "gate": "verify", "reason": "no signature",
                 "alsoHeldBy": [{"gate": "minAge", "reason": "until 2026-12-14T10:00:00Z"}]},
                {"tag": "1.5.0", "gate": "platforms", "reason": "missing linux/arm64/v8"}]}),
            next: Next::AwaitChange,
        };
        let rows: Vec<String> = held_rows(&policy).iter().map(|r| r.join(" ")).collect();
        assert_eq!(
            rows,
            [
                "team app 1.6.0 verify no signature",
                "team app 1.6.0 minAge until 2026-12-14T10:00:00Z",
                "team app 1.5.0 platforms missing linux/arm64/v8"
            ]
        );
    }
}
