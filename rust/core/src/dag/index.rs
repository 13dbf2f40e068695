//! Id → arena position, for node ids and for edge ids (docs/dag.md "Ids and indexes").
//!
//! The ids a graph generates are UUIDv7s that come out in creation order (`ids.rs`), and a UUID written as
//! lowercase 8-4-4-4-12 hex orders like its 128-bit value. So such ids are kept as values in one ascending
//! vector, appended as they are made and searched from the newest end (a build looks up what it just made):
//! no hashing, no map to grow, 16 bytes an id. Every other id — one a caller gave, or a UUID that does not
//! sort after the newest (a graph extended on a host whose clock is behind the one that made it) — goes to a
//! side map keyed by its text.

use crate::ids::Id;

use rustc_hash::FxHashMap;

use super::growth::PushWide;
use crate::ids::parse_uuid;

/// Public for the benches' build floor (`_BuildFloor`), which indexes its ids with this very index.
#[derive(Default)]
pub struct IdIndex {
    /// Ids that are canonical UUID text, as values, ascending.
    keys: Vec<u128>,
    /// The arena position of `keys[i]`; none while that is `i` for every key (a graph whose ids are all
    /// generated: 4 bytes an id saved), filled in when an id first lands elsewhere.
    slots: Option<Vec<u32>>,
    /// Every other id.
    others: FxHashMap<Id, u32>,
}

impl IdIndex {
    pub fn len(&self) -> usize {
        self.keys.len() + self.others.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn reserve(&mut self, n: usize) {
        self.keys.reserve(n);
    }

    #[inline]
    fn slot(&self, i: usize) -> u32 {
        self.slots.as_ref().map_or(i as u32, |slots| slots[i])
    }

    pub fn get(&self, id: &str) -> Option<u32> {
        if let Some(found) = parse_uuid(id).and_then(|key| self.find(key)) {
            return Some(found);
        }
        if self.others.is_empty() {
            return None;
        }
        self.others.get(id).copied()
    }

    pub fn contains(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    /// How many ids the side map holds (the rest are served from the ordered vector).
    #[cfg(test)]
    pub fn side_len(&self) -> usize {
        self.others.len()
    }

    /// Indexes a new id (the caller has checked it is not there yet).
    #[cfg(test)]
    pub fn insert(&mut self, id: &Id, slot: u32) {
        self.insert_keyed(id, parse_uuid(id), slot);
    }

    /// [`IdIndex::insert`] of an id whose value is known (`key`: what `parse_uuid` reads from `id`; the graph
    /// knows it for the ids it mints).
    pub fn insert_keyed(&mut self, id: &Id, key: Option<u128>, slot: u32) {
        debug_assert_eq!(key, parse_uuid(id));
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

    /// Forgets an id; a rollback forgets ids newest first, so an ordered one is always the last.
    pub fn remove(&mut self, id: &str) {
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
        let mut hi = keys.len();
        let mut step = 1;
        // keys[hi..] are all greater than `key`.
        let lo = loop {
            if hi == 0 {
                return None;
            }
            let i = hi.saturating_sub(step);
            if keys[i] <= key {
                break i;
            }
            hi = i;
            step *= 2;
        };
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

    #[test]
    fn generated_ids_are_kept_in_order_without_the_map() {
        let mut index = IdIndex::default();
        let ids: Vec<Id> = (0..1_000).map(|_| uuid7_id()).collect();
        for (slot, id) in ids.iter().enumerate() {
            index.insert(id, slot as u32);
        }
        assert!(index.others.is_empty() && index.slots.is_none());
        assert_eq!(index.len(), 1_000);
        for (slot, id) in ids.iter().enumerate() {
            assert_eq!(index.get(id), Some(slot as u32), "{id}");
        }
        assert_eq!(index.get(&uuid7()), None);
        assert_eq!(index.get("0"), None);
        // Between two indexed values, before the first, after the last.
        let first = parse_uuid(&ids[0]).unwrap();
        assert_eq!(index.find(first - 1), None);
        assert_eq!(index.find(first + 1), None);
        assert_eq!(index.find(u128::MAX), None);
        assert_eq!(IdIndex::default().find(first), None);
    }

    #[test]
    fn caller_ids_and_ids_out_of_order_use_the_side_map() {
        let mut index = IdIndex::default();
        let early = uuid7_id();
        let late = uuid7_id();
        index.insert(&late, 0);
        index.insert(&arc("t1"), 1);
        // A UUID older than the newest (made elsewhere, or by a clock that is behind): found all the same.
        index.insert(&early, 2);
        let upper = Id::from(uuid7().to_uppercase());
        index.insert(&upper, 3);
        assert_eq!(index.others.len(), 3);
        for (id, slot) in [(&late, 0), (&arc("t1"), 1), (&early, 2), (&upper, 3)] {
            assert_eq!(index.get(id), Some(slot), "{id}");
            assert!(index.contains(id));
        }
        // The lowercase spelling of a UUID given in capitals is another id.
        assert_eq!(index.get(&upper.to_lowercase()), None);
    }

    #[test]
    fn removing_newest_first_undoes_inserts() {
        let mut index = IdIndex::default();
        let kept = uuid7_id();
        index.insert(&kept, 0);
        let added = [
            uuid7_id(),
            arc("x"),
            uuid7_id(),
            Id::from(kept.to_uppercase()),
        ];
        for (i, id) in added.iter().enumerate() {
            index.insert(id, i as u32 + 1);
        }
        for id in added.iter().rev() {
            index.remove(id);
            assert_eq!(index.get(id), None);
        }
        assert_eq!((index.len(), index.get(&kept)), (1, Some(0)));
        // The order continues from what is left.
        let next = uuid7_id();
        index.insert(&next, 1);
        assert!(index.others.is_empty());
        assert_eq!(index.get(&next), Some(1));
    }

    #[test]
    fn positions_are_held_once_they_differ_from_the_order() {
        let mut index = IdIndex::default();
        index.insert(&arc("given"), 0);
        let ids: Vec<Id> = (0..3).map(|_| uuid7_id()).collect();
        for (i, id) in ids.iter().enumerate() {
            index.insert(id, i as u32 + 1);
        }
        assert_eq!(index.slots.as_deref(), Some(&[1, 2, 3][..]));
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(index.get(id), Some(i as u32 + 1));
        }
        for id in ids.iter().rev() {
            index.remove(id);
        }
        assert!(index.keys.is_empty() && index.slots.as_ref().is_some_and(Vec::is_empty));
        assert_eq!(index.get("given"), Some(0));
    }

    #[test]
    fn search_finds_every_distance_from_the_end() {
        let mut index = IdIndex::default();
        // Values with gaps, so misses fall between keys.
        for i in 0..5_000u32 {
            index.keys.push(u128::from(i) * 3 + 7);
        }
        // Positions as the keys' order, then each one further on (held once one differs).
        for shift in [0, 10] {
            if shift > 0 {
                index.slots = Some((0..5_000u32).map(|i| i + shift).collect());
            }
            for i in 0..5_000u32 {
                let key = u128::from(i) * 3 + 7;
                assert_eq!(index.find(key), Some(i + shift));
                assert_eq!(index.find(key + 1), None);
            }
            assert_eq!(index.find(0), None);
        }
    }
}
