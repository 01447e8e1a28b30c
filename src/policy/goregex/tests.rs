//! Go's behaviour as data: what Go's `regexp.Compile` answers for each pattern (its error
//! text, or what the compiled expression matches). The expectations follow Go's
//! `regexp/syntax` (Go 1.25), case by case.

use crate::policy::compile_go;

/// Go's error for `pattern`, or `None` when Go compiles it.
fn error(pattern: &str) -> Option<String> {
    compile_go(pattern).err()
}

fn finds(pattern: &str, text: &str) -> bool {
    let compiled = compile_go(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"));
    compiled.regex.is_match(text)
}

const REFUSED: &[(&str, &str)] = &[
    // Nested repetition: the regex crate reads `a**` as `(a*)*`, `a++` as possessive-free `a+`.
    ("a**", "invalid nested repetition operator: `**`"),
    ("a++", "invalid nested repetition operator: `++`"),
    ("a*?*", "invalid nested repetition operator: `*?*`"),
    ("a??+", "invalid nested repetition operator: `??+`"),
    ("a{2}*", "invalid nested repetition operator: `{2}*`"),
    ("a{2}{3}", "invalid nested repetition operator: `{2}{3}`"),
    ("^v[0-9]+*$", "invalid nested repetition operator: `+*`"),
    // POSIX classes: unknown names, and Go takes the name up to the first `:]`.
    ("[[:foo:]]", "invalid character class range: `[:foo:]`"),
    ("[[:a]b:]]", "invalid character class range: `[:a]b:]`"),
    (
        "[[:^alphanum:]]",
        "invalid character class range: `[:^alphanum:]`",
    ),
    ("[[:alpha:]", "missing closing ]: `[[:alpha:]`"),
    // Unicode classes: names outside Go's tables (Unicode 15.0) or its aliases.
    ("\\p{Foo}", "invalid character class range: `\\p{Foo}`"),
    ("\\p{Garay}", "invalid character class range: `\\p{Garay}`"),
    ("\\p{Grek}", "invalid character class range: `\\p{Grek}`"),
    (
        "\\p{sc=Greek}",
        "invalid character class range: `\\p{sc=Greek}`",
    ),
    ("\\pX", "invalid character class range: `\\pX`"),
    ("\\p", "invalid character class range: `\\p`"),
    ("a\\p{L", "invalid character class range: `\\p{L`"),
    ("[\\p{Foo}]", "invalid character class range: `\\p{Foo}`"),
    // Counts: above 1000, alone or nested.
    ("x{1001}", "invalid repeat count: `{1001}`"),
    ("x{1001,}", "invalid repeat count: `{1001,}`"),
    ("x{2,1}", "invalid repeat count: `{2,1}`"),
    ("x{1,9876543210}", "invalid repeat count: `{1,9876543210}`"),
    ("(?:[a-z]{4}){0,251}", "invalid repeat count: `{0,251}`"),
    ("(\\w{1000}){2}", "invalid repeat count: `{2}`"),
    (
        "((((((((((x{2}){2}){2}){2}){2}){2}){2}){2}){2}){2})",
        "invalid repeat count: `{2}`",
    ),
    // Flags Go does not have, and Perl forms it does not support.
    ("(?x)a b", "invalid or unsupported Perl syntax: `(?x`"),
    ("(?u)a", "invalid or unsupported Perl syntax: `(?u`"),
    ("(?R)a", "invalid or unsupported Perl syntax: `(?R`"),
    ("(?P=name)", "invalid or unsupported Perl syntax: `(?P`"),
    ("(?=a)", "invalid or unsupported Perl syntax: `(?=`"),
    ("(?!a)", "invalid or unsupported Perl syntax: `(?!`"),
    ("(?<=a)b", "invalid named capture: `(?<=a)b`"),
    ("(?-)", "invalid or unsupported Perl syntax: `(?-)`"),
    ("(?i-)", "invalid or unsupported Perl syntax: `(?i-)`"),
    ("(?--i)", "invalid or unsupported Perl syntax: `(?--`"),
    ("(?", "invalid or unsupported Perl syntax: `(?`"),
    ("(?P<x y>a)", "invalid named capture: `(?P<x y>`"),
    ("(?<>a)", "invalid named capture: `(?<>`"),
    ("(?P<é>a)", "invalid named capture: `(?P<é>`"),
    ("(?P<name", "invalid named capture: `(?P<name`"),
    // Escapes.
    ("\\C", "invalid escape sequence: `\\C`"),
    ("\\8", "invalid escape sequence: `\\8`"),
    ("(a)\\1", "invalid escape sequence: `\\1`"),
    ("\\e", "invalid escape sequence: `\\e`"),
    ("\\Z", "invalid escape sequence: `\\Z`"),
    ("\\é", "invalid escape sequence: `\\é`"),
    ("\\x{110000}", "invalid escape sequence: `\\x{110000`"),
    ("\\x{zz}", "invalid escape sequence: `\\x{z`"),
    ("\\x{}", "invalid escape sequence: `\\x{}`"),
    ("\\x4g", "invalid escape sequence: `\\x4g`"),
    ("\\x{41", "invalid escape sequence: `\\x{41`"),
    ("[\\b]", "invalid escape sequence: `\\b`"),
    ("[a-\\d]", "invalid escape sequence: `\\d`"),
    ("a\\", "trailing backslash at end of expression: ``"),
    // Structure.
    ("(a", "missing closing ): `(a`"),
    ("a)", "unexpected ): `a)`"),
    ("x[a", "missing closing ]: `[a`"),
    ("[]", "missing closing ]: `[]`"),
    ("[z-a]", "invalid character class range: `z-a`"),
    ("(?i)[a-Z]", "invalid character class range: `a-Z`"),
    ("*a", "missing argument to repetition operator: `*`"),
    ("(*)", "missing argument to repetition operator: `*`"),
    ("a|*", "missing argument to repetition operator: `*`"),
    ("\\Q\\E*", "missing argument to repetition operator: `*`"),
    ("(?i)+", "missing argument to repetition operator: `+`"),
    ("{2}", "missing argument to repetition operator: `{2}`"),
    ("??", "missing argument to repetition operator: `??`"),
];

#[test]
fn go_refuses_these_with_its_own_words() {
    for (pattern, want) in REFUSED {
        let got = error(pattern);
        assert_eq!(
            got.as_deref(),
            Some(format!("error parsing regexp: {want}").as_str()),
            "pattern {pattern:?}"
        );
    }
}

#[test]
fn go_limits_depth_and_size_and_names_the_whole_pattern() {
    let deep = format!("{}{}", "(".repeat(1000), ")".repeat(1000));
    assert_eq!(
        error(&deep),
        Some(format!(
            "error parsing regexp: expression nests too deeply: `{deep}`"
        ))
    );
    let stars = format!("{}{}", "(?:".repeat(1000), ")*".repeat(1000));
    assert!(error(&stars)
        .unwrap()
        .contains("expression nests too deeply"));
    let deepest_stars = format!("{}{}", "(?:".repeat(999), ")*".repeat(999));
    assert_eq!(error(&deepest_stars), None);
    let long = "(xx?){1000}".repeat(1000);
    assert_eq!(
        error(&long),
        Some(format!(
            "error parsing regexp: expression too large: `{long}`"
        ))
    );
    let runes = "\\pL".repeat(27000);
    assert!(error(&runes)
        .unwrap()
        .starts_with("error parsing regexp: expression too large: `\\pL"));
}

const ACCEPTED: &[&str] = &[
    "",
    "|",
    "(|a)",
    "()",
    "(?:)*",
    "^*",
    "$+",
    "\\b*",
    "a(?i)*",
    "a*(?i)*",
    "a*\\Q\\E*",
    "(?i)",
    "(?)",
    "(?i-s:a)",
    "(?U)a+",
    "x{1000}",
    "x{1000,}",
    "x{0,1000}",
    "(?:[a-z]{4}){0,250}",
    "((((((((((x{1}){2}){2}){2}){2}){2}){2}){2}){2}){2})",
    "(?P<1x>a)",
    "(?P<v>a)|(?P<v>b)",
    "(?<name>a)",
    "\\p{Letter}",
    "\\p{upper case-let ter}",
    "\\p{ Canadian_Aboriginal}",
    "\\p{^Greek}",
    "\\P{^Greek}",
    "\\pL\\pN\\p{Any}\\p{ascii}\\p{Assigned}\\p{LC}\\p{Cn}\\p{Cs}",
    "[[:word:][:^space:]\\d\\pL-]",
    "[]a]",
    "[^]a]",
    "[a-]",
    "\\_\\-\\<\\>\\@",
    "\\0\\07\\012\\177",
    "\\x41\\x{41}\\x{10FFFF}\\x{D800}",
    "\\a\\f\\t\\n\\r\\v",
    "\\Q+|*?{[\\E",
    "\\Qunterminated",
    "a{,2}",
    "x{01}",
    "x{",
    "x{1001",
    "{}",
];

#[test]
fn go_accepts_these_though_the_regex_crate_alone_would_not_all() {
    for pattern in ACCEPTED {
        assert_eq!(error(pattern), None, "pattern {pattern:?}");
    }
    let deepest = format!("{}{}", "(".repeat(999), ")".repeat(999));
    assert_eq!(error(&deepest), None);
}

/// (pattern, text, whether Go finds a match)
const MEANINGS: &[(&str, &str, bool)] = &[
    // Perl classes and word boundaries are ASCII in Go.
    ("\\d", "٣", false),
    ("\\d", "3", true),
    ("\\w", "é", false),
    ("\\s", "\u{0B}", false),
    ("\\s", "\u{A0}", false),
    ("[[:space:]]", "\u{0B}", true),
    ("^a\\b", "aé", true),
    ("^a\\B", "aé", false),
    ("\\D", "٣", true),
    // Classes: no nesting, no set operators.
    ("^[[a]]$", "a]", true),
    ("^[[a]]$", "a", false),
    ("^[a&&b]$", "&", true),
    ("^[a-c--b]$", "0", true),
    ("^[a~~b]$", "~", true),
    ("^[]a]$", "]", true),
    ("^[a-]$", "-", true),
    // Escapes the regex crate reads otherwise, or not at all.
    ("^\\<\\>$", "<>", true),
    ("^\\Q.*\\E$", ".*", true),
    ("^\\Q.*\\E$", "ab", false),
    ("^\\Qa.b", "a.b-anything", true),
    ("^\\101\\12$", "A\n", true),
    ("^\\08$", "\u{0}8", true),
    ("^a{,2}$", "a{,2}", true),
    ("^a{,2}$", "aa", false),
    ("^x{01}$", "x{01}", true),
    ("^x{$", "x{", true),
    ("^\\x{41}\\x42$", "AB", true),
    ("\\x{D800}", "\u{D7FF}\u{E000}", false),
    ("^[\\x{D000}-\\x{E000}]$", "\u{E000}", true),
    // Flags, each on what it governs.
    ("(?i)k", "\u{212A}", true),
    ("(?i)[^k]", "K", false),
    ("(?i)\\W", "k", false),
    ("(?i)\\W", "\u{212A}", false),
    ("(?i)[[:upper:]]", "q", true),
    ("^(?i:a)b$", "AB", false),
    ("^(?i)a(?-i)b$", "Ab", true),
    ("^(?i)a(?-i)b$", "AB", false),
    ("^(a(?i)b)c$", "aBc", true),
    ("^(a(?i)b)c$", "aBC", false),
    ("(?m)^b", "a\nb", true),
    ("^b", "a\nb", false),
    ("a$", "a\n", false),
    ("(?m)a$", "a\nb", true),
    ("(?s)a.b", "a\nb", true),
    ("a.b", "a\nb", false),
    ("^a(?i)*$", "aaa", true),
    // Unicode classes by Go's names.
    ("\\p{Greek}", "α", true),
    ("\\p{greek}", "a", false),
    ("\\p{^Greek}", "a", true),
    ("\\p{Letter}", "é", true),
    ("\\PL", "1", true),
    ("\\pN", "٣", true),
    ("\\p{Cs}", "a", false),
    ("\\P{Cs}", "a", true),
    ("(?i)\\p{Lu}", "a", true),
    ("(?i)\\P{Lu}", "a", false),
    ("\\p{Assigned}", "a", true),
    ("\\p{ascii}", "é", false),
];

#[test]
fn patterns_mean_what_they_mean_in_go() {
    for (pattern, text, want) in MEANINGS {
        assert_eq!(finds(pattern, text), *want, "{pattern:?} on {text:?}");
    }
}

#[test]
fn ungreedy_flag_swaps_the_greed_of_each_operator() {
    let first = |pattern: &str, text: &str| {
        let compiled = compile_go(pattern).unwrap();
        compiled.regex.find(text).map(|m| m.as_str().to_string())
    };
    assert_eq!(first("(?U)a+", "aaa").as_deref(), Some("a"));
    assert_eq!(first("(?U)a+?", "aaa").as_deref(), Some("aaa"));
    assert_eq!(first("a{1,3}?", "aaa").as_deref(), Some("a"));
}

#[test]
fn group_names_are_gos() {
    let names = |pattern: &str| compile_go(pattern).unwrap().translated.names;
    assert_eq!(
        names("(?P<1x>a)(b)(?<v>c)"),
        vec![None, Some("1x".into()), None, Some("v".into())]
    );
    assert_eq!(
        names("(?P<v>a)|(?P<v>b)"),
        vec![None, Some("v".into()), Some("v".into())]
    );
}
