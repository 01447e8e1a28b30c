//! What a refused or failing condition says: where it does not parse, which path it read.

use super::{holds, refused};
use serde_json::json;

/// A field typo names itself: a read of a field the attestation lacks says which path, in
/// words, by field or by literal key; a read that is not a path keeps cel-go's words.
#[test]
fn a_missing_field_is_named_by_the_path_read() {
    let provenance = json!({"buildDefinition": {"externalParameters": {}, "steps": [{}]}});
    let typo = "predicate.buildDefinition.externalParameter.workflow == 'x'";
    assert_eq!(
        holds(typo, provenance.clone()),
        Err(format!(
            "condition '{typo}' failed: reads predicate.buildDefinition.externalParameter, \
             which this attestation does not have (no such key)"
        ))
    );
    let keyed = "predicate.buildDefinition.externalParameters['github.event_name'] != 'x'";
    let said = holds(keyed, provenance.clone()).unwrap_err();
    assert!(
        said.ends_with(r#"reads predicate.buildDefinition.externalParameters["github.event_name"], which this attestation does not have (no such key)"#),
        "{said}"
    );
    let listed = holds(
        "predicate.buildDefinition.steps[0].name == 'x'",
        provenance.clone(),
    );
    assert!(listed
        .unwrap_err()
        .contains("reads predicate.buildDefinition.steps[0].name,"));
    let computed = holds("dyn({'a': 1}).b == 1", provenance);
    assert!(computed.unwrap_err().ends_with("failed: no such key: b"));
}

/// A syntax error points at its column (with the text around it), and says nothing else.
#[test]
fn a_syntax_error_points_at_its_column() {
    let said = refused("predicate.a === 'x'");
    assert_eq!(
        said,
        "does not parse: unexpected character '=' at column 15\n  predicate.a === 'x'\n                ^"
    );
}
