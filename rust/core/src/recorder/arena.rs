//! Node storage indexed by id. Ids are dense and increasing, so a deque offset by the
//! oldest live id gives O(1) lookup, and pruned nodes at the front release their memory.

use std::collections::VecDeque;

use super::ids::NodeId;
use super::node::Node;

pub struct Arena {
    slots: VecDeque<Node>,
    /// Id held by `slots[0]`.
    base: NodeId,
    live: usize,
}

impl Default for Arena {
    fn default() -> Self {
        Arena {
            slots: VecDeque::new(),
            base: 1,
            live: 0,
        }
    }
}

impl Arena {
    pub fn push(&mut self, node: Node) {
        debug_assert_eq!(node.id, self.base + self.slots.len() as NodeId);
        self.slots.push_back(node);
        self.live += 1;
    }

    fn index(&self, id: NodeId) -> Option<usize> {
        let i = id.checked_sub(self.base)? as usize;
        (i < self.slots.len()).then_some(i)
    }

    pub fn get(&self, id: NodeId) -> Option<&Node> {
        self.index(id).map(|i| &self.slots[i]).filter(|n| !n.pruned)
    }

    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        let i = self.index(id)?;
        Some(&mut self.slots[i]).filter(|n| !n.pruned)
    }

    /// Evicts a node. Its slot is reclaimed once every older slot is gone too.
    pub fn prune(&mut self, id: NodeId) {
        if let Some(node) = self.get_mut(id) {
            node.pruned = true;
            node.metadata = None;
            node.stop_reason = None;
            self.live -= 1;
        }
        while self.slots.front().is_some_and(|n| n.pruned) {
            self.slots.pop_front();
            self.base += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.live
    }

    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Live nodes in creation order.
    pub fn iter(&self) -> impl Iterator<Item = &Node> {
        self.slots.iter().filter(|n| !n.pruned)
    }
}
