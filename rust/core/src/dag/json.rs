//! Compact JSON text for payload values, byte-compatible with
//! `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`, and a strict parser for the round trip.

use super::value::Value;

pub fn to_string(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

pub fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Int(i) => out.push_str(itoa::Buffer::new().format(*i)),
        Value::Float(f) => write_float(out, *f),
        Value::Str(s) => write_str(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            for (i, (k, item)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(out, k);
                out.push(':');
                write_value(out, item);
            }
            out.push('}');
        }
    }
}

pub fn write_str(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's float repr, shared with the call-graph encoder (`crate::json::write_f64`).
pub fn write_float(out: &mut String, f: f64) {
    let mut buf = Vec::with_capacity(24);
    crate::json::write_f64(&mut buf, f);
    out.push_str(std::str::from_utf8(&buf).expect("float text is ASCII"));
}

/// Reads a payload document with the core's one strict JSON reader (`crate::json::read`: linear,
/// duplicate keys resolved like Python's `json.loads`), building the DAG's value type directly.
pub fn parse(text: &str) -> Result<Value, String> {
    crate::json::read(text.as_bytes())
}

impl crate::json::JsonTree for Value {
    type Key = String;
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
    fn object(entries: Vec<(String, Self)>) -> Self {
        Value::Object(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_follow_python_repr() {
        let cases = [
            (1.0, "1.0"),
            (0.5, "0.5"),
            (1e16, "1e+16"),
            (1.5e20, "1.5e+20"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (123456.789, "123456.789"),
            (-2.5, "-2.5"),
            (1.7e9, "1700000000.0"),
            (1763767337.123456, "1763767337.123456"),
        ];
        for (f, want) in cases {
            let mut s = String::new();
            write_float(&mut s, f);
            assert_eq!(s, want);
        }
    }

    #[test]
    fn round_trip_keeps_order_and_unicode() {
        let text = r#"{"b":1,"a":[true,null,"é\n\"",-3.25],"c":{"x":"😀"}}"#;
        let v = parse(text).unwrap();
        assert_eq!(to_string(&v), text);
        assert_eq!(parse(r#""\ud83d\ude00""#).unwrap(), Value::Str("😀".into()));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "{", "[1,]", "nul", "\"abc", "1 2", "{\"a\" 1}", "NaN"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }
}
