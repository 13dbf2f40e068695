//! A JSON-like value tree for caller-supplied metadata, owned by Rust.
//!
//! Not serde_json::Value: metadata may hold NaN/Infinity (Python's json module writes them)
//! and tuples must come back as tuples, so the tree keeps those distinctions.

use crate::json;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Box<str>),
    List(Vec<Value>),
    Tuple(Vec<Value>),
    /// Insertion-ordered, like a Python dict.
    Dict(Vec<(Box<str>, Value)>),
}

impl Value {
    pub fn write_json(&self, out: &mut Vec<u8>) {
        match self {
            Value::Null => out.extend_from_slice(b"null"),
            Value::Bool(true) => out.extend_from_slice(b"true"),
            Value::Bool(false) => out.extend_from_slice(b"false"),
            Value::Int(i) => json::write_i64(out, *i),
            Value::Float(f) => json::write_f64(out, *f),
            Value::Str(s) => json::write_str(out, s),
            Value::List(items) | Value::Tuple(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    item.write_json(out);
                }
                out.push(b']');
            }
            Value::Dict(entries) => write_dict(out, entries),
        }
    }
}

pub fn write_dict(out: &mut Vec<u8>, entries: &[(Box<str>, Value)]) {
    out.push(b'{');
    for (i, (k, v)) in entries.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        json::write_str(out, k);
        out.extend_from_slice(b": ");
        v.write_json(out);
    }
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_json_matches_python_layout() {
        let v = Value::Dict(vec![
            (
                "a".into(),
                Value::List(vec![Value::Int(1), Value::Float(2.5), Value::Null]),
            ),
            (
                "b".into(),
                Value::Tuple(vec![Value::Bool(true), Value::Str("x".into())]),
            ),
            ("c".into(), Value::Dict(vec![])),
        ]);
        let mut out = Vec::new();
        v.write_json(&mut out);
        assert_eq!(
            String::from_utf8(out).unwrap(),
            r#"{"a": [1, 2.5, null], "b": [true, "x"], "c": {}}"#
        );
    }
}
