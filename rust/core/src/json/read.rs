//! The strict RFC 8259 reader (docs/design.md §23), shared by the call graph's `load` and the DAG's
//! `from_json`: linear, repeated keys resolved like Python's `json.loads`, errors name the byte offset.

use rustc_hash::FxHashMap;

use crate::value::{Key, Value};

/// A value tree the reader can build. Keys of one object come out unique (a repeated key keeps
/// its first position and its last value).
pub trait JsonTree: Sized {
    type Key: From<String> + for<'s> From<&'s str> + Eq + std::hash::Hash + std::borrow::Borrow<str>;
    fn null() -> Self;
    fn bool(b: bool) -> Self;
    fn int(i: i64) -> Self;
    fn float(f: f64) -> Self;
    fn str(s: String) -> Self;
    fn array(items: Vec<Self>) -> Self;
    fn object(entries: Vec<(Self::Key, Self)>) -> Self;
}

impl JsonTree for Value {
    type Key = Key;
    fn null() -> Self {
        Value::Null
    }
    fn bool(b: bool) -> Self {
        Value::Bool(b)
    }
    fn int(i: i64) -> Self {
        Value::Int(i)
    }
    fn float(f: f64) -> Self {
        Value::Float(f)
    }
    fn str(s: String) -> Self {
        Value::Str(s)
    }
    fn array(items: Vec<Self>) -> Self {
        Value::Array(items)
    }
    fn object(entries: Vec<(Key, Self)>) -> Self {
        Value::Object(entries)
    }
}

/// Nesting deeper than this is refused rather than risking the stack.
pub const MAX_READ_DEPTH: usize = 512;

/// Parses one strict JSON text: no `NaN`/`Infinity`, no trailing commas, no lone
/// surrogates, integers within i64, floats finite. A repeated object key keeps its first
/// position and its last value, like Python's `json.loads`; the lookup is hashed for large
/// objects, so reading stays linear. Errors name the byte offset.
///
/// Generic over the tree it builds ([`JsonTree`]): the call graph reads into [`Value`], the DAG
/// into its payload value, through this one reader.
pub fn read<V: JsonTree>(text: &[u8]) -> Result<V, String> {
    read_with(Reader {
        b: text,
        i: 0,
        utf8: false,
    })
}

/// [`read`] of a text already known to be UTF-8: string runs are not validated again (they are cut only at
/// ASCII delimiters, so each is valid UTF-8 as well; `from_utf8` was a twentieth of a DAG load).
pub fn read_str<V: JsonTree>(text: &str) -> Result<V, String> {
    read_with(Reader {
        b: text.as_bytes(),
        i: 0,
        utf8: true,
    })
}

fn read_with<V: JsonTree>(mut r: Reader<'_>) -> Result<V, String> {
    r.ws();
    let v = r.value(0)?;
    r.ws();
    if r.i != r.b.len() {
        return r.err("trailing data");
    }
    Ok(v)
}

/// Collapses repeated keys like `json.loads` (the last value wins, at the first key's position) in one
/// pass with a map of borrowed keys: no key is copied, and an object without repeats is returned as is.
fn dedup_keys<K: Eq + std::hash::Hash + std::borrow::Borrow<str>, V>(
    entries: Vec<(K, V)>,
) -> Vec<(K, V)> {
    let first: Vec<usize> = {
        let mut index: FxHashMap<&str, usize> = FxHashMap::default();
        index.reserve(entries.len());
        entries
            .iter()
            .enumerate()
            .map(|(i, (k, _))| *index.entry(k.borrow()).or_insert(i))
            .collect()
    };
    if first.iter().enumerate().all(|(i, &f)| i == f) {
        return entries;
    }
    let mut out: Vec<(K, V)> = Vec::with_capacity(entries.len());
    let mut slot = vec![usize::MAX; entries.len()];
    for (i, (k, v)) in entries.into_iter().enumerate() {
        if first[i] == i {
            slot[i] = out.len();
            out.push((k, v));
        } else {
            out[slot[first[i]]].1 = v;
        }
    }
    out
}

pub(super) struct Reader<'a> {
    pub(super) b: &'a [u8],
    pub(super) i: usize,
    /// `b` is known to be UTF-8 (it came from a `&str`).
    pub(super) utf8: bool,
}

/// Objects up to this size find repeated keys by scanning; larger ones use an index.
const SCAN_KEYS: usize = 16;

impl<'a> Reader<'a> {
    pub(super) fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.i))
    }

    pub(super) fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn literal<V>(&mut self, lit: &[u8], v: V) -> Result<V, String> {
        if self.b[self.i..].starts_with(lit) {
            self.i += lit.len();
            Ok(v)
        } else {
            self.err("invalid literal")
        }
    }

    pub(super) fn value<V: JsonTree>(&mut self, depth: usize) -> Result<V, String> {
        if depth > MAX_READ_DEPTH {
            return self.err("nesting too deep");
        }
        match self.b.get(self.i) {
            None => self.err("unexpected end of input"),
            Some(b'n') => self.literal(b"null", V::null()),
            Some(b't') => self.literal(b"true", V::bool(true)),
            Some(b'f') => self.literal(b"false", V::bool(false)),
            Some(b'"') => Ok(V::str(self.string()?)),
            Some(b'[') => self.array(depth),
            Some(b'{') => self.object(depth),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(_) => self.err("unexpected character"),
        }
    }

    fn array<V: JsonTree>(&mut self, depth: usize) -> Result<V, String> {
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(V::array(Vec::new()));
        }
        // Room for one: a one-item container is then allocated at its size (grown by pushing from empty,
        // a one-key object took 224 bytes for 56, and every DAG node has one).
        let mut items: Vec<V> = Vec::with_capacity(1);
        loop {
            self.ws();
            items.push(self.value(depth + 1)?);
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(V::array(items));
                }
                _ => return self.err("expected ',' or ']'"),
            }
        }
    }

    fn object<V: JsonTree>(&mut self, depth: usize) -> Result<V, String> {
        self.i += 1;
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(V::object(Vec::new()));
        }
        let mut entries: Vec<(V::Key, V)> = Vec::with_capacity(1); // as in `array`
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.err("expected a string key");
            }
            let key = self.key::<V::Key>()?;
            self.ws();
            if self.b.get(self.i) != Some(&b':') {
                return self.err("expected ':'");
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth + 1)?;
            // Small objects find a repeated key by scanning; large ones are deduplicated once at the end.
            let seen = if entries.len() < SCAN_KEYS {
                entries.iter().position(|(k, _)| *k == key)
            } else {
                None
            };
            match seen {
                Some(pos) => entries[pos].1 = v,
                None => entries.push((key, v)),
            }
            self.ws();
            match self.b.get(self.i) {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    if entries.len() > SCAN_KEYS {
                        return Ok(V::object(dedup_keys(entries)));
                    }
                    return Ok(V::object(entries));
                }
                _ => return self.err("expected ',' or '}'"),
            }
        }
    }

    fn hex4(&mut self) -> Result<u32, String> {
        let digits = self.b.get(self.i..self.i + 4).unwrap_or_default();
        let v = std::str::from_utf8(digits)
            .ok()
            .filter(|d| d.len() == 4 && d.bytes().all(|c| c.is_ascii_hexdigit()))
            .and_then(|d| u32::from_str_radix(d, 16).ok());
        match v {
            Some(v) => {
                self.i += 4;
                Ok(v)
            }
            None => self.err("invalid \\u escape"),
        }
    }

    /// An object key, borrowed from the input when it has no escape (nearly always), so that an inline key
    /// type allocates nothing; anything else goes through [`Reader::string`], which also reports errors.
    fn key<K: From<String> + for<'s> From<&'s str>>(&mut self) -> Result<K, String> {
        match self.plain_string() {
            Some(s) => Ok(K::from(s)),
            None => self.string().map(K::from),
        }
    }

    /// The string at `i` (at its opening quote) borrowed from the input when it has no escape, and `i`
    /// past it; None (and `i` unchanged) when it needs [`Reader::string`], which also reports errors.
    #[inline]
    pub(super) fn plain_string(&mut self) -> Option<&'a str> {
        let start = self.i + 1;
        let mut j = start;
        while let Some(chunk) = self.b.get(j..j + 8) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            if super::write::needs_escape(word, true) {
                break;
            }
            j += 8;
        }
        while let Some(&c) = self.b.get(j) {
            if c == b'"' {
                let s = self.run(start, j)?;
                self.i = j + 1;
                return Some(s);
            }
            if c == b'\\' || c < 0x20 {
                return None;
            }
            j += 1;
        }
        None
    }

    /// The bytes `start..end` (cut at ASCII delimiters) as text; None if they are not UTF-8.
    #[inline]
    fn run(&self, start: usize, end: usize) -> Option<&'a str> {
        let bytes = &self.b[start..end];
        if self.utf8 {
            // SAFETY: `b` is a whole `&str` and `start`/`end` sit at ASCII bytes (or its ends), which
            // are never inside a multi-byte character, so the slice is UTF-8 too.
            Some(unsafe { std::str::from_utf8_unchecked(bytes) })
        } else {
            std::str::from_utf8(bytes).ok()
        }
    }

    pub(super) fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            // Eight plain bytes at a time (the writer's test: no quote, backslash or control byte).
            while let Some(chunk) = self.b.get(self.i..self.i + 8) {
                let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
                if super::write::needs_escape(word, true) {
                    break;
                }
                self.i += 8;
            }
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            match self.run(start, self.i) {
                Some(run) => out.push_str(run),
                None => {
                    let valid = std::str::from_utf8(&self.b[start..self.i])
                        .map_or_else(|e| e.valid_up_to(), str::len);
                    self.i = start + valid;
                    return self.err("invalid UTF-8");
                }
            }
            match self.b.get(self.i) {
                None => return self.err("unterminated string"),
                Some(b'"') => {
                    self.i += 1;
                    return Ok(out);
                }
                Some(b'\\') => {
                    self.i += 1;
                    let esc = self.b.get(self.i).copied();
                    self.i += 1;
                    match esc {
                        Some(b'"') => out.push('"'),
                        Some(b'\\') => out.push('\\'),
                        Some(b'/') => out.push('/'),
                        Some(b'n') => out.push('\n'),
                        Some(b'r') => out.push('\r'),
                        Some(b't') => out.push('\t'),
                        Some(b'b') => out.push('\u{08}'),
                        Some(b'f') => out.push('\u{0c}'),
                        Some(b'u') => {
                            let hi = self.hex4()?;
                            let cp = if (0xD800..0xDC00).contains(&hi) {
                                if !self.b[self.i..].starts_with(b"\\u") {
                                    return self.err("lone surrogate");
                                }
                                self.i += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return self.err("lone surrogate");
                                }
                                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                            } else {
                                hi
                            };
                            match char::from_u32(cp) {
                                Some(c) => out.push(c),
                                None => return self.err("lone surrogate"),
                            }
                        }
                        _ => {
                            self.i -= 1;
                            return self.err("invalid escape");
                        }
                    }
                }
                Some(_) => return self.err("control character in string"),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    pub(super) fn number<V: JsonTree>(&mut self) -> Result<V, String> {
        let start = self.i;
        if self.b[self.i] == b'-' {
            self.i += 1;
        }
        let int_start = self.i;
        let int_len = self.digits();
        if int_len == 0 || (int_len > 1 && self.b[int_start] == b'0') {
            return self.err("invalid number");
        }
        let mut is_float = false;
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            is_float = true;
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            is_float = true;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return self.err("invalid number");
            }
        }
        // Only ASCII digits, signs, '.', 'e' were consumed.
        let text = std::str::from_utf8(&self.b[start..self.i]).unwrap_or_default();
        if is_float {
            match text.parse::<f64>() {
                Ok(f) if f.is_finite() => Ok(V::float(f)),
                _ => {
                    self.i = start;
                    self.err("number out of range")
                }
            }
        } else {
            match text.parse::<i64>() {
                Ok(n) => Ok(V::int(n)),
                Err(_) => {
                    self.i = start;
                    self.err("integer out of the 64-bit range")
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rd(t: &str) -> Result<Value, String> {
        read(t.as_bytes())
    }

    #[test]
    fn reader_is_strict() {
        for bad in [
            "NaN",
            "Infinity",
            "-Infinity",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            ".5",
            "1e",
            "+1",
            "\"\\ud800\"",
            "\"\\udc00x\"",
            "\"\\ud800\\u0041\"",
            "\"\u{1}\"",
            "\"\\x\"",
            "1e999",
            "9223372036854775808",
            "[",
            "{\"a\" 1}",
            "nul",
            "\"abc",
            "1 2",
            "",
            "\"\\u12\"",
        ] {
            assert!(rd(bad).is_err(), "{bad:?} must be rejected");
        }
        assert!(read::<Value>(b"\"\xff\"").is_err(), "invalid UTF-8");
        let deep = "[".repeat(MAX_READ_DEPTH + 2) + &"]".repeat(MAX_READ_DEPTH + 2);
        assert!(rd(&deep).unwrap_err().contains("too deep"));
        assert_eq!(rd(" -0 "), Ok(Value::Int(0)));
        assert_eq!(rd("1E+2"), Ok(Value::Float(100.0)));
        assert_eq!(rd("\"\\ud83d\\ude00\\/\""), Ok(Value::Str("😀/".into())));
    }

    #[test]
    fn repeated_keys_keep_first_position_and_last_value() {
        assert_eq!(
            rd(r#"{"a": 1, "b": 2, "a": 3}"#),
            Ok(Value::Object(vec![
                ("a".into(), Value::Int(3)),
                ("b".into(), Value::Int(2))
            ]))
        );
        // Large objects take the hashed path; the result is the same.
        let mut text = String::from("{");
        for i in 0..100 {
            text.push_str(&format!("\"k{i}\": {i}, "));
        }
        text.push_str("\"k5\": -1}");
        let Ok(Value::Object(entries)) = rd(&text) else {
            panic!("object")
        };
        assert_eq!(entries.len(), 100);
        assert_eq!(entries[5], ("k5".into(), Value::Int(-1)));
    }

    #[test]
    fn text_known_to_be_utf8_reads_the_same_without_validation() {
        let doc = "{\"é中\\n😀 key with more than eight bytes\": [\"a\\\"é\", \"中文 and ascii long enough\\u00e9\", \"😀\"], \"k\": \"\\\\é\"}";
        let checked: Value = read(doc.as_bytes()).unwrap();
        let trusted: Value = read_str(doc).unwrap();
        assert_eq!(checked, trusted);
        let Value::Object(map) = &trusted else {
            panic!("{trusted:?}")
        };
        assert_eq!(&*map[0].0, "é中\n😀 key with more than eight bytes");
        assert_eq!(
            map[0].1,
            Value::Array(vec![
                Value::Str("a\"é".into()),
                Value::Str("中文 and ascii long enough\u{e9}".into()),
                Value::Str("😀".into()),
            ])
        );
        assert_eq!(map[1].1, Value::Str("\\é".into()));
    }
}
