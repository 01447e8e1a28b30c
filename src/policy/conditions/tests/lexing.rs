//! The lexer's tokens, each with its offset, on what CEL's grammar (cel-spec `langdef.md`)
//! writes: comments, numbers in each form, strings in each quoting; and what it refuses, at
//! the offset that is wrong. (Mutation testing found these unasserted by the unit tests.)

use super::super::lex::{tokens, Syntax, Tok};

fn lexed(src: &str) -> Vec<(Tok, usize)> {
    tokens(src).unwrap_or_else(|e| panic!("{src:?}: {e:?}"))
}

fn int(text: &str) -> Tok {
    Tok::Int(text.into())
}

fn double(text: &str) -> Tok {
    Tok::Double(text.into())
}

#[test]
fn a_comment_runs_to_the_end_of_its_line() {
    let got = lexed("1 // two 2\n+ 3 // last");
    assert_eq!(got, [(int("1"), 0), (Tok::Op("+"), 11), (int("3"), 13)]);
    assert_eq!(lexed("// only"), []);
}

#[test]
fn numbers_in_every_form() {
    assert_eq!(lexed(".5"), [(double(".5"), 0)]);
    assert_eq!(
        lexed("a.b"),
        [
            (Tok::Ident("a".into()), 0),
            (Tok::Op("."), 1),
            (Tok::Ident("b".into()), 2)
        ]
    );
    assert_eq!(
        lexed("0x1F + 2"),
        [(int("0x1F"), 0), (Tok::Op("+"), 5), (int("2"), 7)]
    );
    assert_eq!(lexed("0xFFu"), [(Tok::Uint(255), 0)]);
    assert_eq!(lexed("0x1 0xABCu"), [(int("0x1"), 0), (Tok::Uint(2748), 4)]);
    assert_eq!(lexed("12u"), [(Tok::Uint(12), 0)]);
    assert_eq!(
        lexed("1.25 x"),
        [(double("1.25"), 0), (Tok::Ident("x".into()), 5)]
    );
    assert_eq!(
        lexed("1.x"),
        [
            (int("1"), 0),
            (Tok::Op("."), 1),
            (Tok::Ident("x".into()), 2)
        ]
    );
    assert_eq!(
        lexed("2e3 1E-2 4.5e+1 y"),
        [
            (double("2e3"), 0),
            (double("1E-2"), 4),
            (double("4.5e+1"), 9),
            (Tok::Ident("y".into()), 16),
        ]
    );
    assert_eq!(tokens("1 0x"), Err(Syntax::at("invalid number", 2)));
    assert_eq!(tokens("1 2e+"), Err(Syntax::at("invalid number", 2)));
}

#[test]
fn strings_in_every_quoting() {
    let text = |s: &str| Tok::Str(s.into());
    assert_eq!(lexed(r#"r'\n' "a""#), [(text("\\n"), 0), (text("a"), 6)]);
    assert_eq!(
        lexed(r"rb'\x' br'y'"),
        [
            (Tok::Bytes(b"\\x".to_vec()), 0),
            (Tok::Bytes(b"y".to_vec()), 7)
        ]
    );
    // Two letters of one kind are no prefix: an identifier, then a string.
    assert_eq!(
        lexed("rr'a'"),
        [(Tok::Ident("rr".into()), 0), (text("a"), 2)]
    );
    assert_eq!(
        lexed("bb'a'"),
        [(Tok::Ident("bb".into()), 0), (text("a"), 2)]
    );
    assert_eq!(lexed("'''a\nb''' 1"), [(text("a\nb"), 0), (int("1"), 10)]);
    // A line break ends a single-quoted string unterminated, either kind.
    assert_eq!(
        tokens("x + 'a\nb'"),
        Err(Syntax::at("unterminated string", 4))
    );
    assert_eq!(
        tokens("\"a\rb\""),
        Err(Syntax::at("unterminated string", 0))
    );
    assert_eq!(tokens("'a"), Err(Syntax::at("unterminated string", 0)));
}

/// What the parser found where it expected something else is named: an operator or a name
/// as written, a literal as such.
#[test]
fn the_parser_names_what_it_found() {
    let said = |e: &str| {
        super::refused(e)
            .lines()
            .next()
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(said("a b"), "does not parse: unexpected 'b' at column 3");
    assert_eq!(said("a )"), "does not parse: unexpected ')' at column 3");
    assert_eq!(
        said("a 1"),
        "does not parse: unexpected a literal at column 3"
    );
    assert_eq!(
        said("f(1 2)"),
        "does not parse: expected ',', found a literal at column 5"
    );
    // A list may end in a comma, as CEL's grammar allows; a call's arguments may not.
    assert_eq!(
        super::holds("size([1, 2,]) == 2", serde_json::json!({})),
        Ok(())
    );
    assert_eq!(
        said("size([1],)"),
        "does not parse: expected an expression, found ')' at column 10"
    );
    // A reserved word is no name (cel-go refuses it too).
    assert_eq!(
        said("predicate.while"),
        "does not parse: expected a name, found 'while' at column 11"
    );
}

/// A `-` before a number alone is its sign, so the least int is a literal (as a negation of
/// 9223372036854775808 it would be out of range); before anything else it negates.
#[test]
fn a_minus_before_a_number_is_its_sign() {
    let holds = |e: &str| super::holds(e, serde_json::json!({}));
    assert_eq!(holds("-9223372036854775808 < 0"), Ok(()));
    assert_eq!(holds("--1 == 1 && - -1 == 1 && -(1) == -1"), Ok(()));
    assert_eq!(holds("!!true && !false"), Ok(()));
}
