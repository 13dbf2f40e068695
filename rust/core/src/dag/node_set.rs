//! A set of nodes read in id order: the ready, doomed, leaf, bad-leaf and running sets (`derived.rs`).
//!
//! While every id sorts after the ids made before it (`Dag::ids_in_order`: always, with generated ids),
//! arena order is id order and the set is a bit per arena position: adding or removing a node is one bit,
//! where a tree of id strings took a few hundred instructions of string comparisons (a quarter of building
//! a fan-out). A graph whose ids are not in that order (ids a caller chose) holds its sets by id text
//! instead; the graph switches every set between the two forms when its order changes (docs/dag.md "Ids and
//! indexes").

use crate::ids::Id;
use std::collections::BTreeMap;

use super::arena::Node;
use super::chunks::Chunks;

/// The sets the bookkeeping keeps (`derived.rs`), in the order of the bits of `Node::in_sets`.
#[derive(Default)]
pub(crate) struct Sets {
    pub ready: NodeSet,
    pub doomed: NodeSet,
    pub leaves: NodeSet,
    pub bad_leaves: NodeSet,
    pub running: NodeSet,
}

impl Sets {
    pub fn all(&self) -> [&NodeSet; 5] {
        [
            &self.ready,
            &self.doomed,
            &self.leaves,
            &self.bad_leaves,
            &self.running,
        ]
    }

    /// The set of bit `bit` of `Node::in_sets`.
    #[inline]
    pub fn by_bit(&mut self, bit: u32) -> &mut NodeSet {
        match bit {
            0 => &mut self.ready,
            1 => &mut self.doomed,
            2 => &mut self.leaves,
            3 => &mut self.bad_leaves,
            _ => &mut self.running,
        }
    }

    /// Node `n` moves in or out of the sets of the `changed` bits, as `want` has them.
    #[inline]
    pub fn apply(&mut self, n: u32, id: &Id, want: u8, changed: u8) {
        let mut rest = changed;
        while rest != 0 {
            let bit = rest.trailing_zeros();
            rest &= rest - 1;
            let set = self.by_bit(bit);
            if want & (1 << bit) != 0 {
                set.insert(n, id);
            } else {
                set.remove(n, id);
            }
        }
    }

    pub fn all_mut(&mut self) -> [&mut NodeSet; 5] {
        [
            &mut self.ready,
            &mut self.doomed,
            &mut self.leaves,
            &mut self.bad_leaves,
            &mut self.running,
        ]
    }
}

pub(crate) enum NodeSet {
    Arena(Bits),
    Ids(BTreeMap<Id, u32>),
}

// Out of line: a set keyed by id is the rare case (ids out of order), and inlined its tree code made the
// common path's frame large (docs/dag.md "Memory").
#[cold]
#[inline(never)]
fn insert_by_id(map: &mut BTreeMap<Id, u32>, id: &Id, n: u32) {
    map.insert(id.clone(), n);
}

#[cold]
#[inline(never)]
fn remove_by_id(map: &mut BTreeMap<Id, u32>, id: &Id) {
    map.remove(&**id);
}

impl Default for NodeSet {
    fn default() -> Self {
        NodeSet::Arena(Bits::default())
    }
}

/// Arena positions as bits, read in ascending order from the lowest word that may hold one: reading a set
/// costs the span between its smallest and largest members (a 64th of it) plus its size, and the members
/// of these sets sit together (the newest nodes, the front of a queue).
#[derive(Default)]
pub(crate) struct Bits {
    words: Vec<u64>,
    len: usize,
    /// Every word below this one is zero.
    first: usize,
}

impl Bits {
    #[inline]
    fn insert(&mut self, n: u32) {
        let (w, bit) = (n as usize / 64, 1u64 << (n % 64));
        if w >= self.words.len() {
            self.grow(w);
        }
        if self.words[w] & bit == 0 {
            self.words[w] |= bit;
            self.len += 1;
            if self.len == 1 || w < self.first {
                self.first = w;
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn grow(&mut self, w: usize) {
        self.words.resize(w + 1, 0);
    }

    #[inline]
    fn remove(&mut self, n: u32) {
        let (w, bit) = (n as usize / 64, 1u64 << (n % 64));
        let Some(word) = self.words.get_mut(w) else {
            return;
        };
        if *word & bit != 0 {
            *word &= !bit;
            self.len -= 1;
            if self.len == 0 {
                self.first = 0;
            } else {
                while self.words[self.first] == 0 {
                    self.first += 1;
                }
            }
        }
    }

    fn contains(&self, n: u32) -> bool {
        self.words
            .get(n as usize / 64)
            .is_some_and(|w| w & (1u64 << (n % 64)) != 0)
    }

    fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let words = if self.len == 0 {
            &[][..]
        } else {
            &self.words[self.first..]
        };
        words.iter().enumerate().flat_map(move |(i, &word)| {
            let base = ((self.first + i) * 64) as u32;
            let mut rest = word;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let bit = rest.trailing_zeros();
                    rest &= rest - 1;
                    base + bit
                })
            })
        })
    }
}

impl NodeSet {
    #[inline]
    pub fn insert(&mut self, n: u32, id: &Id) {
        match self {
            NodeSet::Arena(bits) => bits.insert(n),
            NodeSet::Ids(map) => insert_by_id(map, id, n),
        }
    }

    #[inline]
    pub fn remove(&mut self, n: u32, id: &Id) {
        match self {
            NodeSet::Arena(bits) => bits.remove(n),
            NodeSet::Ids(map) => remove_by_id(map, id),
        }
    }

    pub fn contains(&self, n: u32, id: &str) -> bool {
        match self {
            NodeSet::Arena(bits) => bits.contains(n),
            NodeSet::Ids(map) => map.get(id) == Some(&n),
        }
    }

    pub fn len(&self) -> usize {
        match self {
            NodeSet::Arena(bits) => bits.len,
            NodeSet::Ids(map) => map.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Arena positions, smallest id first.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (arena, ids) = match self {
            NodeSet::Arena(bits) => (Some(bits.iter()), None),
            NodeSet::Ids(map) => (None, Some(map.values().copied())),
        };
        arena.into_iter().flatten().chain(ids.into_iter().flatten())
    }

    /// Holds the same nodes in the form that gives id order: by arena position when `ids_in_order`, else
    /// by id text.
    pub fn reorder(&mut self, ids_in_order: bool, nodes: &Chunks<Node>) {
        *self = match (std::mem::take(self), ids_in_order) {
            (NodeSet::Ids(map), true) => {
                let mut bits = Bits::default();
                map.into_values().for_each(|n| bits.insert(n));
                NodeSet::Arena(bits)
            }
            (NodeSet::Arena(bits), false) => NodeSet::Ids(
                bits.iter()
                    .map(|n| (nodes[n as usize].id.clone(), n))
                    .collect(),
            ),
            (same, _) => same,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{NodeType, State, Value};
    use std::collections::BTreeSet;

    /// The bits against a tree set, through inserts and removals that move the lowest member both ways.
    #[test]
    fn bits_read_like_a_sorted_set() {
        let mut bits = Bits::default();
        let mut want = BTreeSet::new();
        let mut state = 7u64;
        for step in 0..20_000u32 {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            let n = ((state >> 33) % 700) as u32;
            if step % 3 == 0 {
                bits.remove(n);
                want.remove(&n);
            } else {
                bits.insert(n);
                want.insert(n);
            }
            if step % 97 == 0 {
                assert_eq!(
                    bits.iter().collect::<Vec<_>>(),
                    want.iter().copied().collect::<Vec<_>>()
                );
                assert_eq!(bits.len, want.len());
                assert!((0..700).all(|n| bits.contains(n) == want.contains(&n)));
            }
        }
        for n in 0..700 {
            bits.remove(n);
        }
        assert_eq!(
            (bits.len, bits.iter().count(), bits.contains(3)),
            (0, 0, false)
        );
        bits.remove(10_000);
        bits.insert(130);
        assert_eq!(bits.iter().collect::<Vec<_>>(), [130]);
    }

    fn node(id: &str) -> Node {
        let empty = || Value::empty_object();
        Node::bare(
            crate::ids::Id::from(id),
            NodeType::Task,
            State::Pending,
            [empty(), empty(), empty()],
            0.0,
        )
    }

    #[test]
    fn both_forms_read_in_id_order_and_convert_back_and_forth() {
        let nodes: Chunks<Node> = ["b", "d", "a", "c"].into_iter().map(node).collect();
        let mut set = NodeSet::default();
        for n in [3, 0, 1] {
            set.insert(n, &nodes[n as usize].id);
        }
        // Arena order while the ids were in order.
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 3]);
        set.reorder(false, &nodes);
        assert!(matches!(set, NodeSet::Ids(_)));
        // "b", "c", "d".
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 3, 1]);
        set.insert(2, &nodes[2].id);
        assert_eq!(set.iter().collect::<Vec<_>>(), [2, 0, 3, 1]);
        assert!(set.contains(2, "a") && !set.contains(1, "a"));
        set.remove(3, &nodes[3].id);
        assert_eq!((set.len(), set.is_empty()), (3, false));
        set.reorder(true, &nodes);
        assert!(matches!(set, NodeSet::Arena(_)));
        assert_eq!(set.iter().collect::<Vec<_>>(), [0, 1, 2]);
        assert!(set.contains(2, "a"));
        for n in [0, 1, 2] {
            set.remove(n, &Id::from(""));
        }
        assert!(set.is_empty());
    }
}
