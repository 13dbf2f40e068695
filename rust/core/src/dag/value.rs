//! Payload values: a JSON tree that keeps key insertion order, like a Python dict does.

use rustc_hash::{FxHashMap, FxHashSet};

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

    /// True when the tree holds at least `n` values (itself included); stops counting once it knows.
    /// The bindings use it to decide whether a call is long enough to be worth releasing the GIL.
    pub fn has_at_least(&self, n: usize) -> bool {
        fn count(v: &Value, budget: &mut usize) {
            *budget = budget.saturating_sub(1);
            match v {
                Value::Array(items) => {
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
    /// O(|self| + |other|) per level: a merge of tens of thousands of keys must not be quadratic.
    pub fn deep_merge(&mut self, other: &Value) {
        match (self, other) {
            (Value::Object(m), Value::Object(om)) => {
                merge_maps(m, om, |slot, ov| slot.deep_merge(ov))
            }
            (this, _) => *this = other.clone(),
        }
    }

    /// Top-level keys of `other` replace those of `self`; O(|self| + |other|).
    pub fn shallow_merge(&mut self, other: &Value) {
        if let Value::Object(om) = other {
            if !matches!(self, Value::Object(_)) {
                *self = Value::empty_object();
            }
            if let Value::Object(m) = self {
                merge_maps(m, om, |slot, ov| *slot = ov.clone());
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

/// Merges `other` into `m` in one pass: keys present in both go through `update` (in place, so they keep
/// their position), new keys are appended in `other`'s order, like `dict.update`.
fn merge_maps(m: &mut Map, other: &Map, mut update: impl FnMut(&mut Value, &Value)) {
    if m.len() <= SMALL && other.len() <= SMALL {
        for (k, ov) in other {
            match m.iter_mut().find(|(key, _)| key == k) {
                Some(slot) => update(&mut slot.1, ov),
                None => m.push((k.clone(), ov.clone())),
            }
        }
        return;
    }
    // Which entry of `other` (by position) lands on which existing slot; computed before any write.
    let (hits, fresh): (Vec<(usize, usize)>, Vec<usize>) = {
        let mine = position_of(m);
        let mut hits = Vec::new();
        let mut fresh = Vec::new();
        let mut appended: FxHashSet<&str> = FxHashSet::default();
        for (j, (k, _)) in other.iter().enumerate() {
            match mine.get(k.as_str()) {
                Some(&i) => hits.push((i, j)),
                None => {
                    if appended.insert(k.as_str()) {
                        fresh.push(j);
                    } else {
                        // A duplicate key inside `other`: the later value updates the appended one.
                        hits.push((usize::MAX, j));
                    }
                }
            }
        }
        (hits, fresh)
    };
    let base = m.len();
    let mut fresh_slot: FxHashMap<&str, usize> = FxHashMap::default();
    for (n, &j) in fresh.iter().enumerate() {
        fresh_slot.insert(other[j].0.as_str(), base + n);
    }
    m.reserve(fresh.len());
    for &j in &fresh {
        m.push((other[j].0.clone(), other[j].1.clone()));
    }
    for (i, j) in hits {
        let i = if i == usize::MAX {
            fresh_slot[other[j].0.as_str()]
        } else {
            i
        };
        update(&mut m[i].1, &other[j].1);
    }
}

/// Collapses duplicate keys the way `json.loads` does (the last value wins, at the first key's position),
/// in O(n).
pub(crate) fn dedup_keys(pairs: Map) -> Map {
    if pairs.len() < 2 {
        return pairs;
    }
    let first: Vec<usize> = {
        let index = position_of(&pairs);
        pairs.iter().map(|(k, _)| index[k.as_str()]).collect()
    };
    if first.iter().enumerate().all(|(i, &f)| i == f) {
        return pairs;
    }
    let mut out: Map = Vec::with_capacity(pairs.len());
    let mut slot = vec![usize::MAX; pairs.len()];
    for (i, (k, v)) in pairs.into_iter().enumerate() {
        if first[i] == i {
            slot[i] = out.len();
            out.push((k, v));
        } else {
            out[slot[first[i]]].1 = v;
        }
    }
    out
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

    fn numbered(prefix: &str, range: std::ops::Range<i64>) -> Map {
        range
            .map(|i| (format!("{prefix}{i}"), Value::Int(i)))
            .collect()
    }

    #[test]
    fn large_merges_keep_dict_update_order_and_semantics() {
        // Above the linear-scan size: the hashed path must give exactly what dict.update gives.
        let mut base = Value::Object(numbered("k", 0..100));
        let mut other = numbered("k", 50..150);
        other.push(("k120".into(), Value::Str("last wins".into())));
        other.push(("k3".into(), obj(&[("deep", Value::Int(1))])));
        base.shallow_merge(&Value::Object(other.clone()));
        let m = base.as_object().unwrap();
        assert_eq!(m.len(), 150);
        let keys: Vec<&str> = m.iter().map(|(k, _)| k.as_str()).collect();
        let want: Vec<String> = (0..150).map(|i| format!("k{i}")).collect();
        assert_eq!(keys, want.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(base.get("k120"), Some(&Value::Str("last wins".into())));
        assert_eq!(base.get("k3"), Some(&obj(&[("deep", Value::Int(1))])));

        let mut deep = Value::Object(numbered("k", 0..100));
        deep.set("nested", Value::Object(numbered("n", 0..20)));
        let mut patch = numbered("k", 90..110);
        patch.push(("nested".into(), Value::Object(numbered("n", 10..30))));
        deep.deep_merge(&Value::Object(patch));
        assert_eq!(deep.as_object().unwrap().len(), 111);
        let nested = deep.get("nested").unwrap().as_object().unwrap();
        assert_eq!(nested.len(), 30);
        assert_eq!(nested[29], ("n29".into(), Value::Int(29)));
    }

    #[test]
    fn duplicate_keys_collapse_like_json_loads() {
        let pairs: Map = vec![
            ("a".into(), Value::Int(1)),
            ("b".into(), Value::Int(2)),
            ("a".into(), Value::Int(3)),
        ];
        assert_eq!(
            dedup_keys(pairs),
            vec![("a".into(), Value::Int(3)), ("b".into(), Value::Int(2))]
        );
        let unique = numbered("k", 0..50);
        assert_eq!(dedup_keys(unique.clone()), unique);
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
