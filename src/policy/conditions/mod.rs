//! Conditions on a verified attestation, written in CEL (`spec.verify.attestations[].conditions`):
//! compiled once per spec, each checked statically before it is accepted (the variables and
//! functions it names, its estimated cost), then evaluated on a statement whose size is bounded
//! too ([`data`]). Pure: the statement comes in verified, the clock as a value.
//!
//! The variables are `statement` (the in-toto statement), `predicate` (its predicate),
//! `digest` (`sha256:<hex>`, the image's) and `now` (a timestamp). JSON numbers are doubles, as
//! cel-go reads JSON. A condition passes only when it evaluates to `true`: `false`, an error
//! (a missing field, a type mismatch) and anything but a boolean hold the tag.

mod cost;
mod data;
#[cfg(test)]
mod tests;

pub use cost::{COST_LIMIT, MAX_COMPREHENSION_DEPTH, MAX_STATEMENTS_JUDGED, POLICY_COST_LIMIT};
pub use data::{Bounds as DataBounds, MAX_ITEMS, MAX_STRING_BYTES, MAX_VALUES};

use cel::{Context, Program, Value};
use std::sync::Arc;

/// The longest expression accepted (Kubernetes' validation rules are usually under 1 KiB).
pub const MAX_EXPRESSION_BYTES: usize = 4096;
/// The deepest an expression's tree may be (and its brackets, ternaries and unary operators
/// before it is parsed): the parser, the check and the evaluator all recurse on it.
pub const MAX_DEPTH: usize = 32;
/// The parser's stack: its ANTLR descent takes about 140 KiB a nesting level unoptimized, and
/// it runs on a thread of its own, once per expression (compiled conditions are kept).
const PARSER_STACK: usize = 64 << 20;
/// The variables a condition may name.
pub const VARIABLES: [&str; 4] = ["statement", "predicate", "digest", "now"];

/// A compiled condition and how a refusal names it.
#[derive(Clone)]
pub struct Condition {
    pub expression: String,
    /// The user's message when it is false; else the expression is quoted.
    pub message: Option<String>,
    program: Arc<Program>,
    /// Its estimated cost, at most [`COST_LIMIT`].
    pub cost: u64,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condition")
            .field("expression", &self.expression)
            .field("cost", &self.cost)
            .finish()
    }
}

/// Why an expression is refused: what, and where (a byte offset of the expression, when the
/// parser or the check knows one).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct CompileError {
    pub reason: String,
}

/// What one statement evaluates against: its values, built once for all conditions.
pub struct Input {
    statement: Value,
    predicate: Value,
    digest: Value,
}

/// Compiled expressions kept, so that a spec decided again is not parsed again (a parse is a
/// thread and up to a millisecond): at most this many, then forgotten at once.
const KEPT: usize = 1024;

type Kept = std::collections::HashMap<String, Result<(Arc<Program>, u64), CompileError>>;

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
                let compiled = Condition::compile(expression, None).map(|c| (c.program, c.cost));
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
        let (program, cost) = compiled?;
        Ok(Condition {
            expression: expression.to_string(),
            message: message.map(str::to_string),
            program,
            cost,
        })
    }

    /// Parses and checks `expression`: within [`MAX_EXPRESSION_BYTES`], CEL's grammar, only
    /// [`VARIABLES`] and supported functions, a regular expression only as a literal, and an
    /// estimated cost within [`COST_LIMIT`].
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
        prescan(expression).map_err(refuse)?;
        let (program, cost) = parse(expression)?;
        Ok(Condition {
            expression: expression.to_string(),
            message: message.map(str::to_string),
            program: Arc::new(program),
            cost,
        })
    }

    /// Whether it names `now` (then its answer may change with time alone).
    pub fn reads_now(&self) -> bool {
        self.program.references().has_variable("now")
    }

    /// `Ok(())` when the condition is `true` for `input` at `now`; else why not, in a line.
    pub fn holds(&self, input: &Input, now: i64) -> Result<(), String> {
        let now = chrono::DateTime::from_timestamp(now, 0).unwrap_or_default();
        let mut context = Context::default();
        // CEL's size of a string counts code points, as cel-go's; the crate's counts bytes.
        context.add_function("size", size);
        // The crate compiles a regular expression at every call (26 µs each: 4,096 names
        // matched cost 106 ms); patterns are literals, compiled once and kept.
        context.add_function("matches", matches);
        context.add_variable_from_value("statement", input.statement.clone());
        context.add_variable_from_value("predicate", input.predicate.clone());
        context.add_variable_from_value("digest", input.digest.clone());
        context.add_variable_from_value("now", Value::Timestamp(now.fixed_offset()));
        // The interpreter panics on a few shapes it does not support (a comprehension over a
        // number); that is an error of this condition, not of the process.
        let program = self.program.clone();
        let run =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| program.execute(&context)));
        match run {
            Ok(Ok(Value::Bool(true))) => Ok(()),
            Ok(Ok(Value::Bool(false))) => Err(self.failed("is false")),
            Ok(Ok(other)) => Err(self.failed(&format!("is not a boolean ({:?})", other.type_of()))),
            Ok(Err(err)) => Err(self.failed(&format!("failed: {}", cut(&format!("{err:?}"))))),
            Err(_) => Err(self.failed("failed: the evaluator does not support this shape")),
        }
    }

    /// The refusal of this condition: the user's message, else the expression, and why.
    fn failed(&self, why: &str) -> String {
        match &self.message {
            Some(message) => format!("{} ({why})", cut(message)),
            None => format!("condition '{}' {why}", cut(&self.expression)),
        }
    }
}

impl Input {
    /// The values of a verified statement (its JSON), refused over [`DataBounds::DEFAULT`].
    pub fn new(statement: &serde_json::Value, digest: &str) -> Result<Input, String> {
        let bounds = DataBounds::DEFAULT;
        let value = data::to_value(statement, &bounds)?;
        let predicate = match &value {
            Value::Map(map) => map
                .map
                .get(&cel::objects::Key::String(Arc::new("predicate".into())))
                .cloned()
                .unwrap_or(Value::Null),
            _ => Value::Null,
        };
        Ok(Input {
            statement: value,
            predicate,
            digest: Value::String(Arc::new(digest.to_string())),
        })
    }
}

/// `size()` as CEL defines it: a string's code points, a list's or map's entries, bytes.
fn size(
    ftx: &cel::FunctionContext,
    cel::extractors::This(this): cel::extractors::This<Value>,
) -> Result<i64, cel::ExecutionError> {
    let size = match this {
        Value::List(l) => l.len(),
        Value::Map(m) => m.map.len(),
        Value::String(s) => s.chars().count(),
        Value::Bytes(b) => b.len(),
        value => return Err(ftx.error(format!("cannot determine the size of {value:?}"))),
    };
    Ok(size as i64)
}

/// The regular expressions `matches()` compiled, by pattern (literals of compiled conditions:
/// at most [`KEPT`], then forgotten at once).
static PATTERNS: std::sync::Mutex<Option<std::collections::HashMap<String, regex::Regex>>> =
    std::sync::Mutex::new(None);

/// `s.matches(re)`, RE2's syntax as Rust's regex reads it, within the size the check allowed.
fn matches(
    ftx: &cel::FunctionContext,
    cel::extractors::This(this): cel::extractors::This<Arc<String>>,
    pattern: Arc<String>,
) -> Result<bool, cel::ExecutionError> {
    let known = PATTERNS
        .lock()
        .ok()
        .and_then(|kept| kept.as_ref()?.get(pattern.as_str()).cloned());
    let compiled = match known {
        Some(compiled) => compiled,
        None => {
            let compiled = cost::regex(&pattern).map_err(|e| ftx.error(e))?;
            if let Ok(mut kept) = PATTERNS.lock() {
                let kept = kept.get_or_insert_with(Default::default);
                if kept.len() >= KEPT {
                    kept.clear();
                }
                kept.insert(pattern.to_string(), compiled.clone());
            }
            compiled
        }
    };
    Ok(compiled.is_match(&this))
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

fn one_line(err: &impl std::fmt::Display) -> String {
    cut(&err.to_string())
}

/// What the parser would recurse on, bounded before it runs: brackets nested, ternaries and
/// runs of unary operators (string literals aside).
fn prescan(expression: &str) -> Result<(), String> {
    let (mut depth, mut deepest, mut ternaries, mut unary, mut longest) = (0usize, 0, 0, 0, 0);
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in expression.chars() {
        if let Some(q) = quote {
            (escaped, quote) = match (escaped, c) {
                (false, '\\') => (true, quote),
                (false, c) if c == q => (false, None),
                _ => (false, quote),
            };
            continue;
        }
        match c {
            '"' | '\'' => quote = Some(c),
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth = depth.saturating_sub(1),
            '?' => ternaries += 1,
            _ => {}
        }
        deepest = deepest.max(depth);
        unary = match c {
            '!' | '-' => unary + 1,
            c if c.is_whitespace() => unary,
            _ => 0,
        };
        longest = longest.max(unary);
    }
    if deepest > MAX_DEPTH || ternaries > MAX_DEPTH || longest > MAX_DEPTH {
        return Err(format!("the expression is nested over {MAX_DEPTH} deep"));
    }
    Ok(())
}

/// Parses and checks `expression` on a thread with [`PARSER_STACK`]; a panic of the parser
/// (it has some on odd input) refuses the expression.
fn parse(expression: &str) -> Result<(Program, u64), CompileError> {
    let owned = expression.to_string();
    let parsed = std::thread::Builder::new()
        .name("cel-parse".into())
        .stack_size(PARSER_STACK)
        .spawn(move || -> Result<(Program, u64), String> {
            let program = Program::compile(&owned)
                .map_err(|e| format!("does not parse: {}", one_line(&e)))?;
            let cost = cost::check(program.expression())?;
            Ok((program, cost))
        })
        .map_err(|e| CompileError {
            reason: format!("could not be parsed: {e}"),
        })?
        .join();
    match parsed {
        Ok(Ok(done)) => Ok(done),
        Ok(Err(reason)) => Err(CompileError { reason }),
        Err(_) => Err(CompileError {
            reason: "does not parse (the parser failed on it)".into(),
        }),
    }
}
