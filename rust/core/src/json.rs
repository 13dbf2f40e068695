//! JSON writing that is byte-identical to Python's `json.dumps` with default arguments
//! (`", "` / `": "` separators, `ensure_ascii=True`, `repr()` floats), and a strict
//! RFC 8259 reader into [`Value`].
//!
//! Byte identity matters: callers compare `snapshot_json()` with `json.dumps(snapshot())`
//! and may hash or diff the output across the two paths. Callers keep non-finite floats
//! out of what they write (docs/design.md §23); `NaN`/`Infinity` are spelled like Python
//! only so that a bug could never produce something other than a recognisable token.

use rustc_hash::FxHashMap;

use crate::value::Value;

/// Appends `s` as a JSON string literal, escaping exactly like CPython's `ensure_ascii` encoder.
pub fn write_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut run_start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        // Printable ASCII other than quote and backslash is copied in runs.
        if (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\' {
            continue;
        }
        if b >= 0x80 {
            // Non-ASCII is handled per char below; flush the run and re-scan from here.
            out.extend_from_slice(&bytes[run_start..i]);
            break_to_slow(out, &s[i..]);
            out.push(b'"');
            return;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        run_start = i + 1;
        write_ascii_escape(out, b);
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

fn break_to_slow(out: &mut Vec<u8>, s: &str) {
    let mut buf = [0u16; 2];
    for c in s.chars() {
        let cp = c as u32;
        if (0x20..0x7f).contains(&cp) && c != '"' && c != '\\' {
            out.push(cp as u8);
        } else if cp < 0x80 {
            write_ascii_escape(out, cp as u8);
        } else {
            for unit in c.encode_utf16(&mut buf) {
                write_u_escape(out, *unit);
            }
        }
    }
}

fn write_ascii_escape(out: &mut Vec<u8>, b: u8) {
    match b {
        b'"' => out.extend_from_slice(b"\\\""),
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x0c => out.extend_from_slice(b"\\f"),
        _ => write_u_escape(out, u16::from(b)),
    }
}

fn write_u_escape(out: &mut Vec<u8>, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(b"\\u");
    for shift in [12, 8, 4, 0] {
        out.push(HEX[usize::from((unit >> shift) & 0xf)]);
    }
}

pub fn write_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

pub fn write_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Appends `v` formatted like Python's `float.__repr__` (shortest round-trip digits,
/// exponent form when the decimal exponent is < -4 or >= 16).
pub fn write_f64(out: &mut Vec<u8>, v: f64) {
    if v.is_nan() {
        out.extend_from_slice(b"NaN");
        return;
    }
    if v.is_infinite() {
        out.extend_from_slice(if v > 0.0 { b"Infinity" } else { b"-Infinity" });
        return;
    }
    let mut buf = ryu::Buffer::new();
    let text = buf.format_finite(v);
    // Common case: ryu and Python agree on fixed notation in this range (shortest digits,
    // ".0" on integral values), so the text is copied as is.
    let abs = v.abs();
    if (abs == 0.0 || (1e-4..1e16).contains(&abs)) && !text.contains('e') {
        out.extend_from_slice(text.as_bytes());
        return;
    }
    write_f64_python_layout(out, v.is_sign_negative(), text);
}

fn write_f64_python_layout(out: &mut Vec<u8>, negative: bool, ryu_text: &str) {
    let mut digits = [0u8; 32];
    let (n, exp10) = shortest_digits(ryu_text, &mut digits);
    let digits = &digits[..n];
    let n = n as i32;
    if negative {
        out.push(b'-');
    }
    // `exp10` is the position of the decimal point relative to the digit string:
    // value = 0.d1d2d3... * 10^exp10.
    if (-3..=16).contains(&exp10) {
        if exp10 <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat_n(b'0', (-exp10) as usize));
            out.extend_from_slice(digits);
        } else if exp10 >= n {
            out.extend_from_slice(digits);
            out.extend(std::iter::repeat_n(b'0', (exp10 - n) as usize));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..exp10 as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[exp10 as usize..]);
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = exp10 - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let abs = e.unsigned_abs();
        if abs < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(itoa::Buffer::new().format(abs).as_bytes());
    }
}

/// Splits ryu's output into significant digits (no leading/trailing zeros) written to `buf`
/// and the decimal point position, so that the value is `0.DIGITS * 10^pos`.
fn shortest_digits(s: &str, buf: &mut [u8; 32]) -> (usize, i32) {
    let s = s.strip_prefix('-').unwrap_or(s);
    let (mantissa, exp) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], s[i + 1..].parse::<i32>().unwrap_or(0)),
        None => (s, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut n = 0;
    let mut point = int_part.len() as i32 + exp;
    let mut leading = true;
    for &d in int_part.as_bytes().iter().chain(frac_part.as_bytes()) {
        if leading && d == b'0' {
            point -= 1;
            continue;
        }
        leading = false;
        // Shortest round-trip output has at most 17 significant digits.
        buf[n] = d;
        n += 1;
    }
    while n > 0 && buf[n - 1] == b'0' {
        n -= 1;
    }
    if n == 0 {
        // Zero: Python prints "0.0".
        buf[0] = b'0';
        return (1, 1);
    }
    (n, point)
}

/// A value tree the reader can build. Keys of one object come out unique (a repeated key keeps
/// its first position and its last value).
pub trait JsonTree: Sized {
    type Key: From<String> + Eq + std::hash::Hash + std::borrow::Borrow<str>;
    fn null() -> Self;
    fn bool(b: bool) -> Self;
    fn int(i: i64) -> Self;
    fn float(f: f64) -> Self;
    fn str(s: String) -> Self;
    fn array(items: Vec<Self>) -> Self;
    fn object(entries: Vec<(Self::Key, Self)>) -> Self;
}

impl JsonTree for Value {
    type Key = Box<str>;
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
        Value::Str(s.into())
    }
    fn array(items: Vec<Self>) -> Self {
        Value::List(items)
    }
    fn object(entries: Vec<(Box<str>, Self)>) -> Self {
        Value::Dict(entries)
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
    let mut r = Reader { b: text, i: 0 };
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

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

/// Objects up to this size find repeated keys by scanning; larger ones use an index.
const SCAN_KEYS: usize = 16;

impl Reader<'_> {
    fn err<T>(&self, what: &str) -> Result<T, String> {
        Err(format!("{what} at byte {}", self.i))
    }

    fn ws(&mut self) {
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

    fn value<V: JsonTree>(&mut self, depth: usize) -> Result<V, String> {
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
        let mut items = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b']') {
            self.i += 1;
            return Ok(V::array(items));
        }
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
        let mut entries: Vec<(V::Key, V)> = Vec::new();
        self.ws();
        if self.b.get(self.i) == Some(&b'}') {
            self.i += 1;
            return Ok(V::object(entries));
        }
        loop {
            self.ws();
            if self.b.get(self.i) != Some(&b'"') {
                return self.err("expected a string key");
            }
            let key = V::Key::from(self.string()?);
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
                        entries = dedup_keys(entries);
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

    fn string(&mut self) -> Result<String, String> {
        self.i += 1;
        let mut out = String::new();
        loop {
            let start = self.i;
            while let Some(&c) = self.b.get(self.i) {
                if c == b'"' || c == b'\\' || c < 0x20 {
                    break;
                }
                self.i += 1;
            }
            match std::str::from_utf8(&self.b[start..self.i]) {
                Ok(run) => out.push_str(run),
                Err(e) => {
                    self.i = start + e.valid_up_to();
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

    fn number<V: JsonTree>(&mut self) -> Result<V, String> {
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

    fn f(v: f64) -> String {
        let mut out = Vec::new();
        write_f64(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    fn s(v: &str) -> String {
        let mut out = Vec::new();
        write_str(&mut out, v);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn floats_match_python_repr() {
        let cases = [
            (0.0, "0.0"),
            (-0.0, "-0.0"),
            (1.0, "1.0"),
            (0.0042, "0.0042"),
            (0.95, "0.95"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1e16, "1e+16"),
            (1234567890123456.0, "1234567890123456.0"),
            (12345678901234567.0, "1.2345678901234568e+16"),
            (1.5e300, "1.5e+300"),
            (5e-324, "5e-324"),
            (-2.5e-7, "-2.5e-07"),
            (123.456, "123.456"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
            (0.1 + 0.2, "0.30000000000000004"),
            (100.0, "100.0"),
            (1e-4, "0.0001"),
            (9.999e-5, "9.999e-05"),
            (9999999999999998.0, "9999999999999998.0"),
            (1e22, "1e+22"),
            (123456789.125, "123456789.125"),
            (-1e-7, "-1e-07"),
        ];
        for (v, want) in cases {
            assert_eq!(f(v), want, "repr of {v:e}");
        }
    }

    fn rd(t: &str) -> Result<Value, String> {
        read(t.as_bytes())
    }

    #[test]
    fn reader_round_trips_what_the_writer_writes() {
        let v = Value::Dict(vec![
            ("a\"\\\n\u{1}é😀".into(), Value::Int(i64::MIN)),
            (
                "b".into(),
                Value::List(vec![
                    Value::Float(0.1 + 0.2),
                    Value::Float(-0.0),
                    Value::Float(5e-324),
                    Value::Float(1.7976931348623157e308),
                    Value::Null,
                    Value::Bool(false),
                    Value::Dict(vec![]),
                    Value::List(vec![]),
                ]),
            ),
        ]);
        let mut out = Vec::new();
        v.write_json(&mut out);
        assert_eq!(read(&out), Ok(v));
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
            Ok(Value::Dict(vec![
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
        let Ok(Value::Dict(entries)) = rd(&text) else {
            panic!("object")
        };
        assert_eq!(entries.len(), 100);
        assert_eq!(entries[5], ("k5".into(), Value::Int(-1)));
    }

    #[test]
    fn strings_match_ensure_ascii() {
        assert_eq!(s("plain"), "\"plain\"");
        assert_eq!(s("a\"b\\c"), "\"a\\\"b\\\\c\"");
        assert_eq!(
            s("\n\r\t\u{8}\u{c}\u{1}\u{7f}"),
            "\"\\n\\r\\t\\b\\f\\u0001\\u007f\""
        );
        assert_eq!(s("é"), "\"\\u00e9\"");
        assert_eq!(s("x😀y"), "\"x\\ud83d\\ude00y\"");
        assert_eq!(s("ab\u{2028}\""), "\"ab\\u2028\\\"\"");
    }
}
