//! The static check of a condition before it is accepted: every name it reads is a variable of
//! the condition or of an enclosing macro, every function one both cel-go's standard library and
//! this evaluator have, a regular expression a literal that compiles, and an upper bound of its
//! cost within [`COST_LIMIT`]. The evaluator has no runtime limit, so this bound is what keeps a
//! tenant's condition from taking a core (`cargo bench --bench gates`, "attestation conditions").
//!
//! The bound counts node evaluations (about ten nanoseconds each): every node once per time it
//! may run, a function by what its arguments may make it walk, a macro's body once per element
//! of a list of at most [`MAX_ITEMS`]. A macro over a field of the element of an enclosing
//! macro over statement data (`r.vulnerabilities.all(...)` inside `results.all(r, ...)`) walks
//! disjoint parts of one statement, so its body runs at most [`MAX_VALUES`] times in all for
//! each run of the enclosing one, not `MAX_ITEMS` squared.

use super::data::{MAX_ITEMS, MAX_STRING_BYTES, MAX_VALUES};
use super::{MAX_DEPTH, VARIABLES};
use cel::common::ast::{operators as op, EntryExpr, Expr, IdedExpr};
use cel::common::value::CelVal;

/// The most a condition may cost, as Kubernetes bounds one CEL call (its `PerCallLimit`).
pub const COST_LIMIT: u64 = 1_000_000;
/// The most all the conditions of one policy may cost together, on one statement each.
pub const POLICY_COST_LIMIT: u64 = 2 * COST_LIMIT;
/// The statements of one type judged per digest: the first that verify (an image carries one
/// of each type; a registry that lists sixteen makes no more work).
pub const MAX_STATEMENTS_JUDGED: usize = 2;
/// Macros nested in each other at most this deep.
pub const MAX_COMPREHENSION_DEPTH: usize = 3;
/// What a function that may walk a string costs: a node evaluation (the unit) is about 60 ns,
/// a string of [`MAX_STRING_BYTES`] compared or copied about 2 µs.
const STRING_WALK: u64 = (MAX_STRING_BYTES / 512) as u64;
/// What a function that may walk a list or compare two values of the statement costs.
const DATA_WALK: u64 = MAX_ITEMS as u64;

/// A variable in scope: whether it holds an element of a list of statement data (a part of
/// the statement no other element shares), and how often the macro binding it runs.
struct Var {
    name: String,
    data_element: bool,
    loop_runs: u64,
}

struct Walk {
    scope: Vec<Var>,
    total: u64,
    /// Macros around the node being checked.
    depth: usize,
    /// Nodes around it.
    level: usize,
}

/// The estimated cost of `ast`, or why it is refused.
pub fn check(ast: &IdedExpr) -> Result<u64, String> {
    let mut walk = Walk {
        scope: Vec::new(),
        total: 0,
        depth: 0,
        level: 0,
    };
    walk.node(ast, 1)?;
    if walk.total > COST_LIMIT {
        return Err(format!(
            "its estimated cost, {}, is over the limit of {COST_LIMIT}: a macro over statement \
             data runs once per element (up to {MAX_ITEMS}), and map() or filter() copy what \
             they built at each; prefer all() or exists(), and comparisons with literals",
            walk.total
        ));
    }
    Ok(walk.total)
}

impl Walk {
    fn charge(&mut self, runs: u64, weight: u64) {
        self.total = self.total.saturating_add(runs.saturating_mul(weight));
    }

    /// Checks `e`, which may run `runs` times, and charges it.
    fn node(&mut self, e: &IdedExpr, runs: u64) -> Result<(), String> {
        self.level += 1;
        let checked = self.checked(e, runs);
        self.level -= 1;
        checked
    }

    fn checked(&mut self, e: &IdedExpr, runs: u64) -> Result<(), String> {
        if self.level > 2 * MAX_DEPTH {
            return Err(format!(
                "the expression's tree is over {} deep (long chains of && or + included)",
                2 * MAX_DEPTH
            ));
        }
        self.charge(runs, 1);
        match &e.expr {
            Expr::Ident(name) => self.known(name),
            Expr::Literal(_) => Ok(()),
            Expr::Select(select) => self.node(&select.operand, runs),
            Expr::List(list) => list.elements.iter().try_for_each(|x| self.node(x, runs)),
            Expr::Map(map) => map.entries.iter().try_for_each(|entry| match &entry.expr {
                EntryExpr::MapEntry(m) => {
                    self.node(&m.key, runs)?;
                    self.node(&m.value, runs)
                }
                EntryExpr::StructField(_) => Err("a message literal is not supported".into()),
            }),
            Expr::Call(call) => {
                let weight = weight(&call.func_name, &call.args, call.target.is_some())?;
                self.charge(runs, weight);
                if let Some(target) = &call.target {
                    self.node(target, runs)?;
                }
                call.args.iter().try_for_each(|x| self.node(x, runs))
            }
            Expr::Comprehension(c) => self.comprehension(c, runs),
            Expr::Struct(_) => Err("a message literal is not supported".into()),
            Expr::Unspecified => Err("an empty expression".into()),
        }
    }

    fn known(&self, name: &str) -> Result<(), String> {
        if VARIABLES.contains(&name) || self.scope.iter().any(|v| v.name == name) {
            return Ok(());
        }
        Err(format!(
            "undeclared reference to '{name}' (the variables are statement, predicate, digest \
             and now)"
        ))
    }

    fn comprehension(
        &mut self,
        c: &cel::common::ast::ComprehensionExpr,
        runs: u64,
    ) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_COMPREHENSION_DEPTH {
            return Err(format!(
                "macros are nested over {MAX_COMPREHENSION_DEPTH} deep"
            ));
        }
        self.node(&c.iter_range, runs)?;
        self.node(&c.accu_init, runs)?;
        let data = self.data_path(&c.iter_range);
        // A literal list is as long as it is written; anything else as a list may be.
        let items = match &c.iter_range.expr {
            Expr::List(list) => list.elements.len() as u64,
            _ => MAX_ITEMS as u64,
        };
        let mut body = runs.saturating_mul(items);
        // Over a part of the innermost enclosing macro's element: disjoint parts of one
        // statement, MAX_VALUES elements in all for each run of that macro.
        if let (Some(Some(root)), Some(innermost)) = (&data, self.innermost_loop()) {
            if *root == innermost.name && innermost.data_element {
                body = body.min(innermost.loop_runs.saturating_mul(MAX_VALUES as u64));
            }
        }
        let data_element = data.is_some();
        let mut names = vec![c.iter_var.clone()];
        names.extend(c.iter_var2.clone());
        let bound = self.scope.len();
        for name in names {
            self.scope.push(Var {
                name,
                data_element,
                loop_runs: runs,
            });
        }
        let accu = || Var {
            name: c.accu_var.clone(),
            data_element: false,
            loop_runs: runs,
        };
        self.scope.push(accu());
        let inner = self
            .node(&c.loop_cond, body)
            .and_then(|()| self.node(&c.loop_step, body));
        // The result sees the accumulator alone.
        self.scope.truncate(bound);
        self.scope.push(accu());
        let result = inner.and_then(|()| self.node(&c.result, runs));
        self.scope.truncate(bound);
        self.depth -= 1;
        result
    }

    /// The innermost macro's element variable, if a macro encloses this node.
    fn innermost_loop(&self) -> Option<&Var> {
        self.scope.iter().rev().find(|v| !v.name.starts_with('@'))
    }

    /// `Some(root)` when `e` is a path into statement data (fields and literal indexes from
    /// `statement`, `predicate` or an element of a list of it): `Some(None)` when rooted at a
    /// variable of the condition, `Some(Some(name))` at a macro's element.
    fn data_path(&self, e: &IdedExpr) -> Option<Option<String>> {
        match &e.expr {
            Expr::Ident(name) if name == "statement" || name == "predicate" => Some(None),
            Expr::Ident(name) => self
                .scope
                .iter()
                .rev()
                .find(|v| &v.name == name)
                .filter(|v| v.data_element)
                .map(|v| Some(v.name.clone())),
            Expr::Select(s) if !s.test => self.data_path(&s.operand),
            Expr::Call(c) if c.func_name == op::INDEX && c.args.len() == 2 => {
                matches!(c.args[1].expr, Expr::Literal(_))
                    .then(|| self.data_path(&c.args[0]))
                    .flatten()
            }
            _ => None,
        }
    }
}

/// The most bytes `e` may be when it is sure to be a scalar (a string, a number, a time):
/// comparing anything with it walks no more than that.
fn scalar(e: &IdedExpr) -> Option<u64> {
    match &e.expr {
        Expr::Literal(CelVal::String(s)) => Some(s.len() as u64),
        Expr::Literal(CelVal::Bytes(b)) => Some(b.len() as u64),
        Expr::Literal(_) => Some(8),
        // `sha256:` and 64 hex digits; a timestamp.
        Expr::Ident(name) if name == "digest" || name == "now" => Some(71),
        Expr::Call(c) => match c.func_name.as_str() {
            op::ADD
                if c.args
                    .iter()
                    .any(|a| matches!(a.expr, Expr::Literal(CelVal::String(_)))) =>
            {
                Some(2 * MAX_STRING_BYTES as u64)
            }
            "size"
            | "int"
            | "uint"
            | "double"
            | "timestamp"
            | "duration"
            | op::EQUALS
            | op::NOT_EQUALS
            | op::LESS
            | op::LESS_EQUALS
            | op::GREATER
            | op::GREATER_EQUALS
            | op::LOGICAL_AND
            | op::LOGICAL_OR
            | op::LOGICAL_NOT
            | op::SUBSTRACT
            | op::IN => Some(8),
            "string" => Some(MAX_STRING_BYTES as u64),
            _ => None,
        },
        _ => None,
    }
}

/// `pattern` compiled as `matches()` runs it: at most 1 MiB compiled.
pub(super) fn regex(pattern: &str) -> Result<regex::Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .build()
        .map_err(|e| format!("its regular expression '{pattern}' does not compile: {e}"))
}

/// What a call costs beyond its arguments, or why it is refused.
fn weight(name: &str, args: &[IdedExpr], method: bool) -> Result<u64, String> {
    // Comparing with a scalar of `n` bytes walks at most `n` bytes of the other side.
    let against_scalar = || args.iter().filter_map(scalar).min();
    let bytes = |n: u64| 1 + n / 512;
    Ok(match name {
        op::LOGICAL_AND
        | op::LOGICAL_OR
        | op::LOGICAL_NOT
        | op::CONDITIONAL
        | op::NEGATE
        | op::INDEX
        | op::NOT_STRICTLY_FALSE
        | op::SUBSTRACT
        | op::MULTIPLY
        | op::DIVIDE
        | op::MODULO => 1,
        op::EQUALS
        | op::NOT_EQUALS
        | op::LESS
        | op::LESS_EQUALS
        | op::GREATER
        | op::GREATER_EQUALS => against_scalar().map_or(DATA_WALK, bytes),
        // Numbers, or two strings (a literal among them); else lists, copied.
        op::ADD => match args.iter().filter_map(scalar).next() {
            Some(_) => 1 + 2 * STRING_WALK,
            None => DATA_WALK,
        },
        op::IN => match args.get(1).map(|a| &a.expr) {
            Some(Expr::List(list)) => 1 + list.elements.len() as u64 * STRING_WALK,
            _ => DATA_WALK,
        },
        "size" | "string" | "int" | "uint" | "double" => STRING_WALK,
        "contains" | "startsWith" | "endsWith" if method => STRING_WALK,
        "matches" => match args.get(usize::from(!method)).map(|a| &a.expr) {
            Some(Expr::Literal(CelVal::String(pattern))) => {
                regex::RegexBuilder::new(pattern)
                    .size_limit(1 << 20)
                    .build()
                    .map_err(|e| {
                        format!("its regular expression '{pattern}' does not compile: {e}")
                    })?;
                STRING_WALK + pattern.len() as u64
            }
            _ => return Err("matches() takes a literal regular expression".into()),
        },
        "timestamp" | "duration" if !method => 16,
        "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate"
        | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
            if method =>
        {
            4
        }
        other => {
            return Err(format!(
                "the function '{other}' is not supported (the standard functions are size, \
                 contains, startsWith, endsWith, matches, string, int, uint, double, timestamp, \
                 duration and the timestamp accessors, with has, all, exists, exists_one, map \
                 and filter)"
            ))
        }
    })
}

#[cfg(test)]
mod tests;
