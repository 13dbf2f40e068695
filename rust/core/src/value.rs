//! The core's one value tree: caller payloads and metadata, JSON-shaped, with key insertion order
//! kept like a Python dict's.
//!
//! Not serde_json::Value: the call graph hands metadata back with its tuples still tuples, so the
//! tree keeps that distinction ([`Value::Tuple`]; the DAG's converter never makes one). How strict a
//! tree is (nesting depth, NaN/infinity, tuples, key types) is decided where a Python object is
//! converted (`rust/py/src/convert.rs`, one `Rules` per engine), not by separate types; output is
//! strict JSON either way (docs/design.md §23), and [`Value::non_finite_path`] is the check for the
//! engine that accepts floats first and names the bad one afterwards.

use rustc_hash::FxHashMap;

use crate::json;

/// Objects are small in practice, so a vector of pairs beats a hash map and keeps order for free.
pub type Map = Vec<(Key, Value)>;

/// An object key: held inline up to 24 bytes (every record key and nearly every payload key), so reading
/// a document allocates nothing per key (a third of `from_json` went to malloc and free of keys).
pub type Key = compact_str::CompactString;

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Array(Vec<Value>),
    /// A Python tuple, kept so it comes back as one; written to JSON as an array.
    Tuple(Vec<Value>),
    /// Insertion-ordered, like a Python dict.
    Object(Map),
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
            Value::Array(items) | Value::Tuple(items) => items.iter().enumerate().any(|(i, v)| {
                path.truncate(len);
                path.push_str(&format!("[{i}]"));
                v.find_non_finite(path)
            }),
            Value::Object(entries) => entries.iter().any(|(k, v)| {
                path.truncate(len);
                let mut key = Vec::new();
                json::write_str(&mut key, k, json::Layout::Python);
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

    /// True when the tree holds at least `n` values (itself included); stops counting once it knows.
    /// The bindings use it to decide whether a call is long enough to be worth releasing the GIL.
    pub fn has_at_least(&self, n: usize) -> bool {
        fn count(v: &Value, budget: &mut usize) {
            *budget = budget.saturating_sub(1);
            match v {
                Value::Array(items) | Value::Tuple(items) => {
                    for item in items {
                        if *budget == 0 {
                            return;
                        }
                        count(item, budget);
                    }
                }
                Value::Object(m) => {
                    for (_, item) in m {
                        if *budget == 0 {
                            return;
                        }
                        count(item, budget);
                    }
                }
                _ => {}
            }
        }
        let mut budget = n;
        count(self, &mut budget);
        budget == 0
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
                // The first key of an empty object gets room for itself only: pushing would reserve four
                // (224 bytes for 56), and most payload objects keep one key (`{"content": ...}`).
                if m.capacity() == 0 {
                    m.reserve_exact(1);
                }
                m.push((key.into(), value));
            }
        }
    }

    pub fn remove(&mut self, key: &str) {
        if let Value::Object(m) = self {
            m.retain(|(k, _)| k != key);
        }
    }

    /// Objects merge key by key, recursively; anything else is replaced by `other`.
    /// O(|self| + |other|) per level: a merge of tens of thousands of keys must not be quadratic, and
    /// `other` is moved in, not cloned.
    pub fn deep_merge(&mut self, other: Value) {
        match (self, other) {
            (Value::Object(m), Value::Object(om)) => {
                merge_maps(m, om, |slot, ov| slot.deep_merge(ov))
            }
            (this, other) => *this = other,
        }
    }

    /// Top-level keys of `other` replace those of `self`; O(|self| + |other|).
    pub fn shallow_merge(&mut self, other: Value) {
        if let Value::Object(om) = other {
            if !matches!(self, Value::Object(_)) {
                *self = Value::empty_object();
            }
            if let Value::Object(m) = self {
                merge_maps(m, om, |slot, ov| *slot = ov);
            }
        }
    }
}

/// Payloads with at least this many values count as large (see `Value::has_at_least`).
pub const LARGE: usize = 1024;

/// True when any of the optional payload parts is large.
pub fn any_large<const N: usize>(parts: [&Option<Value>; N]) -> bool {
    parts
        .iter()
        .any(|p| p.as_ref().is_some_and(|v| v.has_at_least(LARGE)))
}

/// Below this size a linear scan is cheaper than hashing every key.
const SMALL: usize = 8;

/// For each key of `m`, its position among the first occurrences (later duplicates map to the first).
fn position_of(m: &Map) -> FxHashMap<&str, usize> {
    let mut index = FxHashMap::with_capacity_and_hasher(m.len(), Default::default());
    for (i, (k, _)) in m.iter().enumerate() {
        index.entry(k.as_str()).or_insert(i);
    }
    index
}

/// Merges `other` into `m` like `dict.update`: keys present in both go through `update` in place (so they
/// keep their position), new keys are appended in `other`'s order. One hash index of `m`, one pass.
fn merge_maps(m: &mut Map, other: Map, mut update: impl FnMut(&mut Value, Value)) {
    if m.is_empty() {
        *m = other;
        return;
    }
    if m.len() + other.len() <= SMALL {
        for (k, ov) in other {
            match m.iter().position(|(key, _)| *key == k) {
                Some(i) => update(&mut m[i].1, ov),
                None => m.push((k, ov)),
            }
        }
        return;
    }
    // Where each key of `other` lands: an existing slot, or None for a new key (decided before any write,
    // since the index borrows `m`). Keys of one object are unique: Python dicts are, and the parser
    // collapses duplicates (`crate::json::read`).
    let targets: Vec<Option<usize>> = {
        let index = position_of(m);
        other
            .iter()
            .map(|(k, _)| index.get(k.as_str()).copied())
            .collect()
    };
    m.reserve(targets.iter().filter(|t| t.is_none()).count());
    for ((k, ov), target) in other.into_iter().zip(targets) {
        match target {
            Some(i) => update(&mut m[i].1, ov),
            None => m.push((k, ov)),
        }
    }
}

/// Builds an object value from literal pairs (test fixtures).
#[cfg(test)]
pub(crate) fn obj(pairs: &[(&str, Value)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), v.clone()))
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_floats_are_found_at_any_depth() {
        let ok = Value::Object(vec![("a".into(), Value::Array(vec![Value::Float(1.5)]))]);
        assert_eq!(ok.non_finite_path(), None);
        let bad = Value::Object(vec![
            ("ok".into(), Value::Int(1)),
            (
                "a".into(),
                Value::Tuple(vec![
                    Value::Null,
                    Value::Object(vec![("x\"".into(), Value::Float(f64::NEG_INFINITY))]),
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
    fn deep_merge_recurses_into_objects_and_replaces_the_rest() {
        let mut base = obj(&[
            ("a", obj(&[("x", Value::Int(1)), ("y", Value::Int(2))])),
            ("b", Value::Array(vec![Value::Int(1)])),
            ("keep", Value::Bool(true)),
        ]);
        base.deep_merge(obj(&[
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
        base.shallow_merge(obj(&[("a", obj(&[("y", Value::Int(9))]))]));
        assert_eq!(
            base,
            obj(&[("a", obj(&[("y", Value::Int(9))])), ("b", Value::Int(2))])
        );
    }

    fn numbered(prefix: &str, range: std::ops::Range<i64>) -> Map {
        range
            .map(|i| (format!("{prefix}{i}").into(), Value::Int(i)))
            .collect()
    }

    #[test]
    fn large_merges_keep_dict_update_order_and_semantics() {
        // Above the linear-scan size: the hashed path must give exactly what dict.update gives.
        let mut base = Value::Object(numbered("k", 0..100));
        let mut other = numbered("k", 50..150);
        other[70].1 = Value::Str("replaced".into());
        other.push(("k3".into(), obj(&[("deep", Value::Int(1))])));
        base.shallow_merge(Value::Object(other));
        let m = base.as_object().unwrap();
        assert_eq!(m.len(), 150);
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        let want: Vec<String> = (0..150).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, want.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(base.get("k120"), Some(&Value::Str("replaced".into())));
        assert_eq!(base.get("k3"), Some(&obj(&[("deep", Value::Int(1))])));

        let mut deep = Value::Object(numbered("k", 0..100));
        deep.set("nested", Value::Object(numbered("n", 0..20)));
        let mut patch = numbered("k", 90..110);
        patch.push(("nested".into(), Value::Object(numbered("n", 10..30))));
        deep.deep_merge(Value::Object(patch));
        assert_eq!(deep.as_object().unwrap().len(), 111);
        let nested = deep.get("nested").unwrap().as_object().unwrap();
        assert_eq!(nested.len(), 30);
        assert_eq!(nested[29], ("n29".into(), Value::Int(29)));
    }

    #[test]
    fn merging_many_keys_into_a_small_object_stays_linear() {
        // A small target with a large patch once fell into the linear-scan path (quadratic: minutes here).
        let patch = Value::Object(numbered("k", 0..200_000));
        let mut small = obj(&[("k5", Value::Null), ("z", Value::Int(0))]);
        small.shallow_merge(patch.clone());
        small.deep_merge(patch);
        assert_eq!(small.as_object().unwrap().len(), 200_001);
        assert_eq!(small.get("k5"), Some(&Value::Int(5)));
    }

    #[test]
    fn duplicate_keys_collapse_like_json_loads() {
        let v = crate::json::parse(r#"{"a":1,"b":2,"a":3}"#).unwrap();
        assert_eq!(v, obj(&[("a", Value::Int(3)), ("b", Value::Int(2))]));
    }

    #[test]
    fn size_probe_stops_at_the_budget() {
        let big = Value::Object(numbered("k", 0..2000));
        assert!(big.has_at_least(LARGE));
        assert!(!Value::Object(numbered("k", 0..10)).has_at_least(LARGE));
        assert!(Value::Int(1).has_at_least(1));
        assert!(!Value::Int(1).has_at_least(2));
    }
}
