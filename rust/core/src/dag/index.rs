//! Id → arena position, for node ids and for edge ids (docs/dag.md "Ids and indexes").
//!
//! The ids a graph generates are UUIDv7s that come out in creation order (`ids.rs`), and a UUID written as
//! lowercase 8-4-4-4-12 hex orders like its 128-bit value. While every id of an arena is such a UUID, greater
//! than the one before it, the arena's own rows are sorted by id: the index keeps nothing but their count and
//! searches the rows' text, the newest first (a build looks up what it just made). The first id that breaks
//! that — one a caller gave, or a UUID that does not sort after the newest (a graph extended on a host whose
//! clock is behind the one that made it) — turns the index into values: the ordered ids' 128-bit values in one
//! ascending vector, and every other id in a side map keyed by its text.

use crate::ids::Id;
use rustc_hash::FxHashMap;

use super::growth::PushWide;
use crate::ids::parse_uuid;

/// An arena's ids by position: what the index searches while it keeps no values of its own.
pub trait IdRows {
    fn id_at(&self, i: u32) -> &Id;
}

impl IdRows for [Id] {
    fn id_at(&self, i: u32) -> &Id {
        &self[i as usize]
    }
}

/// Public for the benches' build floor (`_BuildFloor`), which indexes its ids with this very index.
#[derive(Default)]
pub struct IdIndex {
    /// None while the rows are the index: every id canonical UUID text greater than the one before it, each at
    /// its own position (a graph whose ids are all generated: 16 bytes an id saved).
    keyed: Option<Box<Keyed>>,
    /// How many rows are indexed, while `keyed` is None.
    rows: u32,
    /// The value of the newest row's id, while `keyed` is None and it is known (not after a removal): a new
    /// id is checked against it instead of against the row's text.
    newest: Option<u128>,
}

/// The index once the rows alone no longer serve.
#[derive(Default)]
struct Keyed {
    /// Ids that are canonical UUID text, as values, ascending.
    keys: Vec<u128>,
    /// The arena position of `keys[i]`; none while that is `i` for every key, filled in when an id first
    /// lands elsewhere.
    slots: Option<Vec<u32>>,
    /// Every other id.
    others: FxHashMap<Id, u32>,
}

impl IdIndex {
    pub fn len(&self) -> usize {
        self.keyed
            .as_ref()
            .map_or(self.rows as usize, |k| k.keys.len() + k.others.len())
    }

    /// The value of the newest indexed id, when the index knows it without reading a row.
    pub fn newest(&self) -> Option<u128> {
        self.newest
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reserve(&mut self, n: usize) {
        if let Some(k) = &mut self.keyed {
            k.keys.reserve(n);
        }
    }

    pub fn get<R: IdRows + ?Sized>(&self, id: &str, rows: &R) -> Option<u32> {
        match &self.keyed {
            None => self.find_row(id, rows),
            Some(k) => k.get(id),
        }
    }

    pub fn contains<R: IdRows + ?Sized>(&self, id: &str, rows: &R) -> bool {
        self.get(id, rows).is_some()
    }

    /// How many ids the side map holds (the rest are served in order).
    #[cfg(test)]
    pub fn side_len(&self) -> usize {
        self.keyed.as_ref().map_or(0, |k| k.others.len())
    }

    /// Whether the rows are the index (no values kept).
    #[cfg(test)]
    pub fn by_rows(&self) -> bool {
        self.keyed.is_none()
    }

    /// Indexes the id of row `slot` before that row is appended to `rows` (the caller has checked the id is
    /// not there yet). `key` is what `parse_uuid` reads from `id`; the graph knows it for the ids it mints.
    pub fn insert_keyed<R: IdRows + ?Sized>(
        &mut self,
        id: &Id,
        key: Option<u128>,
        slot: u32,
        rows: &R,
    ) {
        debug_assert_eq!(key, parse_uuid(id));
        if self.keyed.is_none() {
            let after_newest = |key: u128| match (self.rows, self.newest) {
                (0, _) => true,
                (_, Some(newest)) => newest < key,
                (n, None) => **rows.id_at(n - 1) < **id,
            };
            if slot == self.rows && key.is_some_and(after_newest) {
                self.rows += 1;
                self.newest = key;
                return;
            }
            self.keyed = Some(Box::new(self.values_of(rows)));
            self.newest = None;
        }
        if let Some(k) = &mut self.keyed {
            k.insert_keyed(id, key, slot);
        }
    }

    /// The indexed rows as values: a rebuild, once, when the first id breaks the rows' order.
    fn values_of<R: IdRows + ?Sized>(&self, rows: &R) -> Keyed {
        let mut k = Keyed::default();
        k.keys.reserve(self.rows as usize);
        for i in 0..self.rows {
            let id = rows.id_at(i);
            k.insert_keyed(id, parse_uuid(id), i);
        }
        k
    }

    /// Forgets an id; a rollback forgets ids newest first, so while the rows are the index it is the last.
    pub fn remove(&mut self, id: &str) {
        match &mut self.keyed {
            None => {
                self.rows = self.rows.saturating_sub(1);
                self.newest = None;
            }
            Some(k) => k.remove(id),
        }
    }

    /// Searches the rows' text (canonical UUID text orders like the values): the newest `NEAR` rows first
    /// (what a build names next), then the rest by halving. A row read costs a chunk lookup and a text
    /// comparison, so a far id is not galloped to: that doubled the rows read for a random lookup.
    fn find_row<R: IdRows + ?Sized>(&self, id: &str, rows: &R) -> Option<u32> {
        let text = |i: u32| -> &str { rows.id_at(i) };
        let len = self.rows;
        if len == 0 {
            return None;
        }
        // The first id is looked up often too: a root, the hub of a fan-out.
        if id <= text(0) {
            return (id == text(0)).then_some(0);
        }
        // text(lo) <= id, and id < text(hi) or hi is past the end.
        let split = len.saturating_sub(NEAR).max(1);
        let (mut lo, mut hi) = if text(split - 1) <= id {
            (split - 1, len)
        } else {
            (0, split - 1)
        };
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            if text(mid) <= id {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        (text(lo) == id).then_some(lo)
    }
}

/// How many of the newest rows a lookup searches before the rest.
const NEAR: u32 = 64;

/// Steps back from the end in doubling strides to the first position `at_or_below` holds for: the range
/// `[lo, hi)` whose `lo` it holds for and past which it does not. None when it holds nowhere.
fn gallop(len: usize, at_or_below: impl Fn(usize) -> bool) -> Option<(usize, usize)> {
    let mut hi = len;
    let mut step = 1;
    loop {
        if hi == 0 {
            return None;
        }
        let i = hi.saturating_sub(step);
        if at_or_below(i) {
            return Some((i, hi));
        }
        hi = i;
        step *= 2;
    }
}

impl Keyed {
    #[inline]
    fn slot(&self, i: usize) -> u32 {
        self.slots.as_ref().map_or(i as u32, |slots| slots[i])
    }

    fn get(&self, id: &str) -> Option<u32> {
        if let Some(found) = parse_uuid(id).and_then(|key| self.find(key)) {
            return Some(found);
        }
        if self.others.is_empty() {
            return None;
        }
        self.others.get(id).copied()
    }

    fn insert_keyed(&mut self, id: &Id, key: Option<u128>, slot: u32) {
        match key {
            Some(key) if self.keys.last().is_none_or(|&last| last < key) => {
                if self.slots.is_none() && slot as usize != self.keys.len() {
                    self.slots = Some((0..self.keys.len() as u32).collect());
                }
                if let Some(slots) = &mut self.slots {
                    slots.push_wide(slot);
                }
                self.keys.push_wide(key);
            }
            _ => {
                self.others.insert(id.clone(), slot);
            }
        }
    }

    fn remove(&mut self, id: &str) {
        match parse_uuid(id) {
            Some(key) if self.keys.last() == Some(&key) => {
                self.keys.pop();
                if let Some(slots) = &mut self.slots {
                    slots.pop();
                }
            }
            _ => {
                self.others.remove(id);
            }
        }
    }

    /// Gallops back from the newest key, then searches the range it found: O(log d) for a key d places
    /// from the end.
    fn find(&self, key: u128) -> Option<u32> {
        let keys = &self.keys;
        // The first id is looked up often too: a root, the hub of a fan-out.
        match keys.first() {
            Some(&first) if key <= first => return (key == first).then(|| self.slot(0)),
            None => return None,
            _ => {}
        }
        let (lo, hi) = gallop(keys.len(), |i| keys[i] <= key)?;
        keys[lo..hi]
            .binary_search(&key)
            .ok()
            .map(|j| self.slot(lo + j))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::{uuid7, uuid7_id};

    fn arc(s: &str) -> Id {
        Id::from(s)
    }

    /// An index and the rows it indexes, kept in step as the arena keeps them.
    #[derive(Default)]
    struct Arena {
        index: IdIndex,
        rows: Vec<Id>,
    }

    impl Arena {
        fn push(&mut self, id: &Id) {
            let slot = self.rows.len() as u32;
            self.index
                .insert_keyed(id, parse_uuid(id), slot, &self.rows[..]);
            self.rows.push(id.clone());
        }

        fn pop(&mut self) {
            let id = self.rows.pop().unwrap();
            self.index.remove(&id);
        }

        fn get(&self, id: &str) -> Option<u32> {
            self.index.get(id, &self.rows[..])
        }

        fn keyed(&self) -> &Keyed {
            self.index.keyed.as_deref().unwrap()
        }
    }

    #[test]
    fn generated_ids_are_served_by_the_rows() {
        let mut a = Arena::default();
        let ids: Vec<Id> = (0..1_000).map(|_| uuid7_id()).collect();
        for id in &ids {
            a.push(id);
        }
        assert!(a.index.by_rows());
        assert_eq!(a.index.len(), 1_000);
        for (slot, id) in ids.iter().enumerate() {
            assert_eq!(a.get(id), Some(slot as u32), "{id}");
        }
        // Between two ids, before the first, after the last, not a UUID at all.
        assert_eq!(a.get(&uuid7()), None);
        assert_eq!(a.get("0"), None);
        assert_eq!(a.get(""), None);
        assert_eq!(a.get(&ids[0].to_uppercase()), None);
        let mut between = ids[500].to_string();
        between.replace_range(35.., "g");
        assert_eq!(a.get(&between), None);
        assert_eq!(IdIndex::default().get(&ids[0], &[][..]), None);
    }

    #[test]
    fn the_rows_search_finds_every_distance_from_the_end() {
        let mut a = Arena::default();
        let ids: Vec<Id> = (0..3_000).map(|_| uuid7_id()).collect();
        for id in &ids {
            a.push(id);
        }
        for (slot, id) in ids.iter().enumerate() {
            assert_eq!(a.get(id), Some(slot as u32));
            // One past its last digit: after this id, before the next.
            let mut after = id.to_string();
            after.push('0');
            assert_eq!(a.get(&after), None);
        }
    }

    #[test]
    fn caller_ids_and_ids_out_of_order_turn_the_index_into_values() {
        let mut a = Arena::default();
        let early = uuid7_id();
        let late = uuid7_id();
        a.push(&late);
        assert!(a.index.by_rows());
        a.push(&arc("t1"));
        assert!(!a.index.by_rows());
        // A UUID older than the newest (made elsewhere, or by a clock that is behind): found all the same.
        a.push(&early);
        let upper = Id::from(uuid7().to_uppercase());
        a.push(&upper);
        assert_eq!(a.keyed().others.len(), 3);
        for (id, slot) in [(&late, 0), (&arc("t1"), 1), (&early, 2), (&upper, 3)] {
            assert_eq!(a.get(id), Some(slot), "{id}");
            assert!(a.index.contains(id, &a.rows[..]));
        }
        // The lowercase spelling of a UUID given in capitals is another id.
        assert_eq!(a.get(&upper.to_lowercase()), None);
    }

    #[test]
    fn an_out_of_order_id_keeps_every_earlier_row_findable() {
        let mut a = Arena::default();
        let early = uuid7_id();
        let ids: Vec<Id> = (0..100).map(|_| uuid7_id()).collect();
        for id in &ids {
            a.push(id);
        }
        a.push(&early);
        assert!(!a.index.by_rows() && a.keyed().others.len() == 1);
        assert_eq!(a.keyed().keys.len(), 100);
        for (slot, id) in ids.iter().chain([&early]).enumerate() {
            assert_eq!(a.get(id), Some(slot as u32));
        }
        assert_eq!(a.index.len(), 101);
    }

    #[test]
    fn removing_newest_first_undoes_inserts() {
        for keyed in [false, true] {
            let mut a = Arena::default();
            let kept = uuid7_id();
            a.push(&kept);
            let added: Vec<Id> = if keyed {
                vec![
                    uuid7_id(),
                    arc("x"),
                    uuid7_id(),
                    Id::from(kept.to_uppercase()),
                ]
            } else {
                (0..4).map(|_| uuid7_id()).collect()
            };
            for id in &added {
                a.push(id);
            }
            assert_eq!(a.index.by_rows(), !keyed);
            for id in added.iter().rev() {
                a.pop();
                assert_eq!(a.get(id), None);
            }
            assert_eq!((a.index.len(), a.get(&kept)), (1, Some(0)));
            // The order continues from what is left.
            let next = uuid7_id();
            a.push(&next);
            assert_eq!(a.index.side_len(), 0);
            assert_eq!(a.get(&next), Some(1));
        }
    }

    #[test]
    fn positions_are_held_once_they_differ_from_the_order() {
        let mut a = Arena::default();
        a.push(&arc("given"));
        let ids: Vec<Id> = (0..3).map(|_| uuid7_id()).collect();
        for id in &ids {
            a.push(id);
        }
        assert_eq!(a.keyed().slots.as_deref(), Some(&[1, 2, 3][..]));
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(a.get(id), Some(i as u32 + 1));
        }
        for _ in &ids {
            a.pop();
        }
        assert!(a.keyed().keys.is_empty() && a.keyed().slots.as_ref().is_some_and(Vec::is_empty));
        assert_eq!(a.get("given"), Some(0));
    }

    #[test]
    fn search_finds_every_distance_from_the_end() {
        let mut k = Keyed::default();
        // Values with gaps, so misses fall between keys.
        for i in 0..5_000u32 {
            k.keys.push(u128::from(i) * 3 + 7);
        }
        // Positions as the keys' order, then each one further on (held once one differs).
        for shift in [0, 10] {
            if shift > 0 {
                k.slots = Some((0..5_000u32).map(|i| i + shift).collect());
            }
            for i in 0..5_000u32 {
                let key = u128::from(i) * 3 + 7;
                assert_eq!(k.find(key), Some(i + shift));
                assert_eq!(k.find(key + 1), None);
            }
            assert_eq!(k.find(0), None);
        }
        assert_eq!(Keyed::default().find(7), None);
    }
}
