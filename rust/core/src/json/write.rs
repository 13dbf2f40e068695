//! The one JSON writer, in the two layouts of [`Layout`]. Strings are copied in runs between the
//! bytes that need escaping, found with a lookup table, so ASCII-heavy payloads go at memcpy speed.

use super::float::write_f64;
use super::sink::Sink;
use crate::value::{Key, Value};

/// Where the call graph and the DAG differ in their JSON text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    /// Python's `json.dumps` defaults: `", "` / `": "` separators, `ensure_ascii=True`
    /// (the call graph's `snapshot_json`, compared byte for byte with `json.dumps(snapshot())`).
    Python,
    /// `json.dumps(v, separators=(",", ":"), ensure_ascii=False)` (the DAG's `to_json`, previews).
    Compact,
}

impl Layout {
    fn item_sep(self) -> &'static [u8] {
        match self {
            Layout::Python => b", ",
            Layout::Compact => b",",
        }
    }

    fn key_sep(self) -> &'static [u8] {
        match self {
            Layout::Python => b": ",
            Layout::Compact => b":",
        }
    }
}

/// Per byte: 0 copies it as is; 1 escapes it in both layouts; 2 escapes it only under
/// `ensure_ascii` (DEL and every byte of a non-ASCII character).
const CLASS: [u8; 256] = {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = if i < 0x20 || i == b'"' as usize || i == b'\\' as usize {
            1
        } else if i >= 0x7f {
            2
        } else {
            0
        };
        i += 1;
    }
    t
};

/// Appends `s` as a JSON string literal, escaped like CPython's encoder for `layout`.
pub fn write_str<S: Sink + ?Sized>(out: &mut S, s: &str, layout: Layout) {
    let bytes = s.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    // Non-ASCII bytes are copied as they are unless `ensure_ascii` applies.
    let copy_non_ascii = layout == Layout::Compact;
    let mut run_start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight plain bytes at a time: most text has nothing to escape.
        if let Some(chunk) = bytes.get(i..i + 8) {
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            if !needs_escape(word, copy_non_ascii) {
                i += 8;
                continue;
            }
        }
        let class = CLASS[usize::from(bytes[i])];
        if class == 0 || (class == 2 && copy_non_ascii) {
            i += 1;
            continue;
        }
        out.extend_from_slice(&bytes[run_start..i]);
        if class == 1 {
            write_ascii_escape(out, bytes[i]);
            i += 1;
        } else if bytes[i] == 0x7f {
            write_u_escape(out, 0x7f);
            i += 1;
        } else {
            // A non-ASCII character under ensure_ascii: its UTF-16 units as \u escapes.
            let c = s[i..].chars().next().unwrap_or('\u{fffd}');
            let mut units = [0u16; 2];
            for unit in c.encode_utf16(&mut units) {
                write_u_escape(out, *unit);
            }
            i += c.len_utf8();
        }
        run_start = i;
    }
    out.extend_from_slice(&bytes[run_start..]);
    out.push(b'"');
}

/// True when any byte of `word` may need escaping: a control byte, `"`, `\\`, or (under
/// `ensure_ascii`) DEL and non-ASCII. A false positive only sends the chunk to the exact per-byte path.
#[inline]
pub(super) fn needs_escape(word: u64, copy_non_ascii: bool) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGH != 0;
    let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGH != 0;
    let special = below_space
        || has_zero(word ^ (ONES * u64::from(b'"')))
        || has_zero(word ^ (ONES * u64::from(b'\\')));
    if copy_non_ascii {
        special
    } else {
        special || word & HIGH != 0 || has_zero(word ^ (ONES * 0x7f))
    }
}

fn write_ascii_escape<S: Sink + ?Sized>(out: &mut S, b: u8) {
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

fn write_u_escape<S: Sink + ?Sized>(out: &mut S, unit: u16) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[
        b'\\',
        b'u',
        HEX[usize::from(unit >> 12)],
        HEX[usize::from((unit >> 8) & 0xf)],
        HEX[usize::from((unit >> 4) & 0xf)],
        HEX[usize::from(unit & 0xf)],
    ]);
}

pub fn write_i64<S: Sink + ?Sized>(out: &mut S, v: i64) {
    if out.counts_only() {
        out.fill(b'0', usize::from(v < 0) + decimal_len(v.unsigned_abs()));
        return;
    }
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

pub fn write_u64<S: Sink + ?Sized>(out: &mut S, v: u64) {
    if out.counts_only() {
        out.fill(b'0', decimal_len(v));
        return;
    }
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// How many decimal digits `v` has (the sizing pass measures integers instead of formatting them).
#[inline]
pub fn decimal_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |d| d as usize + 1)
}

/// Appends `v`; tuples are written as arrays, like `json.dumps` does.
pub fn write_value<S: Sink + ?Sized>(out: &mut S, v: &Value, layout: Layout) {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(i) => write_i64(out, *i),
        Value::Float(f) => write_f64(out, *f),
        Value::Str(s) => write_str(out, s, layout),
        Value::Array(items) | Value::Tuple(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(layout.item_sep());
                }
                write_value(out, item, layout);
            }
            out.push(b']');
        }
        Value::Object(entries) => write_object(out, entries, layout),
    }
}

/// Appends an object from its entries (also the empty `{}` of absent metadata).
pub fn write_object<S: Sink + ?Sized>(out: &mut S, entries: &[(Key, Value)], layout: Layout) {
    out.push(b'{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(layout.item_sep());
        }
        write_str(out, k, layout);
        out.extend_from_slice(layout.key_sep());
        write_value(out, v, layout);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str, layout: Layout) -> String {
        let mut out = Vec::new();
        write_str(&mut out, v, layout);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_match_ensure_ascii() {
        let p = Layout::Python;
        assert_eq!(s("plain", p), "\"plain\"");
        assert_eq!(s("a\"b\\c", p), "\"a\\\"b\\\\c\"");
        assert_eq!(
            s("\n\r\t\u{8}\u{c}\u{1}\u{7f}", p),
            "\"\\n\\r\\t\\b\\f\\u0001\\u007f\""
        );
        assert_eq!(s("é", p), "\"\\u00e9\"");
        assert_eq!(s("x😀y", p), "\"x\\ud83d\\ude00y\"");
        assert_eq!(s("ab\u{2028}\"", p), "\"ab\\u2028\\\"\"");
    }

    #[test]
    fn long_runs_take_the_word_path_and_stay_exact() {
        let p = Layout::Python;
        let c = Layout::Compact;
        let text = "abcdefghijklmnopqrstuvwxyz0123456789";
        assert_eq!(s(text, p), format!("\"{text}\""));
        for (i, special) in ["\"", "\\", "\n", "\u{1f}", "é", "\u{7f}"]
            .iter()
            .enumerate()
        {
            let at = format!("{}{special}{}", &text[..i * 5 + 1], &text[i * 5 + 1..]);
            let want_c: String = serde_like(&at, false);
            let want_p: String = serde_like(&at, true);
            assert_eq!(s(&at, c), want_c, "{at:?}");
            assert_eq!(s(&at, p), want_p, "{at:?}");
        }
    }

    /// A plain char-by-char reference encoder.
    fn serde_like(text: &str, ascii: bool) -> String {
        let mut out = String::from("\"");
        for ch in text.chars() {
            match ch {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
                c if ascii && (c as u32) >= 0x7f => {
                    let mut units = [0u16; 2];
                    for u in c.encode_utf16(&mut units) {
                        out.push_str(&format!("\\u{u:04x}"));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
        out
    }

    #[test]
    fn compact_strings_keep_unicode_and_escape_controls() {
        let c = Layout::Compact;
        assert_eq!(s("é😀\u{7f}", c), "\"é😀\u{7f}\"");
        assert_eq!(s("a\"\\\n\u{1f}", c), "\"a\\\"\\\\\\n\\u001f\"");
    }
}
