//! `matches()`'s patterns: RE2's syntax read as Go reads it ([`compile_go`]: what Go refuses,
//! nested repetitions over 1,000 among them, is refused; `\d \w \s \b` are ASCII), run by the
//! regex crate, whose finite automata take time linear in the text. A match is charged before
//! it runs: the text's length times the pattern's automaton size ([`Pattern::cost`]), never
//! less than cel-go charges (`(1 + len) × 0.1` by `len(pattern) × 0.25`).

use crate::policy::regex::compile_go;
use regex::Regex;
use regex_automata::nfa::thompson;

/// The largest automaton a pattern may compile to (states of its Thompson NFA): a match costs
/// at most this per byte of text, in the worst engine the regex crate falls back to.
pub const MAX_STATES: usize = 4096;

/// A compiled pattern and the size its match is charged by.
#[derive(Debug)]
pub struct Pattern {
    pub text: String,
    regex: Regex,
    states: u64,
}

impl Pattern {
    /// Compiles `text` as Go does; refuses it when Go would, or over [`MAX_STATES`].
    pub fn new(text: &str) -> Result<Pattern, String> {
        let refused =
            |why: String| format!("its regular expression '{text}' does not compile: {why}");
        let go = compile_go(text).map_err(refused)?;
        let nfa = thompson::Compiler::new()
            .syntax(regex_automata::util::syntax::Config::new().nest_limit(8000))
            .configure(thompson::Config::new().nfa_size_limit(Some(16 << 20)))
            .build(&go.translated.pattern)
            .map_err(|e| refused(e.to_string()))?;
        let states = nfa.states().len();
        if states > MAX_STATES {
            return Err(refused(format!(
                "it compiles to {states} automaton states; at most {MAX_STATES} are accepted \
                 (a counted repetition such as {{1000}} makes as many copies of what it repeats)"
            )));
        }
        Ok(Pattern {
            text: text.to_string(),
            regex: go.regex,
            states: states as u64,
        })
    }

    /// What matching a text of `len` bytes is charged: its length times the automaton's size
    /// over [`STEPS_PER_UNIT`], or cel-go's charge if more.
    pub fn cost(&self, len: usize) -> u64 {
        let len = len as u64;
        let ours = (len + 1).saturating_mul(self.states) / STEPS_PER_UNIT;
        let cel_go = (len + 1).div_ceil(10) * (self.text.len() as u64).div_ceil(4);
        1 + ours.max(cel_go)
    }

    /// An unanchored search, as Go's `MatchString`.
    pub fn is_match(&self, text: &str) -> bool {
        self.regex.is_match(text)
    }
}

/// Automaton steps (a byte against a state) one unit of cost pays for. The regex crate's
/// slowest path (its lazy DFA giving up, on random text against `(?:(?:a|b)(?:a|b)?){1000}c`)
/// took 5.5 ns a step on 16 KiB; a unit of the rest of the evaluator is about 10 ns
/// (`cargo bench --bench gates`, "attestation conditions").
pub const STEPS_PER_UNIT: u64 = 2;
