//! A pull reader over the one strict reader (`read.rs`), for callers that map a fixed record layout straight
//! onto their own structs (the DAG's `from_json` and its stored rows) instead of building a tree and picking
//! it apart: no map per record, strings borrowed from the input where they have no escape. Same strictness,
//! depth limit and error texts as [`super::read`]; a repeated key is simply read again, so the caller that
//! assigns on every occurrence keeps the last value, like `json.loads` (docs/design.md §23).

use std::borrow::Cow;

use smallvec::SmallVec;

use super::read::{Reader, MAX_READ_DEPTH};
use crate::value::Value;

/// The most keys [`Pull::item_flat`] reads as [`Flat::Pairs`].
pub const FLAT_PAIRS: usize = 4;

/// A small object of strings, its keys unique, in order.
pub type Pairs<'a> = SmallVec<[(Cow<'a, str>, Cow<'a, str>); FLAT_PAIRS]>;

/// One value read by [`Pull::item`]: scalars as they are (strings borrowed when possible), arrays and
/// objects as a [`Value`] tree.
#[derive(Debug, PartialEq)]
pub enum Item<'a> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Cow<'a, str>),
    Tree(Value),
}

/// What [`Pull::item_flat`] read: kept apart from [`Item`], which stays small (records hold an array of
/// them).
#[derive(Debug, PartialEq)]
pub enum Flat<'a> {
    Pairs(Pairs<'a>),
    Item(Item<'a>),
}

impl Item<'_> {
    pub fn into_value(self) -> Value {
        match self {
            Item::Null => Value::Null,
            Item::Bool(b) => Value::Bool(b),
            Item::Int(i) => Value::Int(i),
            Item::Float(f) => Value::Float(f),
            Item::Str(s) => Value::Str(s.into_owned()),
            Item::Tree(v) => v,
        }
    }
}

/// Walks one JSON text container by container. The caller opens an object or array, then asks for keys
/// ([`Pull::next_key`]) or elements ([`Pull::next_item`]) until they run out, reading each value with
/// [`Pull::item`] or by opening it in turn; [`Pull::finish`] checks nothing follows the document.
pub struct Pull<'a> {
    r: Reader<'a>,
    depth: usize,
    /// The innermost open container has had no key or element yet (so no comma may come first).
    fresh: bool,
}

impl<'a> Pull<'a> {
    pub fn new(text: &'a str) -> Pull<'a> {
        Pull {
            r: Reader {
                b: text.as_bytes(),
                i: 0,
                utf8: true,
            },
            depth: 0,
            fresh: false,
        }
    }

    /// A reader resuming inside `text` at byte `offset`, `depth` containers deep (a value the caller
    /// skipped and comes back to).
    pub fn resume(text: &'a str, offset: usize, depth: usize) -> Pull<'a> {
        let mut p = Pull::new(text);
        p.r.i = offset.min(text.len());
        p.depth = depth;
        p
    }

    /// Where the reader is: the byte offset and the container depth, for [`Pull::resume`].
    pub fn position(&mut self) -> (usize, usize) {
        self.r.ws();
        (self.r.i, self.depth)
    }

    fn open(&mut self, bracket: u8, what: &str) -> Result<(), String> {
        self.r.ws();
        if self.depth > MAX_READ_DEPTH {
            return self.r.err("nesting too deep");
        }
        if self.r.b.get(self.r.i) != Some(&bracket) {
            return self.r.err(what);
        }
        self.r.i += 1;
        self.depth += 1;
        self.fresh = true;
        Ok(())
    }

    fn close(&mut self) {
        self.r.i += 1;
        self.depth -= 1;
        self.fresh = false;
    }

    pub fn begin_object(&mut self) -> Result<(), String> {
        self.open(b'{', "expected an object")
    }

    pub fn begin_array(&mut self) -> Result<(), String> {
        self.open(b'[', "expected an array")
    }

    /// The next key of the open object (borrowed when it has no escape), positioned at its value; None
    /// once the object is closed.
    pub fn next_key(&mut self) -> Result<Option<Cow<'a, str>>, String> {
        self.r.ws();
        match self.r.b.get(self.r.i) {
            Some(b'}') => {
                self.close();
                return Ok(None);
            }
            Some(b',') if !self.fresh => {
                self.r.i += 1;
                self.r.ws();
            }
            _ if !self.fresh => return self.r.err("expected ',' or '}'"),
            _ => {}
        }
        if self.r.b.get(self.r.i) != Some(&b'"') {
            return self.r.err("expected a string key");
        }
        let key = match self.r.plain_string() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(self.r.string()?),
        };
        self.r.ws();
        if self.r.b.get(self.r.i) != Some(&b':') {
            return self.r.err("expected ':'");
        }
        self.r.i += 1;
        self.fresh = false;
        Ok(Some(key))
    }

    /// Whether the open array has another element (positioned at it); false once the array is closed.
    pub fn next_item(&mut self) -> Result<bool, String> {
        self.r.ws();
        match self.r.b.get(self.r.i) {
            Some(b']') if self.fresh => {
                self.close();
                Ok(false)
            }
            _ if self.fresh => {
                self.fresh = false;
                Ok(true)
            }
            Some(b',') => {
                self.r.i += 1;
                Ok(true)
            }
            Some(b']') => {
                self.close();
                Ok(false)
            }
            _ => self.r.err("expected ',' or ']'"),
        }
    }

    /// The value at the current position, whole.
    pub fn item(&mut self) -> Result<Item<'a>, String> {
        self.r.ws();
        self.fresh = false;
        let item = match self.r.b.get(self.r.i) {
            Some(b'"') => match self.r.plain_string() {
                Some(s) => Item::Str(Cow::Borrowed(s)),
                None => Item::Str(Cow::Owned(self.r.string()?)),
            },
            Some(b'-' | b'0'..=b'9') => match self.r.number::<Value>()? {
                Value::Int(i) => Item::Int(i),
                Value::Float(f) => Item::Float(f),
                _ => unreachable!("the number reader returns numbers"),
            },
            _ => match self.r.value::<Value>(self.depth)? {
                Value::Null => Item::Null,
                Value::Bool(b) => Item::Bool(b),
                v => Item::Tree(v),
            },
        };
        Ok(item)
    }

    /// As [`Pull::item`], but an object of at most [`FLAT_PAIRS`] distinct keys whose values are all strings
    /// comes back as [`Flat::Pairs`], borrowed from the input: nothing is allocated for a small record a
    /// caller only inspects (an event's particulars). Anything else is read again as `item` reads it.
    pub fn item_flat(&mut self) -> Result<Flat<'a>, String> {
        self.r.ws();
        let start = self.r.i;
        if let Some(pairs) = self.flat_pairs() {
            self.fresh = false;
            return Ok(Flat::Pairs(pairs));
        }
        self.r.i = start;
        self.item().map(Flat::Item)
    }

    /// The object at the current position as pairs, or None (position undefined) if it is not such.
    fn flat_pairs(&mut self) -> Option<Pairs<'a>> {
        if self.r.b.get(self.r.i) != Some(&b'{') {
            return None;
        }
        self.r.i += 1;
        let mut pairs = Pairs::new();
        self.r.ws();
        if self.r.b.get(self.r.i) == Some(&b'}') {
            self.r.i += 1;
            return Some(pairs);
        }
        loop {
            self.r.ws();
            if self.r.b.get(self.r.i) != Some(&b'"') || pairs.len() == FLAT_PAIRS {
                return None;
            }
            let key = self.r.plain_string()?;
            self.r.ws();
            if self.r.b.get(self.r.i) != Some(&b':') {
                return None;
            }
            self.r.i += 1;
            self.r.ws();
            if self.r.b.get(self.r.i) != Some(&b'"') {
                return None;
            }
            let value = self.r.plain_string()?;
            if pairs.iter().any(|(k, _)| k == key) {
                return None; // a repeated key: the tree reader's rule applies
            }
            pairs.push((Cow::Borrowed(key), Cow::Borrowed(value)));
            self.r.ws();
            match self.r.b.get(self.r.i) {
                Some(b',') => self.r.i += 1,
                Some(b'}') => {
                    self.r.i += 1;
                    return Some(pairs);
                }
                _ => return None,
            }
        }
    }

    /// Checks that only whitespace follows the document.
    pub fn finish(mut self) -> Result<(), String> {
        self.r.ws();
        if self.r.i != self.r.b.len() {
            return self.r.err("trailing data");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pulled document, rebuilt as a tree (objects and arrays opened one level deep).
    fn pull_all(text: &str) -> Result<Vec<(String, Item<'_>)>, String> {
        let mut p = Pull::new(text);
        p.begin_object()?;
        let mut out = Vec::new();
        while let Some(k) = p.next_key()? {
            if k == "list" {
                p.begin_array()?;
                while p.next_item()? {
                    out.push((k.to_string(), p.item()?));
                }
            } else {
                out.push((k.into_owned(), p.item()?));
            }
        }
        p.finish()?;
        Ok(out)
    }

    #[test]
    fn pulls_what_the_tree_reader_reads() {
        let got = pull_all(
            r#" {"a": "x\"y", "b": -1.5e2, "list": [1, "two", null, {"k": [true]}], "a": 7, "e\u00e9": {}} "#,
        )
        .unwrap();
        assert_eq!(got[0], ("a".into(), Item::Str("x\"y".into())));
        assert_eq!(got[1], ("b".into(), Item::Float(-150.0)));
        assert_eq!(got[2], ("list".into(), Item::Int(1)));
        assert_eq!(got[4], ("list".into(), Item::Null));
        let tree = crate::json::parse(r#"{"k": [true]}"#).unwrap();
        assert_eq!(got[5], ("list".into(), Item::Tree(tree)));
        assert_eq!(
            got[6],
            ("a".into(), Item::Int(7)),
            "a repeated key is read again"
        );
        assert_eq!(got[7], ("eé".into(), Item::Tree(Value::Object(vec![]))));
        assert!(
            matches!(&got[0].1, Item::Str(Cow::Owned(_))),
            "escaped: owned"
        );
        let plain = pull_all(r#"{"s": "plain text"}"#).unwrap();
        assert!(matches!(
            &plain[0].1,
            Item::Str(Cow::Borrowed("plain text"))
        ));
    }

    #[test]
    fn small_string_objects_come_flat_and_anything_else_as_a_tree() {
        fn flat(text: &str) -> Flat<'_> {
            let mut p = Pull::new(text);
            let item = p.item_flat().unwrap();
            p.finish().unwrap();
            item
        }
        let Flat::Pairs(pairs) = flat(r#" {"a": "x", "b" : "y"} "#) else {
            panic!("flat")
        };
        assert_eq!(
            &*pairs,
            &[("a".into(), "x".into()), ("b".into(), "y".into())]
        );
        assert!(matches!(&pairs[0].1, Cow::Borrowed(_)));
        assert_eq!(flat("{}"), Flat::Pairs(Pairs::new()));
        for tree in [
            r#"{"a": 1}"#,
            r#"{"a": "x\n"}"#,
            r#"{"a": "x", "a": "y"}"#,
            r#"{"a": "1", "b": "2", "c": "3", "d": "4", "e": "5"}"#,
            r#"{"a": {"b": "c"}}"#,
        ] {
            let want = crate::json::parse(tree).unwrap();
            assert_eq!(flat(tree), Flat::Item(Item::Tree(want)), "{tree}");
        }
        assert_eq!(flat(r#""s""#), Flat::Item(Item::Str("s".into())));
        let mut bad = Pull::new(r#"{"a": "x""#);
        assert!(
            bad.item_flat().is_err(),
            "an unterminated object is still an error"
        );
    }

    #[test]
    fn is_as_strict_as_the_tree_reader() {
        for bad in [
            "",
            "[]",
            "{",
            "{,\"a\":1}",
            "{\"a\":1,}",
            "{\"a\":1 \"b\":2}",
            "{\"a\" 1}",
            "{a:1}",
            "{\"list\":[1,]}",
            "{\"list\":[,1]}",
            "{\"list\":[1 2]}",
            "{\"a\":NaN}",
            "{\"a\":01}",
            "{\"a\":\"\\ud800\"}",
            "{\"a\":1} x",
            "{\"a\":9223372036854775808}",
        ] {
            assert!(pull_all(bad).is_err(), "{bad:?} must be rejected");
        }
        let deep = format!(
            "{{\"a\":{}{}}}",
            "[".repeat(MAX_READ_DEPTH + 2),
            "]".repeat(MAX_READ_DEPTH + 2)
        );
        assert!(pull_all(&deep).unwrap_err().contains("too deep"));
        assert_eq!(
            pull_all("{\"list\":[]}").unwrap(),
            Vec::<(String, Item<'_>)>::new()
        );
    }
}
