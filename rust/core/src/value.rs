//! A JSON-like value tree for caller-supplied metadata, owned by Rust.
//!
//! Not serde_json::Value: tuples must come back as tuples, so the tree keeps that
//! distinction. Floats are finite wherever a tree is accepted (docs/design.md §23: output
//! is strict JSON); [`Value::non_finite_path`] is the check.

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
    /// Where the first NaN or infinite float sits (`metadata["a"][2]`), if any.
    pub fn non_finite_path(&self) -> Option<String> {
        let mut path = String::from("metadata");
        self.find_non_finite(&mut path).then_some(path)
    }

    fn find_non_finite(&self, path: &mut String) -> bool {
        let len = path.len();
        let found = match self {
            Value::Float(f) => !f.is_finite(),
            Value::List(items) | Value::Tuple(items) => items.iter().enumerate().any(|(i, v)| {
                path.truncate(len);
                path.push_str(&format!("[{i}]"));
                v.find_non_finite(path)
            }),
            Value::Dict(entries) => entries.iter().any(|(k, v)| {
                path.truncate(len);
                let mut key = Vec::new();
                json::write_str(&mut key, k);
                path.push('[');
                path.push_str(&String::from_utf8_lossy(&key));
                path.push(']');
                v.find_non_finite(path)
            }),
            _ => false,
        };
        if !found {
            path.truncate(len);
        }
        found
    }

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
    fn non_finite_floats_are_found_at_any_depth() {
        let ok = Value::Dict(vec![("a".into(), Value::List(vec![Value::Float(1.5)]))]);
        assert_eq!(ok.non_finite_path(), None);
        let bad = Value::Dict(vec![
            ("ok".into(), Value::Int(1)),
            (
                "a".into(),
                Value::Tuple(vec![
                    Value::Null,
                    Value::Dict(vec![("x\"".into(), Value::Float(f64::NEG_INFINITY))]),
                ]),
            ),
        ]);
        assert_eq!(
            bad.non_finite_path().as_deref(),
            Some(r#"metadata["a"][1]["x\""]"#)
        );
        assert!(Value::Float(f64::NAN).non_finite_path().is_some());
    }

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
