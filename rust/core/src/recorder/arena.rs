//! Node storage indexed by id. Ids are dense and increasing, so fixed-size chunks offset by
//! the oldest chunk give O(1) lookup and growth never moves existing nodes.
//!
//! Bounded memory under pruning (docs/design.md §27): a complete chunk whose live nodes
//! drop to a few (typically the root and some long-running calls) is compacted — its
//! survivors move to a small side map and its buffer is kept for the next chunk — so old
//! nodes never pin whole chunks, and the per-node side table loses its entry on eviction.

use rustc_hash::FxHashMap;

use super::node::Node;
use crate::ids::NodeId;
use crate::value::Value;

/// Fields most nodes never have, kept out of the node itself.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Extras {
    pub stop_reason: Option<Box<str>>,
    pub metadata: Option<Box<Value>>,
}

const CHUNK: usize = 4096;
/// A complete chunk left with at most this many live nodes is compacted. Moving up to this
/// many nodes once per chunk is cheap; keeping a chunk for fewer would waste most of it.
const COMPACT_AT: usize = CHUNK / 16;

/// A compacted chunk has no buffer; its survivors are in `Arena::stragglers`.
struct Chunk {
    nodes: Vec<Node>,
    live: usize,
}

impl Chunk {
    fn is_compacted(&self) -> bool {
        self.nodes.capacity() == 0
    }
}

pub struct Arena {
    chunks: Vec<Chunk>,
    /// Id held by slot 0 of `chunks[0]`.
    base: NodeId,
    /// Live nodes outside any chunk: survivors of compacted chunks and loaded nodes.
    stragglers: FxHashMap<NodeId, Node>,
    /// The buffer of the last compacted chunk, reused by the next one.
    spare: Option<Vec<Node>>,
    live: usize,
    extras: FxHashMap<NodeId, Extras>,
}

impl Default for Arena {
    fn default() -> Self {
        Arena {
            chunks: Vec::new(),
            base: 1,
            stragglers: FxHashMap::default(),
            spare: None,
            live: 0,
            extras: FxHashMap::default(),
        }
    }
}

impl Arena {
    #[inline]
    fn slot(&self, id: NodeId) -> (usize, usize) {
        // An id below `base` wraps to a huge offset, hence to no chunk.
        let offset = id.wrapping_sub(self.base);
        (
            (offset / CHUNK as NodeId) as usize,
            (offset % CHUNK as NodeId) as usize,
        )
    }

    fn attach(&mut self, node: &mut Node, metadata: Option<Value>, stop_reason: Option<&str>) {
        if metadata.is_some() || stop_reason.is_some() {
            node.has_extras = true;
            self.extras.insert(
                node.id,
                Extras {
                    stop_reason: stop_reason.map(Into::into),
                    metadata: metadata.map(Box::new),
                },
            );
        }
    }

    /// Appends the node with the next id (ids are handed out by the graph's counter).
    pub fn push(&mut self, mut node: Node, metadata: Option<Value>) {
        if metadata.is_some() {
            self.attach(&mut node, metadata, None);
        }
        if !matches!(self.chunks.last(), Some(c) if c.nodes.len() < CHUNK && !c.is_compacted()) {
            let nodes = self
                .spare
                .take()
                .unwrap_or_else(|| Vec::with_capacity(CHUNK));
            self.chunks.push(Chunk { nodes, live: 0 });
        }
        let full_chunks = self.chunks.len() - 1;
        let Some(chunk) = self.chunks.last_mut() else {
            unreachable!("a chunk with room was just ensured")
        };
        debug_assert_eq!(
            node.id,
            self.base + (full_chunks * CHUNK + chunk.nodes.len()) as NodeId
        );
        chunk.nodes.push(node);
        chunk.live += 1;
        self.live += 1;
    }

    /// Adds a node read from a snapshot; ids may have gaps, so it goes to the side map.
    /// Every chunk-stored id must be higher: call before the first `push`.
    pub fn load(&mut self, mut node: Node, metadata: Option<Value>, stop_reason: Option<&str>) {
        debug_assert!(self.chunks.is_empty());
        self.attach(&mut node, metadata, stop_reason);
        self.base = self.base.max(node.id + 1);
        self.stragglers.insert(node.id, node);
        self.live += 1;
    }

    #[inline]
    pub fn get(&self, id: NodeId) -> Option<&Node> {
        let (c, i) = self.slot(id);
        match self.chunks.get(c).and_then(|ch| ch.nodes.get(i)) {
            Some(n) => (!n.pruned).then_some(n),
            None => self.get_side(id),
        }
    }

    #[cold]
    fn get_side(&self, id: NodeId) -> Option<&Node> {
        self.stragglers.get(&id)
    }

    #[inline]
    pub fn get_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        let (c, i) = self.slot(id);
        if self.chunks.get(c).is_some_and(|ch| i < ch.nodes.len()) {
            let n = &mut self.chunks[c].nodes[i];
            return (!n.pruned).then_some(n);
        }
        self.get_side_mut(id)
    }

    #[cold]
    fn get_side_mut(&mut self, id: NodeId) -> Option<&mut Node> {
        self.stragglers.get_mut(&id)
    }

    /// Evicts a node and drops its side-table entry; returns a copy so the caller can
    /// release what the node referenced (interned names).
    pub fn prune(&mut self, id: NodeId) -> Option<Node> {
        let (c, i) = self.slot(id);
        let removed = match self.chunks.get_mut(c) {
            Some(chunk) if i < chunk.nodes.len() => {
                let node = chunk.nodes.get_mut(i).filter(|n| !n.pruned)?;
                node.pruned = true;
                let copy = node.clone();
                chunk.live -= 1;
                if chunk.nodes.len() == CHUNK && chunk.live <= COMPACT_AT {
                    self.compact(c);
                }
                copy
            }
            _ => self.stragglers.remove(&id)?,
        };
        if removed.has_extras {
            self.extras.remove(&id);
        }
        self.live -= 1;
        Some(removed)
    }

    /// Moves a sparse chunk's survivors to the side map and keeps its buffer for reuse.
    fn compact(&mut self, c: usize) {
        let mut nodes = std::mem::take(&mut self.chunks[c].nodes);
        for n in nodes.drain(..).filter(|n| !n.pruned) {
            self.stragglers.insert(n.id, n);
        }
        self.spare = Some(nodes);
        // Moves only chunk headers, and only once per chunk of evictions.
        let released = self
            .chunks
            .iter()
            .take_while(|ch| ch.is_compacted())
            .count();
        if released > 0 {
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

    /// Sets one key of the node's metadata object (created when the node has none); false when
    /// the node does not exist (pruned or never made).
    pub fn set_metadata_key(&mut self, id: NodeId, key: &str, value: Value) -> bool {
        let Some(node) = self.get_mut(id) else {
            return false;
        };
        node.has_extras = true;
        let extras = self.extras.entry(id).or_default();
        extras
            .metadata
            .get_or_insert_with(|| Box::new(Value::empty_object()))
            .set(key, value);
        true
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

    /// Live nodes in creation (id) order: the side map, sorted, merged with the chunks.
    pub fn iter(&self) -> impl Iterator<Item = &Node> {
        let mut side: Vec<&Node> = self.stragglers.values().collect();
        side.sort_unstable_by_key(|n| n.id);
        let mut side = side.into_iter().peekable();
        let mut chunked = self
            .chunks
            .iter()
            .flat_map(|c| c.nodes.iter())
            .filter(|n| !n.pruned)
            .peekable();
        // With no side-map nodes (the usual case) this is the chunk walk plus one check.
        std::iter::from_fn(move || match side.peek() {
            None => chunked.next(),
            Some(a) => match chunked.peek() {
                Some(b) if b.id < a.id => chunked.next(),
                _ => side.next(),
            },
        })
    }

    /// Chunks currently holding a buffer (for tests of the memory bound).
    pub fn chunk_count(&self) -> usize {
        self.chunks.iter().filter(|c| !c.is_compacted()).count()
    }

    /// Side-table entries (for tests of the memory bound).
    pub fn extras_len(&self) -> usize {
        self.extras.len()
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

    #[test]
    fn a_few_survivors_never_pin_their_chunk() {
        // The root (id 1) and one long-running call stay; everything else churns through.
        let mut a = Arena::default();
        let mut next = 1;
        let keep = [1, 77];
        for _ in 0..CHUNK * 20 {
            a.push(node(next), Some(Value::Int(next as i64)));
            if next > 1000 && !keep.contains(&(next - 1000)) {
                assert!(a.prune(next - 1000).is_some());
            }
            next += 1;
        }
        assert!(a.chunk_count() <= 2, "chunks: {}", a.chunk_count());
        assert!(a.extras_len() <= 1002);
        assert_eq!(a.len(), 1002);
        for id in keep {
            assert_eq!(
                a.get(id).map(|n| n.id),
                Some(id),
                "survivor {id} stays reachable"
            );
            assert!(a.get_mut(id).is_some());
        }
        assert!(a.get(2).is_none() && a.get(next - 1001).is_none());
        let order: Vec<NodeId> = a.iter().map(|n| n.id).collect();
        assert_eq!(order[..2], keep);
        assert!(order.windows(2).all(|w| w[0] < w[1]), "creation order");
        // Pruning a survivor removes it from the side map.
        assert!(a.prune(77).is_some());
        assert!(a.get(77).is_none() && a.prune(77).is_none());
        assert_eq!(a.len(), 1001);
    }

    #[test]
    fn compacted_buffers_are_reused() {
        let mut a = Arena::default();
        a.push(node(1), None);
        let first = a.chunks[0].nodes.as_ptr();
        for id in 2..=(CHUNK as NodeId + 1) {
            a.push(node(id), None);
            if id > 10 {
                a.prune(id - 10);
            }
        }
        // The first chunk emptied and its buffer became the second chunk's.
        assert_eq!(a.chunk_count(), 1);
        let tail = a.chunks.last().expect("tail chunk");
        assert_eq!(tail.nodes.as_ptr(), first);
        assert_eq!(a.len(), 10);
    }

    #[test]
    fn loaded_nodes_with_gaps_precede_new_ones() {
        let mut a = Arena::default();
        a.load(node(1), None, Some("halt"));
        a.load(node(900), Some(Value::Bool(true)), None);
        a.push(node(901), None);
        assert_eq!(
            a.iter().map(|n| n.id).collect::<Vec<_>>(),
            vec![1, 900, 901]
        );
        assert_eq!(a.stop_reason(a.get(1).unwrap()), Some("halt"));
        assert!(a.get(2).is_none() && a.get(902).is_none());
        assert_eq!(a.len(), 3);
    }
}
