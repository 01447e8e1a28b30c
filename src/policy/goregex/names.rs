//! The names `\p{...}` accepts, as Go (1.25 and later) looks them up: case-insensitively,
//! ignoring `_`, `-` and spaces; the general categories and their Unicode aliases (`Lu`,
//! `Uppercase_Letter`, `upper case-let ter`), `Any`, `ASCII`, `Assigned`, and the scripts of
//! Go's Unicode 15.0.0 tables. Scripts added in Unicode 16 (`Garay`, ...) are unknown to Go,
//! so they are refused here too, although the regex crate knows them.

/// What a name denotes, as a regex-crate expression for the class (before any negation).
pub(super) fn lookup(name: &str) -> Option<String> {
    let key = canonical(name);
    let special = match key.as_str() {
        "any" => Some(r"\p{Any}".to_string()),
        "ascii" => Some(r"[\x00-\x7F]".to_string()),
        "assigned" => Some(r"\P{gc=Cn}".to_string()),
        _ => None,
    };
    if special.is_some() {
        return special;
    }
    if let Some((short, _)) = CATEGORIES.iter().find(|(short, aliases)| {
        canonical(short) == key || aliases.iter().any(|a| canonical(a) == key)
    }) {
        // Surrogates never occur in UTF-8 text: Go's `\p{Cs}` matches nothing here either.
        return Some(match *short {
            "Cs" => r"[a&&b]".to_string(),
            short => format!(r"\p{{gc={short}}}"),
        });
    }
    SCRIPTS
        .iter()
        .find(|script| canonical(script) == key)
        .map(|script| format!(r"\p{{sc={script}}}"))
}

/// Lower case without `_`, `-` and spaces: Go compares names in this form.
fn canonical(name: &str) -> String {
    name.chars()
        .filter(|c| !matches!(c, '_' | '-' | ' '))
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

/// General categories (Go's `unicode.Categories`, with `Cn` and `LC`) and their aliases
/// (`unicode.CategoryAliases`, from Unicode's PropertyValueAliases.txt).
const CATEGORIES: &[(&str, &[&str])] = &[
    ("C", &["Other"]),
    ("Cc", &["Control", "cntrl"]),
    ("Cf", &["Format"]),
    ("Cn", &["Unassigned"]),
    ("Co", &["Private_Use"]),
    ("Cs", &["Surrogate"]),
    ("L", &["Letter"]),
    ("LC", &["Cased_Letter"]),
    ("Ll", &["Lowercase_Letter"]),
    ("Lm", &["Modifier_Letter"]),
    ("Lo", &["Other_Letter"]),
    ("Lt", &["Titlecase_Letter"]),
    ("Lu", &["Uppercase_Letter"]),
    ("M", &["Mark", "Combining_Mark"]),
    ("Mc", &["Spacing_Mark"]),
    ("Me", &["Enclosing_Mark"]),
    ("Mn", &["Nonspacing_Mark"]),
    ("N", &["Number"]),
    ("Nd", &["Decimal_Number", "digit"]),
    ("Nl", &["Letter_Number"]),
    ("No", &["Other_Number"]),
    ("P", &["Punctuation", "punct"]),
    ("Pc", &["Connector_Punctuation"]),
    ("Pd", &["Dash_Punctuation"]),
    ("Pe", &["Close_Punctuation"]),
    ("Pf", &["Final_Punctuation"]),
    ("Pi", &["Initial_Punctuation"]),
    ("Po", &["Other_Punctuation"]),
    ("Ps", &["Open_Punctuation"]),
    ("S", &["Symbol"]),
    ("Sc", &["Currency_Symbol"]),
    ("Sk", &["Modifier_Symbol"]),
    ("Sm", &["Math_Symbol"]),
    ("So", &["Other_Symbol"]),
    ("Z", &["Separator"]),
    ("Zl", &["Line_Separator"]),
    ("Zp", &["Paragraph_Separator"]),
    ("Zs", &["Space_Separator"]),
];

/// Go's `unicode.Scripts` (Unicode 15.0.0).
const SCRIPTS: &[&str] = &[
    "Adlam",
    "Ahom",
    "Anatolian_Hieroglyphs",
    "Arabic",
    "Armenian",
    "Avestan",
    "Balinese",
    "Bamum",
    "Bassa_Vah",
    "Batak",
    "Bengali",
    "Bhaiksuki",
    "Bopomofo",
    "Brahmi",
    "Braille",
    "Buginese",
    "Buhid",
    "Canadian_Aboriginal",
    "Carian",
    "Caucasian_Albanian",
    "Chakma",
    "Cham",
    "Cherokee",
    "Chorasmian",
    "Common",
    "Coptic",
    "Cuneiform",
    "Cypriot",
    "Cypro_Minoan",
    "Cyrillic",
    "Deseret",
    "Devanagari",
    "Dives_Akuru",
    "Dogra",
    "Duployan",
    "Egyptian_Hieroglyphs",
    "Elbasan",
    "Elymaic",
    "Ethiopic",
    "Georgian",
    "Glagolitic",
    "Gothic",
    "Grantha",
    "Greek",
    "Gujarati",
    "Gunjala_Gondi",
    "Gurmukhi",
    "Han",
    "Hangul",
    "Hanifi_Rohingya",
    "Hanunoo",
    "Hatran",
    "Hebrew",
    "Hiragana",
    "Imperial_Aramaic",
    "Inherited",
    "Inscriptional_Pahlavi",
    "Inscriptional_Parthian",
    "Javanese",
    "Kaithi",
    "Kannada",
    "Katakana",
    "Kawi",
    "Kayah_Li",
    "Kharoshthi",
    "Khitan_Small_Script",
    "Khmer",
    "Khojki",
    "Khudawadi",
    "Lao",
    "Latin",
    "Lepcha",
    "Limbu",
    "Linear_A",
    "Linear_B",
    "Lisu",
    "Lycian",
    "Lydian",
    "Mahajani",
    "Makasar",
    "Malayalam",
    "Mandaic",
    "Manichaean",
    "Marchen",
    "Masaram_Gondi",
    "Medefaidrin",
    "Meetei_Mayek",
    "Mende_Kikakui",
    "Meroitic_Cursive",
    "Meroitic_Hieroglyphs",
    "Miao",
    "Modi",
    "Mongolian",
    "Mro",
    "Multani",
    "Myanmar",
    "Nabataean",
    "Nag_Mundari",
    "Nandinagari",
    "New_Tai_Lue",
    "Newa",
    "Nko",
    "Nushu",
    "Nyiakeng_Puachue_Hmong",
    "Ogham",
    "Ol_Chiki",
    "Old_Hungarian",
    "Old_Italic",
    "Old_North_Arabian",
    "Old_Permic",
    "Old_Persian",
    "Old_Sogdian",
    "Old_South_Arabian",
    "Old_Turkic",
    "Old_Uyghur",
    "Oriya",
    "Osage",
    "Osmanya",
    "Pahawh_Hmong",
    "Palmyrene",
    "Pau_Cin_Hau",
    "Phags_Pa",
    "Phoenician",
    "Psalter_Pahlavi",
    "Rejang",
    "Runic",
    "Samaritan",
    "Saurashtra",
    "Sharada",
    "Shavian",
    "Siddham",
    "SignWriting",
    "Sinhala",
    "Sogdian",
    "Sora_Sompeng",
    "Soyombo",
    "Sundanese",
    "Syloti_Nagri",
    "Syriac",
    "Tagalog",
    "Tagbanwa",
    "Tai_Le",
    "Tai_Tham",
    "Tai_Viet",
    "Takri",
    "Tamil",
    "Tangsa",
    "Tangut",
    "Telugu",
    "Thaana",
    "Thai",
    "Tibetan",
    "Tifinagh",
    "Tirhuta",
    "Toto",
    "Ugaritic",
    "Vai",
    "Vithkuqi",
    "Wancho",
    "Warang_Citi",
    "Yezidi",
    "Yi",
    "Zanabazar_Square",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_as_go_matches_them() {
        assert_eq!(lookup("Lu").as_deref(), Some(r"\p{gc=Lu}"));
        assert_eq!(lookup("Uppercase_Letter").as_deref(), Some(r"\p{gc=Lu}"));
        assert_eq!(lookup("upper case-let ter").as_deref(), Some(r"\p{gc=Lu}"));
        assert_eq!(lookup("Letter").as_deref(), Some(r"\p{gc=L}"));
        assert_eq!(lookup("LC").as_deref(), Some(r"\p{gc=LC}"));
        assert_eq!(
            lookup("canadian_aboriginal").as_deref(),
            Some(r"\p{sc=Canadian_Aboriginal}")
        );
        assert_eq!(lookup("Greek").as_deref(), Some(r"\p{sc=Greek}"));
        assert_eq!(lookup("surrogate").as_deref(), Some(r"[a&&b]"));
        assert!(
            lookup("Any").is_some() && lookup("ascii").is_some() && lookup("Assigned").is_some()
        );
        assert_eq!(
            SCRIPTS.len(),
            163,
            "Unicode 15.0.0: 161 scripts, Common and Inherited"
        );
        for unknown in ["Garay", "Grek", "Foo", "", "IsGreek", "sc=Greek"] {
            assert_eq!(lookup(unknown), None, "{unknown}");
        }
    }

    #[test]
    fn every_name_compiles_in_the_regex_crate() {
        for (short, _) in CATEGORIES {
            regex::Regex::new(&lookup(short).unwrap()).unwrap();
        }
        for script in SCRIPTS {
            regex::Regex::new(&lookup(script).unwrap()).unwrap();
        }
    }
}
