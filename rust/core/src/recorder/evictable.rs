//! The terminal nodes `max_nodes` may evict, oldest (lowest id) first (docs/recorder.md
//! "Bounded memory: `max_nodes`").
//!
//! Ids are minted in creation order and calls mostly end in that order too, so a node almost
//! always ends after every node already queued: it joins the back of an ascending queue, and the
//! oldest is its front. A call that ends after a younger one (a parent after its children, a
//! slow call among fast ones) goes to a heap of late ones instead. The oldest is the lower of the
//! two fronts. A full chain evicts once per new call; a single heap of `max_nodes` ids (100,000
//! by default) cost a sift through ~17 levels of cold memory on every eviction, the queue costs
//! one read at each end.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use crate::ids::NodeId;

#[derive(Default)]
pub struct Evictable {
    /// Strictly ascending.
    in_order: VecDeque<NodeId>,
    /// The ones that ended after a younger node was queued.
    late: BinaryHeap<Reverse<NodeId>>,
}

impl Evictable {
    pub fn push(&mut self, id: NodeId) {
        match self.in_order.back() {
            Some(&last) if id <= last => self.late.push(Reverse(id)),
            _ => self.in_order.push_back(id),
        }
    }

    /// The oldest queued id, removed.
    pub fn pop(&mut self) -> Option<NodeId> {
        match (self.in_order.front(), self.late.peek()) {
            (Some(&a), Some(&Reverse(b))) if b < a => self.late.pop().map(|Reverse(id)| id),
            (Some(_), _) => self.in_order.pop_front(),
            (None, _) => self.late.pop().map(|Reverse(id)| id),
        }
    }
}

impl Extend<NodeId> for Evictable {
    fn extend<I: IntoIterator<Item = NodeId>>(&mut self, ids: I) {
        for id in ids {
            self.push(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(q: &mut Evictable) -> Vec<NodeId> {
        std::iter::from_fn(|| q.pop()).collect()
    }

    #[test]
    fn pops_oldest_first_whatever_order_ids_come_in() {
        // Permutations of 0..199 (a step coprime to the prime 199), and the two sorted orders.
        let orders: Vec<Vec<NodeId>> = [1u64, 7, 13, 101, 198]
            .iter()
            .map(|step| (0..199u64).map(|i| (i * step) % 199).collect())
            .chain([(0..199).collect(), (0..199).rev().collect()])
            .collect();
        for order in orders {
            let mut q = Evictable::default();
            q.extend(order.iter().copied());
            assert_eq!(drain(&mut q), (0..199).collect::<Vec<_>>(), "{order:?}");
            assert_eq!(q.pop(), None);
        }
    }

    #[test]
    fn pushes_between_pops_keep_the_order() {
        let mut q = Evictable::default();
        q.extend([3, 5, 9]);
        assert_eq!(q.pop(), Some(3));
        q.push(4); // a parent ending after its children
        q.push(12);
        q.push(1);
        assert_eq!(drain(&mut q), vec![1, 4, 5, 9, 12]);
        assert_eq!(q.pop(), None);
        q.push(2); // empty again: any id starts the queue
        assert_eq!(q.pop(), Some(2));
    }
}
