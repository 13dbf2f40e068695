//! `output_preview`: a small readable excerpt derived from `output` (docs/dag-rules.md §4.4, docs/design.md §12).

use crate::json;
use crate::value::{Key, Value};

pub const PREVIEW_LIMIT: usize = 200;

/// Cuts to `limit` Unicode code points; longer text keeps `limit - 3` of them plus "...".
pub fn truncate_chars(s: &str, limit: usize) -> String {
    match s.char_indices().nth(limit) {
        None => s.to_owned(),
        Some(_) => {
            let keep = limit.saturating_sub(3);
            let end = s.char_indices().nth(keep).map_or(s.len(), |(i, _)| i);
            format!("{}...", &s[..end])
        }
    }
}

fn snippet(v: &Value) -> Value {
    let text = match v {
        Value::Str(s) => truncate_chars(s, PREVIEW_LIMIT),
        other => truncate_chars(
            &json::to_string(other, json::Layout::Compact),
            PREVIEW_LIMIT,
        ),
    };
    Value::Str(text)
}

/// Which value the preview shows, under which key; None for an empty preview.
fn source(output: &Value) -> Option<(Key, &Value)> {
    let Some(map) = output.as_object() else {
        return match output {
            Value::Null => None,
            other => Some(("json".into(), other)),
        };
    };
    if map.is_empty() {
        return None;
    }
    for key in ["content", "result"] {
        if let Some(v) = output.get(key) {
            return Some((key.into(), v));
        }
    }
    if map.len() == 1 {
        let (k, v) = &map[0];
        return Some((k.clone(), v));
    }
    Some(("json".into(), output))
}

pub fn derive(output: &Value) -> Value {
    match source(output) {
        None => Value::empty_object(),
        Some((key, v)) => Value::Object(vec![(key, snippet(v))]),
    }
}

/// Whether deriving the preview writes JSON (the shown value is not text): then its cost grows with the
/// output, and a node keeps its preview instead of deriving it on every read (docs/dag.md "Memory").
pub fn is_costly(output: &Value) -> bool {
    source(output).is_some_and(|(_, v)| !matches!(v, Value::Str(_)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::obj;

    #[test]
    fn priority_content_result_single_json() {
        let both = obj(&[
            ("result", Value::Int(1)),
            ("content", Value::Str("c".into())),
        ]);
        assert_eq!(derive(&both), obj(&[("content", Value::Str("c".into()))]));
        let result = obj(&[("result", Value::Null), ("x", Value::Int(2))]);
        assert_eq!(
            derive(&result),
            obj(&[("result", Value::Str("null".into()))])
        );
        let single = obj(&[(
            "answer",
            Value::Array(vec![Value::Int(1), Value::Str("é".into())]),
        )]);
        assert_eq!(
            derive(&single),
            obj(&[("answer", Value::Str("[1,\"é\"]".into()))])
        );
        let many = obj(&[("a", Value::Int(1)), ("b", Value::Bool(true))]);
        assert_eq!(
            derive(&many),
            obj(&[("json", Value::Str("{\"a\":1,\"b\":true}".into()))])
        );
        assert_eq!(derive(&Value::empty_object()), Value::empty_object());
    }

    #[test]
    fn truncation_counts_code_points() {
        let exact: String = "é".repeat(200);
        assert_eq!(truncate_chars(&exact, 200), exact);
        let long: String = "😀".repeat(201);
        let cut = truncate_chars(&long, 200);
        assert_eq!(cut.chars().count(), 200);
        assert!(cut.ends_with("..."));
        assert_eq!(cut.chars().filter(|c| *c == '😀').count(), 197);
    }
}
