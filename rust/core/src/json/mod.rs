//! The core's one JSON reader and writer (docs/design.md §23: output is strict JSON).
//!
//! Two layouts, one writer ([`Layout`]): the call graph's snapshot is byte-identical to Python's
//! `json.dumps` with default arguments, because callers compare `snapshot_json()` with
//! `json.dumps(snapshot())`; the DAG's documents are compact UTF-8 like
//! `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`. Both read back through [`read`].

mod float;
mod pull;
mod read;
mod sink;
mod write;

pub use float::write_f64;
pub use pull::{Flat, Item, Pairs, Pull, FLAT_PAIRS};
pub use read::{read, read_str, JsonTree, MAX_READ_DEPTH};
pub use sink::{Counter, Cursor, Sink};
pub use write::{decimal_len, write_i64, write_object, write_str, write_u64, write_value, Layout};

use crate::value::Value;

/// `v` as JSON text in `layout`.
pub fn to_vec(v: &Value, layout: Layout) -> Vec<u8> {
    let mut out = Vec::new();
    write_value(&mut out, v, layout);
    out
}

/// `v` as JSON text in `layout`, as a `String`.
pub fn to_string(v: &Value, layout: Layout) -> String {
    into_string(to_vec(v, layout))
}

/// Text this module wrote, as a `String`.
pub fn into_string(out: Vec<u8>) -> String {
    // SAFETY: the writer copies whole UTF-8 strings or splits them only at ASCII bytes, and
    // everything else it writes is ASCII, so the buffer is valid UTF-8.
    unsafe { String::from_utf8_unchecked(out) }
}

/// Reads a whole document (the DAG's `from_json`, payload round trips).
pub fn parse(text: &str) -> Result<Value, String> {
    read_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_layouts_round_trip_through_the_one_reader() {
        let v = Value::Object(vec![
            ("a\"\\\n\u{1}é😀".into(), Value::Int(i64::MIN)),
            (
                "b".into(),
                Value::Array(vec![
                    Value::Float(0.1 + 0.2),
                    Value::Float(-0.0),
                    Value::Float(5e-324),
                    Value::Float(1.7976931348623157e308),
                    Value::Null,
                    Value::Bool(false),
                    Value::Object(vec![]),
                    Value::Array(vec![]),
                ]),
            ),
        ]);
        for layout in [Layout::Python, Layout::Compact] {
            assert_eq!(read(&to_vec(&v, layout)), Ok(v.clone()), "{layout:?}");
        }
    }

    #[test]
    fn layouts_match_python_json_dumps() {
        let v = Value::Object(vec![
            (
                "a".into(),
                Value::Array(vec![Value::Int(1), Value::Float(2.5), Value::Null]),
            ),
            (
                "b".into(),
                Value::Tuple(vec![Value::Bool(true), Value::Str("é\u{7f}".into())]),
            ),
            ("c".into(), Value::Object(vec![])),
        ]);
        assert_eq!(
            to_string(&v, Layout::Python),
            r#"{"a": [1, 2.5, null], "b": [true, "\u00e9\u007f"], "c": {}}"#
        );
        assert_eq!(
            to_string(&v, Layout::Compact),
            "{\"a\":[1,2.5,null],\"b\":[true,\"é\u{7f}\"],\"c\":{}}"
        );
    }

    #[test]
    fn compact_round_trip_keeps_order_and_unicode() {
        let text = r#"{"b":1,"a":[true,null,"é\n\"",-3.25],"c":{"x":"😀"}}"#;
        let v = parse(text).unwrap();
        assert_eq!(to_string(&v, Layout::Compact), text);
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap(), Value::Str("😀".into()));
    }
}
