//! Node storage indexed by id. Ids are dense and increasing, so fixed-size chunks offset by
//! the oldest live chunk give O(1) lookup; growth never moves existing nodes, and chunks
//! whose nodes were all pruned are released.

use rustc_hash::FxHashMap;

use super::ids::NodeId;
use super::node::Node;
use crate::value::Value;

/// Fields most nodes never have, kept out of the node itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extras {
    pub stop_reason: Option<Box<str>>,
    pub metadata: Option<Box<Value>>,
}

const CHUNK: usize = 4096;

struct Chunk {
    nodes: Vec<Node>,
    pruned: usize,
}

pub struct Arena {
    chunks: Vec<Chunk>,
    /// Id held by `chunks[0].nodes[0]`.
    base: NodeId,
    live: usize,
    extras: FxHashMap<NodeId, Extras>,
}

impl Default for Arena {
    fn default() -> Self {
        Arena {
            chunks: Vec::new(),
            base: 1,
            live: 0,
            extras: FxHashMap::default(),
        }
    }
}

impl Arena {
    pub fn push(&mut self, mut node: Node, metadata: Option<Value>) {
        if let Some(m) = metadata {
            node.has_extras = true;
            self.extras.insert(
                node.id,
                Extras {
                    stop_reason: None,
                    metadata: Some(Box::new(m)),
                },
            );
        }
        if self.chunks.last().is_none_or(|c| c.nodes.len() == CHUNK) {
            self.chunks.push(Chunk {
                nodes: Vec::with_capacity(CHUNK),
                pruned: 0,
            });
        }
        let full_chunks = self.chunks.len() - 1;
        let chunk = self
            .chunks
            .last_mut()
            .expect("a chunk with room was just ensured");
        debug_assert_eq!(
            node.id,
            self.base + (full_chunks * CHUNK + chunk.nodes.len()) as NodeId
        );
        chunk.nodes.push(node);
        self.live += 1;
    }

    fn slot(&self, id: NodeId) -> Option<(usize, usize)> {
        let i = id.checked_sub(self.base)? as usize;
        Some((i / CHUNK, i % CHUNK))
    }

    pub fn get(&self, id: NodeId) -> Option<&Node> {
        let (c, i) = self.slot(id)?;
        self.chunks.get(c)?.nodes.get(i).filter(|n| !n.pruned)
    }

    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        let (c, i) = self.slot(id)?;
        self.chunks
            .get_mut(c)?
            .nodes
            .get_mut(i)
            .filter(|n| !n.pruned)
    }

    /// Evicts a node; its chunk is released once every node in it is gone.
    pub fn prune(&mut self, id: NodeId) {
        let Some((c, i)) = self.slot(id) else { return };
        let Some(chunk) = self.chunks.get_mut(c) else {
            return;
        };
        let Some(node) = chunk.nodes.get_mut(i).filter(|n| !n.pruned) else {
            return;
        };
        node.pruned = true;
        if node.has_extras {
            self.extras.remove(&id);
        }
        chunk.pruned += 1;
        self.live -= 1;
        let released = self.chunks.iter().take_while(|c| c.pruned == CHUNK).count();
        if released > 0 {
            // Moves only chunk headers, and only once per CHUNK evictions.
            self.chunks.drain(..released);
            self.base += (released * CHUNK) as NodeId;
        }
    }

    pub fn extras(&self, node: &Node) -> Option<&Extras> {
        if node.has_extras {
            self.extras.get(&node.id)
        } else {
            None
        }
    }

    pub fn metadata(&self, node: &Node) -> Option<&Value> {
        self.extras(node).and_then(|e| e.metadata.as_deref())
    }

    pub fn stop_reason(&self, node: &Node) -> Option<&str> {
        self.extras(node).and_then(|e| e.stop_reason.as_deref())
    }

    pub fn set_stop_reason(&mut self, id: NodeId, reason: &str) {
        if let Some(node) = self.get_mut(id) {
            node.has_extras = true;
            self.extras.entry(id).or_default().stop_reason = Some(reason.into());
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
        self.chunks
            .iter()
            .flat_map(|c| c.nodes.iter())
            .filter(|n| !n.pruned)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recorder::kind::{Kind, Status};

    fn node(id: NodeId) -> Node {
        let mut n = Node::new(id, 0, 0, Kind::Tool, 0, None);
        n.status = Status::Success;
        n
    }

    #[test]
    fn fully_pruned_front_chunks_are_released() {
        let mut a = Arena::default();
        let total = CHUNK as NodeId * 2 + 10;
        for id in 1..=total {
            a.push(node(id), if id == 2 { Some(Value::Null) } else { None });
        }
        for id in 1..=CHUNK as NodeId {
            a.prune(id);
        }
        assert_eq!(a.chunks.len(), 2);
        assert!(a.extras.is_empty(), "pruning drops side-table entries");
        assert_eq!(a.len(), CHUNK + 10);
        assert!(a.get(1).is_none());
        assert_eq!(
            a.get(CHUNK as NodeId + 1).map(|n| n.id),
            Some(CHUNK as NodeId + 1)
        );
        assert_eq!(a.get(total).map(|n| n.id), Some(total));
        assert!(a.get(total + 1).is_none());
        a.push(node(total + 1), None);
        assert_eq!(a.iter().count(), CHUNK + 11);
        assert_eq!(a.iter().next().map(|n| n.id), Some(CHUNK as NodeId + 1));
    }
}
