//! A syntax error shown where it is, as cel-go shows one: the column, the expression's text
//! around it and a caret under it.

use super::lex::Syntax;

/// How much of the expression is shown on each side of the column, in characters.
const AROUND: usize = 40;

/// `error` over `expression` as `<what> at column C` and two lines: the text around the
/// column and a caret under it. An error that names no place is its words alone.
pub fn pointed(expression: &str, error: &Syntax) -> String {
    let what = &error.what;
    let Some(offset) = error.at else {
        return super::cut(what);
    };
    if !expression.is_char_boundary(offset) {
        return super::cut(&format!("{what} at offset {offset}"));
    }
    let visible = |c: char| if c.is_control() { ' ' } else { c };
    let before: Vec<char> = expression[..offset].chars().map(visible).collect();
    let from = before.len().saturating_sub(AROUND);
    let lead = if from > 0 { "..." } else { "" };
    let shown: String = before[from..].iter().collect();
    let after: String = expression[offset..]
        .chars()
        .map(visible)
        .take(AROUND)
        .collect();
    let tail = if expression[offset..].chars().count() > AROUND {
        "..."
    } else {
        ""
    };
    let caret = " ".repeat(lead.len() + before.len() - from);
    format!(
        "{} at column {}\n  {lead}{shown}{after}{tail}\n  {caret}^",
        super::cut(what),
        before.len() + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_caret_stands_under_the_column() {
        let e = "predicate.a === 'x'";
        assert_eq!(
            pointed(e, &Syntax::at("unexpected character '='", 14)),
            "unexpected character '=' at column 15\n  predicate.a === 'x'\n                ^"
        );
        assert_eq!(
            pointed("size(x) +", &Syntax::at("expected an expression", 9)),
            "expected an expression at column 10\n  size(x) +\n           ^"
        );
        assert_eq!(
            pointed(e, &Syntax::from("the expression is empty".to_string())),
            "the expression is empty"
        );
        // An offset inside a character (no parser makes one) is said, not pointed at.
        assert_eq!(
            pointed("'é'", &Syntax::at("unexpected", 2)),
            "unexpected at offset 2"
        );
    }

    /// Forty characters after the column are shown whole; one more, and the text is cut.
    #[test]
    fn the_text_after_the_column_is_cut_past_forty() {
        let forty = format!("){}", "a".repeat(39));
        assert!(!pointed(&forty, &Syntax::at("unexpected ')'", 0)).contains("..."));
        let more = format!("{forty}a");
        assert!(pointed(&more, &Syntax::at("unexpected ')'", 0)).contains("a..."));
    }

    #[test]
    fn a_long_expression_is_shown_around_the_column() {
        let e = format!(
            "{} == 'x' ) && true{}",
            "a.b".repeat(30),
            " || false".repeat(10)
        );
        let at = e.find(')').unwrap();
        let said = pointed(&e, &Syntax::at("unexpected ')'", at));
        let lines: Vec<&str> = said.lines().collect();
        assert_eq!(lines[0], format!("unexpected ')' at column {}", at + 1));
        assert!(
            lines[1].starts_with("  ...") && lines[1].ends_with("..."),
            "{said}"
        );
        let column = lines[2].len() - 1;
        assert_eq!(&lines[1][column..=column], ")", "{said}");
    }
}
