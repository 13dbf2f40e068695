//! Payload values: a JSON tree that keeps key insertion order, like a Python dict does.

/// Objects are small in practice, so a vector of pairs beats a hash map and keeps order for free.
pub type Map = Vec<(String, Value)>;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    Object(Map),
}

impl Value {
    pub fn empty_object() -> Value {
        Value::Object(Vec::new())
    }

    pub fn as_object(&self) -> Option<&Map> {
        match self {
            Value::Object(m) => Some(m),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_object()?
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Sets `key`, replacing in place so the key keeps its original position.
    pub fn set(&mut self, key: &str, value: Value) {
        if !matches!(self, Value::Object(_)) {
            *self = Value::empty_object();
        }
        if let Value::Object(m) = self {
            if let Some(slot) = m.iter_mut().find(|(k, _)| k == key) {
                slot.1 = value;
            } else {
                m.push((key.to_owned(), value));
            }
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Value::Object(m) = self {
            m.retain(|(k, _)| k != key);
        }
    }

    /// Objects merge key by key, recursively; anything else is replaced by `other`.
    pub fn deep_merge(&mut self, other: &Value) {
        match (self.as_object().is_some(), other) {
            (true, Value::Object(om)) => {
                for (k, ov) in om {
                    let Value::Object(m) = self else {
                        unreachable!()
                    };
                    match m.iter_mut().find(|(key, _)| key == k) {
                        Some(slot) => slot.1.deep_merge(ov),
                        None => m.push((k.clone(), ov.clone())),
                    }
                }
            }
            _ => *self = other.clone(),
        }
    }

    /// Top-level keys of `other` replace those of `self`.
    pub fn shallow_merge(&mut self, other: &Value) {
        if let Value::Object(om) = other {
            for (k, v) in om {
                self.set(k, v.clone());
            }
        }
    }
}

/// Builds an object value from literal pairs (test fixtures).
#[cfg(test)]
pub(crate) fn obj(pairs: &[(&str, Value)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_merge_recurses_into_objects_and_replaces_the_rest() {
        let mut base = obj(&[
            ("a", obj(&[("x", Value::Int(1)), ("y", Value::Int(2))])),
            ("b", Value::Array(vec![Value::Int(1)])),
            ("keep", Value::Bool(true)),
        ]);
        base.deep_merge(&obj(&[
            ("a", obj(&[("y", Value::Int(3)), ("z", Value::Int(4))])),
            ("b", Value::Array(vec![])),
            ("new", Value::Null),
        ]));
        assert_eq!(
            base,
            obj(&[
                (
                    "a",
                    obj(&[
                        ("x", Value::Int(1)),
                        ("y", Value::Int(3)),
                        ("z", Value::Int(4))
                    ])
                ),
                ("b", Value::Array(vec![])),
                ("keep", Value::Bool(true)),
                ("new", Value::Null),
            ])
        );
    }

    #[test]
    fn shallow_merge_replaces_top_level_keys_in_place() {
        let mut base = obj(&[("a", obj(&[("x", Value::Int(1))])), ("b", Value::Int(2))]);
        base.shallow_merge(&obj(&[("a", obj(&[("y", Value::Int(9))]))]));
        assert_eq!(
            base,
            obj(&[("a", obj(&[("y", Value::Int(9))])), ("b", Value::Int(2))])
        );
    }
}
