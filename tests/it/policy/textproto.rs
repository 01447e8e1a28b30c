//! Protocol buffers' text format, read as a tree of fields: enough of it for CEL's conformance
//! files (`tests/data/cel-spec/`), whose messages are `name: value` and `name { ... }` (or
//! `name: { ... }`) fields, strings in either quote with C escapes, numbers, identifiers, and
//! `#` comments. No schema: a field is a name and its value, repeated fields repeat.

/// A field's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Field {
    /// A string, its escapes read to bytes.
    Text(Vec<u8>),
    /// A number or an identifier (`true`, `inf`, `NULL_VALUE`), as written.
    Word(String),
    Message(Vec<(String, Field)>),
}

impl Field {
    /// The fields named `name` of a message.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Field> + 'a {
        let fields: &[(String, Field)] = match self {
            Field::Message(fields) => fields,
            _ => &[],
        };
        fields
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, f)| f)
    }

    pub fn get<'a>(&'a self, name: &'a str) -> Option<&'a Field> {
        self.all(name).next()
    }

    pub fn text(&self) -> Option<String> {
        match self {
            Field::Text(b) => String::from_utf8(b.clone()).ok(),
            _ => None,
        }
    }

    pub fn word(&self) -> Option<&str> {
        match self {
            Field::Word(w) => Some(w),
            _ => None,
        }
    }

    /// The names of a message's fields.
    pub fn names(&self) -> Vec<&str> {
        match self {
            Field::Message(fields) => fields.iter().map(|(n, _)| n.as_str()).collect(),
            _ => Vec::new(),
        }
    }
}

/// Reads a whole file as one message.
pub fn parse(src: &str) -> Result<Field, String> {
    let mut r = Reader {
        b: src.as_bytes(),
        i: 0,
    };
    let fields = r.fields(None)?;
    Ok(Field::Message(fields))
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn skip(&mut self) {
        while let Some(&c) = self.b.get(self.i) {
            match c {
                b'#' => {
                    while self.b.get(self.i).is_some_and(|c| *c != b'\n') {
                        self.i += 1;
                    }
                }
                b' ' | b'\t' | b'\n' | b'\r' | b',' | b';' => self.i += 1,
                _ => return,
            }
        }
    }

    fn fields(&mut self, close: Option<u8>) -> Result<Vec<(String, Field)>, String> {
        let mut out = Vec::new();
        loop {
            self.skip();
            match self.b.get(self.i) {
                None if close.is_none() => return Ok(out),
                None => return Err("an unclosed message".into()),
                Some(c) if Some(*c) == close => {
                    self.i += 1;
                    return Ok(out);
                }
                _ => {}
            }
            let name = self.word();
            if name.is_empty() {
                return Err(format!("a field name expected at byte {}", self.i));
            }
            self.skip();
            if self.b.get(self.i) == Some(&b':') {
                self.i += 1;
                self.skip();
            }
            let value = self.value()?;
            out.push((name, value));
        }
    }

    fn word(&mut self) -> String {
        let start = self.i;
        while self
            .b
            .get(self.i)
            .is_some_and(|c| c.is_ascii_alphanumeric() || b"_.-+[]/".contains(c))
        {
            self.i += 1;
        }
        String::from_utf8_lossy(&self.b[start..self.i]).into_owned()
    }

    fn value(&mut self) -> Result<Field, String> {
        match self.b.get(self.i) {
            Some(b'{') | Some(b'<') => {
                let close = if self.b[self.i] == b'{' { b'}' } else { b'>' };
                self.i += 1;
                Ok(Field::Message(self.fields(Some(close))?))
            }
            Some(b'[') => {
                // A list of values: each becomes a repeated field of the caller's name; read
                // here as a message of unnamed fields.
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.skip();
                    if self.b.get(self.i) == Some(&b']') {
                        self.i += 1;
                        return Ok(Field::Message(items));
                    }
                    items.push((String::new(), self.value()?));
                }
            }
            Some(b'"') | Some(b'\'') => {
                let mut text = Vec::new();
                // Adjacent strings are one.
                while let Some(&q @ (b'"' | b'\'')) = self.b.get(self.i) {
                    self.i += 1;
                    self.string(q, &mut text)?;
                    self.skip();
                }
                Ok(Field::Text(text))
            }
            _ => {
                let word = self.word();
                match word.is_empty() {
                    true => Err(format!("a value expected at byte {}", self.i)),
                    false => Ok(Field::Word(word)),
                }
            }
        }
    }

    fn string(&mut self, quote: u8, out: &mut Vec<u8>) -> Result<(), String> {
        loop {
            let c = *self.b.get(self.i).ok_or("an unterminated string")?;
            self.i += 1;
            if c == quote {
                return Ok(());
            }
            if c != b'\\' {
                out.push(c);
                continue;
            }
            let e = *self.b.get(self.i).ok_or("an unterminated escape")?;
            self.i += 1;
            match e {
                b'n' => out.push(b'\n'),
                b't' => out.push(b'\t'),
                b'r' => out.push(b'\r'),
                b'a' => out.push(7),
                b'b' => out.push(8),
                b'f' => out.push(12),
                b'v' => out.push(11),
                b'0'..=b'7' => {
                    let mut n = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.b.get(self.i) {
                            Some(d @ b'0'..=b'7') => {
                                n = n * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    out.push(n as u8);
                }
                b'x' => {
                    let hex: String = self.b[self.i..]
                        .iter()
                        .take(2)
                        .take_while(|c| c.is_ascii_hexdigit())
                        .map(|c| *c as char)
                        .collect();
                    self.i += hex.len();
                    out.push(u8::from_str_radix(&hex, 16).map_err(|e| e.to_string())?);
                }
                b'u' | b'U' => {
                    let len = if e == b'u' { 4 } else { 8 };
                    let hex = std::str::from_utf8(&self.b[self.i..self.i + len])
                        .map_err(|e| e.to_string())?;
                    self.i += len;
                    let c = u32::from_str_radix(hex, 16).map_err(|e| e.to_string())?;
                    let c = char::from_u32(c).ok_or("an invalid \\u escape")?;
                    out.extend_from_slice(c.to_string().as_bytes());
                }
                other => out.push(other),
            }
        }
    }
}
