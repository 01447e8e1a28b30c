//! Conditions on a verified attestation, written in CEL (`spec.verify.attestations[].conditions`):
//! parsed, type-checked and their regular expressions compiled once per spec, then evaluated on
//! a statement whose size is bounded too ([`data`]), within a budget counted as they run.
//! Pure: the statement comes in verified, the clock as a value.
//!
//! One rule (docs/imagepolicy.md, "Conditions"): a condition passes only where cel-go, with the
//! Kubernetes API server's options, evaluates it to `true`. This is an evaluator of our own for
//! the subset conditions use (JSON data, the standard functions and macros), written to
//! cel-go's semantics: a missing key is an error, `in` is membership, RE2 classes are ASCII,
//! the accessors read UTC, Go's grammars for times and durations, overflow is an error. Where
//! it cannot match cel-go it errs (an error is never true, and CEL's logic only lets an error
//! be absorbed by an answer cel-go would give too), or refuses at compile time.
//!
//! The variables are `statement` (the in-toto statement), `predicate` (its predicate),
//! `digest` (`sha256:<hex>`, the image's) and `now` (a timestamp). JSON numbers are doubles, as
//! cel-go reads JSON. A condition passes only when it evaluates to `true`: `false`, an error
//! (a missing field, a type mismatch) and anything but a boolean hold the tag.

mod ast;
mod calls;
mod check;
mod convert;
mod data;
mod escape;
mod eval;
mod fault;
mod format;
mod functions;
mod lex;
mod overloads;
mod parse;
mod pointed;
mod regex;
#[cfg(test)]
mod tests;
mod time;
mod types;
mod value;

pub use check::MAX_COMPREHENSION_DEPTH;
pub use data::{Bounds as DataBounds, MAX_ITEMS, MAX_STRING_BYTES, MAX_VALUES};
pub use eval::MISSING_FIELD;
pub use fault::Budget;
pub use parse::MAX_NESTING as MAX_DEPTH;
pub use regex::MAX_STATES as MAX_PATTERN_STATES;
#[doc(hidden)]
pub use value::{Key, Value};

use ast::Expr;
use eval::Scope;
use fault::Fault;
use std::sync::Arc;

/// The longest expression accepted (Kubernetes' validation rules are usually under 1 KiB).
pub const MAX_EXPRESSION_BYTES: usize = 4096;
/// The most one condition may spend on one statement, in units of about one node's evaluation
/// (as Kubernetes bounds one CEL call: its `PerCallLimit`).
pub const COST_LIMIT: u64 = 1_000_000;
/// The most all the conditions of one policy may spend on one digest, every statement judged.
pub const POLICY_COST_LIMIT: u64 = 4 * COST_LIMIT;
/// The attestations of one predicate type judged per digest, at most: every one that verifies
/// must satisfy every condition (cosign's rule); past this many the tag is held.
pub const MAX_STATEMENTS_JUDGED: usize = 8;
/// The variables a condition may name.
pub const VARIABLES: [&str; 4] = ["statement", "predicate", "digest", "now"];
/// The deepest an expression's tree may be (long chains of `+` included): evaluation recurses.
const MAX_HEIGHT: usize = 64;

/// A compiled condition and how a refusal names it.
#[derive(Clone)]
pub struct Condition {
    pub expression: String,
    /// The user's message when it is false; else the expression is quoted.
    pub message: Option<String>,
    program: Arc<Expr>,
    reads_now: bool,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condition")
            .field("expression", &self.expression)
            .finish()
    }
}

/// Why an expression is refused: what, and where (a byte offset of the expression, when the
/// parser knows one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct CompileError {
    pub reason: String,
}

/// Why a condition is not `true` on a statement: what code decides on, and the line status
/// shows.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct Unmet {
    pub kind: UnmetKind,
    pub message: String,
}

/// How a condition came to be not `true`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnmetKind {
    /// It evaluated to `false`.
    False,
    /// To a value that is not a boolean.
    NotBoolean,
    /// To an error (a missing key, no such overload, an overflow): never true in cel-go.
    Failed,
    /// It spent the budget it may.
    OverBudget,
    /// Its caller stopped it before it finished: nothing was judged, so nothing is kept.
    Stopped,
}

/// What one statement evaluates against: its values, built once for all conditions.
pub struct Input {
    statement: Value,
    predicate: Value,
    digest: Value,
}

/// Compiled expressions kept, so that a spec decided again is not compiled again (its
/// regular expressions above all): at most this many, then forgotten at once.
const KEPT: usize = 1024;

type Kept = std::collections::HashMap<String, Result<Arc<Expr>, CompileError>>;

static COMPILED: std::sync::Mutex<Option<Kept>> = std::sync::Mutex::new(None);

impl Condition {
    /// [`Condition::compile`], kept by expression.
    pub fn cached(expression: &str, message: Option<&str>) -> Result<Condition, CompileError> {
        let known = COMPILED
            .lock()
            .ok()
            .and_then(|kept| kept.as_ref()?.get(expression).cloned());
        let compiled = match known {
            Some(compiled) => compiled,
            None => {
                let compiled = Condition::compile(expression, None).map(|c| c.program);
                if let Ok(mut kept) = COMPILED.lock() {
                    let kept = kept.get_or_insert_with(Kept::new);
                    if kept.len() >= KEPT {
                        kept.clear();
                    }
                    kept.insert(expression.to_string(), compiled.clone());
                }
                compiled
            }
        };
        Ok(Condition::of(expression, message, compiled?))
    }

    fn of(expression: &str, message: Option<&str>, program: Arc<Expr>) -> Condition {
        Condition {
            expression: expression.to_string(),
            message: message.map(str::to_string),
            reads_now: names_now(&program),
            program,
        }
    }

    /// Parses and checks `expression`: within [`MAX_EXPRESSION_BYTES`], CEL's grammar, only
    /// [`VARIABLES`] and supported functions, every operator on types cel-go has an overload
    /// for, a regular expression only as a literal that Go compiles, a boolean result.
    pub fn compile(expression: &str, message: Option<&str>) -> Result<Condition, CompileError> {
        let refuse = |reason: String| CompileError { reason };
        if expression.len() > MAX_EXPRESSION_BYTES {
            return Err(refuse(format!(
                "the expression is {} bytes; at most {MAX_EXPRESSION_BYTES} are accepted",
                expression.len()
            )));
        }
        if expression.trim().is_empty() {
            return Err(refuse("the expression is empty".into()));
        }
        let program = read(expression).map_err(refuse)?;
        check::check(&program).map_err(|e| refuse(format!("does not compile: {}", cut(&e))))?;
        Ok(Condition::of(expression, message, Arc::new(program)))
    }

    /// Whether it names `now` (then its answer may change with time alone).
    pub fn reads_now(&self) -> bool {
        self.reads_now
    }

    /// `Ok(())` when the condition is `true` for `input` at `now`, within [`COST_LIMIT`]; else
    /// why not, in a line.
    pub fn holds(&self, input: &Input, now: i64) -> Result<(), Unmet> {
        self.holds_within(input, now, &mut Budget::new(COST_LIMIT))
    }

    /// [`Condition::holds`], spending at most [`COST_LIMIT`] of `budget`.
    pub fn holds_within(&self, input: &Input, now: i64, budget: &mut Budget) -> Result<(), Unmet> {
        let now = time::Timestamp::new(now, 0).map_err(|e| self.failed(UnmetKind::Failed, &e))?;
        let now = Value::Timestamp(now);
        let limit = budget.left.min(COST_LIMIT);
        let mut own = Budget {
            left: limit,
            stop: budget.stop.clone(),
        };
        let mut scope = Scope {
            globals: [
                ("statement", &input.statement),
                ("predicate", &input.predicate),
                ("digest", &input.digest),
                ("now", &now),
            ],
            locals: Vec::new(),
            budget: &mut own,
        };
        let result = scope.eval(&self.program);
        budget.left -= limit - own.left;
        let (kind, why) = match result {
            Ok(Value::Bool(true)) => return Ok(()),
            Ok(Value::Bool(false)) => (UnmetKind::False, "is false".to_string()),
            Ok(other) => (
                UnmetKind::NotBoolean,
                format!("is not a boolean ({})", other.kind()),
            ),
            Err(Fault::Error(err)) => (UnmetKind::Failed, format!("failed: {}", cut(&err))),
            Err(Fault::Budget) => (
                UnmetKind::OverBudget,
                format!(
                    "was stopped: its evaluation spent the {limit} it may (a macro over statement \
                     data runs once per element; prefer comparisons with literals)"
                ),
            ),
            Err(Fault::Stopped) => (
                UnmetKind::Stopped,
                "was stopped before it finished: its policy changed or was deleted, or it gave \
                 its place to another namespace; it is judged again"
                    .to_string(),
            ),
        };
        Err(self.failed(kind, &why))
    }

    /// The refusal of this condition: the user's message, else the expression, and why.
    fn failed(&self, kind: UnmetKind, why: &str) -> Unmet {
        let message = match &self.message {
            Some(message) => format!("{} ({why})", cut(message)),
            None => format!("condition '{}' {why}", cut(&self.expression)),
        };
        Unmet { kind, message }
    }
}

impl Input {
    /// The values of a verified statement (its JSON), refused over [`DataBounds::DEFAULT`].
    pub fn new(statement: &serde_json::Value, digest: &str) -> Result<Input, String> {
        let bounds = DataBounds::DEFAULT;
        let value = data::to_value(statement, &bounds)?;
        let predicate = match &value {
            Value::Map(map) => map
                .get(&value::Key::String("predicate".into()))
                .cloned()
                .unwrap_or(Value::Null),
            _ => Value::Null,
        };
        Ok(Input {
            statement: value,
            predicate,
            digest: Value::string(digest),
        })
    }
}

/// The value of `expression` on an empty statement, checked as a condition is but of any type:
/// what CEL's conformance suite asks of an implementation (tests/it/policy/cel_conformance.rs).
#[doc(hidden)]
pub fn evaluate(expression: &str) -> Result<Value, String> {
    let program = read(expression)?;
    check::type_of(&program).map_err(|e| format!("does not compile: {e}"))?;
    let (null, digest) = (Value::Null, Value::string(""));
    let now = Value::Timestamp(time::Timestamp::new(0, 0)?);
    let mut budget = Budget::new(COST_LIMIT);
    let mut scope = Scope {
        globals: [
            ("statement", &null),
            ("predicate", &null),
            ("digest", &digest),
            ("now", &now),
        ],
        locals: Vec::new(),
        budget: &mut budget,
    };
    scope.eval(&program).map_err(|fault| format!("{fault:?}"))
}

/// `expression` parsed, its tree within [`MAX_HEIGHT`] (evaluation recurses on it).
fn read(expression: &str) -> Result<Expr, String> {
    let program = parse::parse(expression)
        .map_err(|e| format!("does not parse: {}", pointed::pointed(expression, &e)))?;
    if height(&program) > MAX_HEIGHT {
        return Err(format!(
            "the expression's tree is over {MAX_HEIGHT} deep (long chains of + included)"
        ));
    }
    Ok(program)
}

/// Whether `e` reads `now`.
fn names_now(e: &Expr) -> bool {
    let mut found = false;
    visit(e, &mut |node| {
        found |= matches!(node, Expr::Var(name) if &**name == "now")
    });
    found
}

/// The height of `e`'s tree.
fn height(e: &Expr) -> usize {
    let mut tallest = 0;
    children(e, &mut |child| tallest = tallest.max(height(child)));
    1 + tallest
}

fn visit(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    children(e, &mut |child| visit(child, f));
}

fn children(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    match e {
        Expr::Literal(_) | Expr::Var(_) => {}
        Expr::List(items) | Expr::Call(_, items) => items.iter().for_each(f),
        Expr::Map(entries) => entries.iter().for_each(|(k, v)| {
            f(k);
            f(v)
        }),
        Expr::Select(x, _) | Expr::Has(x, _) | Expr::Not(x) | Expr::Neg(x) => f(x),
        Expr::Index(a, b) | Expr::And(a, b) | Expr::Or(a, b) | Expr::Binary(_, a, b) => {
            f(a);
            f(b)
        }
        Expr::Cond(a, b, c) => {
            f(a);
            f(b);
            f(c)
        }
        Expr::Loop(l) => {
            f(&l.range);
            l.filter.iter().for_each(&mut *f);
            f(&l.body)
        }
    }
}

/// A text in one line of at most 200 characters: what a refusal repeats.
fn cut(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let shown: String = line.chars().take(200).collect();
    match shown.len() < line.len() {
        true => format!("{shown}..."),
        false => shown,
    }
}
