//! Node and edge storage: append-only arenas, id indexes, and adjacency indexed both ways.
//!
//! Nothing is ever removed (archiving only stamps `compressed_at`), so arena indexes are stable for the
//! life of the graph; only a rolled-back transaction truncates the tail.

use thin_vec::ThinVec;

use crate::ids::Id;

use super::adjacency::Adjacency;
use super::chunks::Chunks;
use super::edge_keys::EdgeKeys;
use super::error::{DagError, DagResult};
use super::events::Event;
use super::growth::PushWide;
use super::index::{IdIndex, IdRows};
use super::node_set::Sets;
use super::txn::Txn;
use super::types::{EdgeType, NodeType, State};
use crate::clock::OptTime;
use crate::value::Value;

#[derive(Clone, Debug)]
pub struct Node {
    pub id: Id,
    pub node_type: NodeType,
    pub state: State,
    /// The non-empty ones of `input`, `output` and `metadata` (docs/dag.md "Memory").
    payload: ThinVec<(Slot, Value)>,
    /// What few nodes have, behind one pointer (docs/dag.md "Memory").
    pub(crate) rare: Option<Box<Rare>>,
    pub started_at: OptTime,
    pub finished_at: OptTime,
    pub created_at: f64,
    /// Live incoming blocking edges whose parent does not (yet) unblock this node.
    pub(crate) blockers: u32,
    /// Live incoming dependency edges whose parent failed.
    pub(crate) failed_deps: u32,
    /// Live outgoing blocking edges; zero means leaf.
    pub(crate) out_blocking: u32,
    /// Which of the ready / doomed / leaf / bad-leaf sets hold this node (one bit each, `derived.rs`), so a
    /// refresh that changes nothing costs no set search.
    pub(crate) in_sets: u8,
}

/// Which of a node's three objects a payload entry is. A node stores only those it has, behind one pointer
/// (nothing allocated while it has none: a task of a large fan-out): three inline were 96 of a node's 160
/// bytes, and a chat message has one of the three.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Slot {
    Input,
    Output,
    Metadata,
}

/// A node's stored objects as its payload, with room for exactly those: a pushed-to `ThinVec` starts with
/// room for four.
fn payload_of(objects: [Option<Value>; 3]) -> ThinVec<(Slot, Value)> {
    let mut payload = ThinVec::with_capacity(objects.iter().flatten().count());
    for (slot, object) in [Slot::Input, Slot::Output, Slot::Metadata]
        .into_iter()
        .zip(objects)
    {
        if let Some(object) = object {
            payload.push((slot, object));
        }
    }
    payload
}

/// What a node without a payload reads for each of its three objects.
static EMPTY_OBJECT: Value = Value::Object(Vec::new());

fn is_empty_object(v: &Value) -> bool {
    matches!(v, Value::Object(m) if m.is_empty())
}

/// An object as a node stores it: an empty one not at all.
pub(crate) fn stored(v: Value) -> Option<Value> {
    (!is_empty_object(&v)).then_some(v)
}

/// The fields of a node that most nodes never set: a retry's original, an archived node's summary and time,
/// and a kept `output_preview` (one that shows JSON, or one read from a file that differs from the derived
/// one).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Rare {
    retry_of_id: Option<Id>,
    compressed_by_id: Option<Id>,
    compressed_at: Option<f64>,
    preview: Option<Value>,
}

impl Rare {
    #[cfg(test)]
    pub(crate) fn has_preview(&self) -> bool {
        self.preview.is_some()
    }
}

impl Node {
    /// A node as given, its times and rare fields unset and its derived counters zero: what a new node and
    /// a loaded record share (each then sets its own times and rare fields).
    #[inline(always)]
    pub(crate) fn bare(
        id: Id,
        node_type: NodeType,
        state: State,
        objects: [Value; 3],
        created_at: f64,
    ) -> Node {
        Node::bare_stored(id, node_type, state, objects.map(stored), created_at)
    }

    /// [`Node::bare`] of the objects as stored: None for an empty one.
    pub(crate) fn bare_stored(
        id: Id,
        node_type: NodeType,
        state: State,
        objects: [Option<Value>; 3],
        created_at: f64,
    ) -> Node {
        let payload = if objects.iter().all(Option::is_none) {
            // A node without a payload (a fan-out's task): nothing to place.
            ThinVec::new()
        } else {
            payload_of(objects)
        };
        Node {
            id,
            node_type,
            state,
            payload,
            rare: None,
            started_at: OptTime::NONE,
            finished_at: OptTime::NONE,
            created_at,
            blockers: 0,
            failed_deps: 0,
            out_blocking: 0,
            in_sets: 0,
        }
    }

    pub fn is_active(&self) -> bool {
        self.compressed_at().is_none()
    }

    fn object(&self, slot: Slot) -> &Value {
        self.payload
            .iter()
            .find(|(s, _)| *s == slot)
            .map_or(&EMPTY_OBJECT, |(_, v)| v)
    }

    /// The stored object `slot`, stored (empty) first when the node has none yet.
    fn object_mut(&mut self, slot: Slot) -> &mut Value {
        let i = match self.payload.iter().position(|(s, _)| *s == slot) {
            Some(i) => i,
            None => {
                self.payload.reserve_exact(1);
                self.payload.push((slot, Value::empty_object()));
                self.payload.len() - 1
            }
        };
        &mut self.payload[i].1
    }

    pub fn input(&self) -> &Value {
        self.object(Slot::Input)
    }

    pub fn output(&self) -> &Value {
        self.object(Slot::Output)
    }

    pub fn metadata(&self) -> &Value {
        self.object(Slot::Metadata)
    }

    /// How many of the three objects the node stores.
    #[cfg(test)]
    pub(crate) fn stored_objects(&self) -> usize {
        self.payload.len()
    }

    pub(crate) fn input_mut(&mut self) -> &mut Value {
        self.object_mut(Slot::Input)
    }

    /// The output to change in place; call [`Node::output_changed`] after.
    pub(crate) fn output_mut(&mut self) -> &mut Value {
        self.object_mut(Slot::Output)
    }

    pub(crate) fn metadata_mut(&mut self) -> &mut Value {
        self.object_mut(Slot::Metadata)
    }

    pub fn retry_of_id(&self) -> Option<&Id> {
        self.rare.as_ref()?.retry_of_id.as_ref()
    }

    pub fn compressed_by_id(&self) -> Option<&Id> {
        self.rare.as_ref()?.compressed_by_id.as_ref()
    }

    pub fn compressed_at(&self) -> Option<f64> {
        self.rare.as_ref()?.compressed_at
    }

    /// The readable excerpt of the output (`preview::derive`): computed when read unless kept (see [`Rare`]);
    /// storing every preview doubled an agent message's output (docs/dag.md "Memory").
    pub fn output_preview(&self) -> std::borrow::Cow<'_, Value> {
        match self.rare.as_ref().and_then(|r| r.preview.as_ref()) {
            Some(kept) => std::borrow::Cow::Borrowed(kept),
            None => std::borrow::Cow::Owned(super::preview::derive(self.output())),
        }
    }

    fn rare_mut(&mut self) -> &mut Rare {
        self.rare.get_or_insert_with(Box::default)
    }

    pub(crate) fn set_retry_of(&mut self, id: Id) {
        self.rare_mut().retry_of_id = Some(id);
    }

    pub(crate) fn set_archived(&mut self, by: Id, at: f64) {
        let rare = self.rare_mut();
        rare.compressed_by_id = Some(by);
        rare.compressed_at = Some(at);
    }

    /// After `output` changed: the preview follows it again, derived on read when that is cheap (text),
    /// else derived once here and kept.
    pub(crate) fn output_changed(&mut self) {
        if super::preview::is_costly(self.output()) {
            self.rare_mut().preview = Some(super::preview::derive(self.output()));
        } else if let Some(rare) = &mut self.rare {
            rare.preview = None;
        }
    }

    /// Fields read from a record: a preview that can be derived cheaply and equals the derived one is not
    /// kept.
    pub(crate) fn set_loaded(
        &mut self,
        retry_of_id: Option<Id>,
        compressed_by_id: Option<Id>,
        compressed_at: Option<f64>,
        preview: Value,
    ) {
        // Kept when deriving it is costly or gives something else (a file written by hand or elsewhere).
        let preview = (super::preview::is_costly(self.output())
            || preview != super::preview::derive(self.output()))
        .then_some(preview);
        if retry_of_id.is_some()
            || compressed_by_id.is_some()
            || compressed_at.is_some()
            || preview.is_some()
        {
            self.rare = Some(Box::new(Rare {
                retry_of_id,
                compressed_by_id,
                compressed_at,
                preview,
            }));
        }
    }
}

#[derive(Clone, Debug)]
pub struct Edge {
    pub id: Id,
    pub from: u32,
    pub to: u32,
    pub edge_type: EdgeType,
    /// None while empty (most edges): an inline object was 32 of an edge's 80 bytes.
    pub(crate) metadata: Option<Box<Value>>,
    pub compressed_at: OptTime,
    pub created_at: f64,
}

impl Edge {
    pub fn metadata(&self) -> &Value {
        self.metadata.as_deref().unwrap_or(&EMPTY_OBJECT)
    }

    /// How an edge holds `metadata`. Inline: an edge of a build has none, and that is a test, not a call.
    #[inline]
    pub(crate) fn boxed_metadata(metadata: Value) -> Option<Box<Value>> {
        (!is_empty_object(&metadata)).then(|| Box::new(metadata))
    }
}

/// The fields traversals read, packed so a walk over many edges stays in cache.
#[derive(Clone, Copy, Debug)]
pub(crate) struct EdgeHot {
    pub from: u32,
    pub to: u32,
    pub edge_type: EdgeType,
    pub active: bool,
}

/// The rows are an index of their own ids while those are in order (`index.rs`).
impl IdRows for Chunks<Node> {
    #[inline]
    fn id_at(&self, i: u32) -> &Id {
        &self[i as usize].id
    }
}

impl IdRows for Chunks<Edge> {
    #[inline]
    fn id_at(&self, i: u32) -> &Id {
        &self[i as usize].id
    }
}

/// Reused visit marks so traversals cost O(visited), not O(graph), per call.
#[derive(Default)]
pub(crate) struct Marks {
    stamp: Vec<u32>,
    epoch: u32,
}

impl Marks {
    pub fn start(&mut self, len: usize) {
        if self.stamp.len() < len {
            self.stamp.resize(len, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.stamp.iter_mut().for_each(|s| *s = 0);
            self.epoch = 1;
        }
    }

    /// Marks `i`; returns false if it was already marked in this epoch.
    pub fn mark(&mut self, i: u32) -> bool {
        let slot = &mut self.stamp[i as usize];
        if *slot == self.epoch {
            false
        } else {
            *slot = self.epoch;
            true
        }
    }

    pub fn is_marked(&self, i: u32) -> bool {
        self.stamp[i as usize] == self.epoch
    }
}

pub struct Dag {
    pub graph_id: String,
    pub(crate) nodes: Chunks<Node>,
    pub(crate) edges: Chunks<Edge>,
    /// Mirrors of `Edge` endpoints/type/activity and of `Node::is_active`, kept in step by the writers.
    pub(crate) hot: Vec<EdgeHot>,
    pub(crate) node_active: Vec<bool>,
    /// True while every id is greater than all ids created before it (always, with generated UUIDv7s):
    /// then arena order is id order and orderings compare integers instead of strings.
    pub(crate) ids_in_order: bool,
    pub(crate) out_adj: Vec<Adjacency>,
    pub(crate) in_adj: Vec<Adjacency>,
    pub(crate) node_index: IdIndex,
    pub(crate) edge_index: IdIndex,
    /// Finds the active edge of a (from, to, type): docs/design.md §9 returns the existing id for a duplicate.
    pub(crate) edge_keys: EdgeKeys,
    /// Ready, doomed, leaf, bad-leaf and running nodes (`derived.rs`); the running set is where a store
    /// looks for leases (docs/dag.md "Workers").
    pub(crate) sets: Sets,
    pub(crate) events: Chunks<Event>,
    pub(crate) txn: Txn,
    pub(crate) dirty: Vec<u32>,
    pub(crate) marks: Marks,
    /// Whether `mutate()` commits and applied results repair leaves (docs/dag-rules.md §5.2). A pure task
    /// workflow turns it off so its finished tasks stay leaves; conversations keep it on (the default).
    pub(crate) leaf_repair: bool,
}

impl Default for Dag {
    fn default() -> Self {
        Self::new(None)
    }
}

impl Dag {
    pub fn new(graph_id: Option<String>) -> Self {
        Dag {
            graph_id: graph_id.unwrap_or_else(crate::ids::uuid7),
            nodes: Chunks::default(),
            edges: Chunks::default(),
            hot: Vec::new(),
            node_active: Vec::new(),
            ids_in_order: true,
            out_adj: Vec::new(),
            in_adj: Vec::new(),
            node_index: IdIndex::default(),
            edge_index: IdIndex::default(),
            edge_keys: EdgeKeys::default(),
            sets: Sets::default(),
            events: Chunks::default(),
            txn: Txn::default(),
            dirty: Vec::new(),
            marks: Marks::default(),
            leaf_repair: true,
        }
    }

    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    pub fn edge_count(&self) -> usize {
        self.edges.len()
    }

    pub fn node(&self, id: &str) -> Option<&Node> {
        self.node_index
            .get(id, &self.nodes)
            .map(|i| &self.nodes[i as usize])
    }

    pub fn edge(&self, id: &str) -> Option<&Edge> {
        self.edge_index
            .get(id, &self.edges)
            .map(|i| &self.edges[i as usize])
    }

    pub fn edge_by_index(&self, i: u32) -> &Edge {
        &self.edges[i as usize]
    }

    pub fn node_by_index(&self, i: u32) -> &Node {
        &self.nodes[i as usize]
    }

    /// The id of node `i`.
    #[inline]
    pub fn id_by_index(&self, i: u32) -> &str {
        &self.nodes[i as usize].id
    }

    pub(crate) fn idx(&self, id: &str) -> DagResult<u32> {
        self.recent(id)
            .or_else(|| self.node_index.get(id, &self.nodes))
            .ok_or_else(|| DagError::node_not_found(id))
    }

    /// The newest node, the one before it or the first, when `id` is theirs: what a build names next (a
    /// chain's two ends, a fan-out's hub and newest child). Comparing the text is a few words; reading an id's
    /// value for the index is a few times that (docs/dag.md "Ids and indexes").
    fn recent(&self, id: &str) -> Option<u32> {
        let len = self.nodes.len() as u32;
        [len.wrapping_sub(1), len.wrapping_sub(2), 0]
            .into_iter()
            .find(|&n| n < len && same_text(&self.nodes[n as usize].id, id))
    }

    /// The id of the node in row `n` (a row a create call answered with).
    pub fn node_id_at(&self, n: u32) -> &str {
        &self.nodes[n as usize].id
    }

    /// The id of the edge in row `e` (a row a create call answered with).
    pub fn edge_id_at(&self, e: u32) -> &str {
        &self.edges[e as usize].id
    }

    pub(crate) fn active_idx(&self, id: &str) -> DagResult<u32> {
        let i = self.idx(id)?;
        if self.nodes[i as usize].is_active() {
            Ok(i)
        } else {
            Err(DagError::node_inactive(id))
        }
    }

    pub(crate) fn check_new_node_id(&self, id: &Option<String>) -> DagResult<()> {
        match id {
            Some(s) if s.is_empty() => Err(DagError::invalid("node_id must be a non-empty string")),
            Some(s) if self.node_index.contains(s, &self.nodes) => {
                Err(DagError::invalid(format!("node_id {s:?} is already used")))
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn check_new_edge_id(&self, id: &Option<String>) -> DagResult<()> {
        match id {
            Some(s) if s.is_empty() => Err(DagError::invalid("edge_id must be a non-empty string")),
            Some(s) if self.edge_index.contains(s, &self.edges) => {
                Err(DagError::invalid(format!("edge_id {s:?} is already used")))
            }
            _ => Ok(()),
        }
    }

    /// An edge counts only while it and both endpoints are active (docs/design.md §8).
    pub(crate) fn is_live(&self, e: u32) -> bool {
        let h = self.hot[e as usize];
        h.active && self.node_active[h.from as usize] && self.node_active[h.to as usize]
    }

    pub(crate) fn recheck_id_order(&mut self) {
        let in_order = self
            .nodes
            .iter()
            .zip(self.nodes.iter().skip(1))
            .all(|(a, b)| a.id < b.id);
        self.set_id_order(in_order);
    }

    /// Records whether arena order is id order, and holds the derived sets in the form that reads them in
    /// id order (`node_set.rs`).
    fn set_id_order(&mut self, in_order: bool) {
        if in_order == self.ids_in_order {
            return;
        }
        self.ids_in_order = in_order;
        for set in self.sets.all_mut() {
            set.reorder(in_order, &self.nodes);
        }
    }

    pub(crate) fn live_out(&self, n: u32) -> impl Iterator<Item = &Edge> + '_ {
        self.out_adj[n as usize]
            .iter()
            .filter(|&&e| self.is_live(e))
            .map(|&e| &self.edges[e as usize])
    }

    pub(crate) fn live_in(&self, n: u32) -> impl Iterator<Item = &Edge> + '_ {
        self.in_adj[n as usize]
            .iter()
            .filter(|&&e| self.is_live(e))
            .map(|&e| &self.edges[e as usize])
    }

    /// Room for `nodes` more nodes and `edges` more edges (a bulk load knows its counts: growing the
    /// arena row by row was a twentieth of a load, in copies and rehashes).
    pub(crate) fn reserve(&mut self, nodes: usize, edges: usize) {
        self.nodes.reserve(nodes);
        self.node_index.reserve(nodes);
        self.edge_keys.reserve(nodes);
        self.node_active.reserve(nodes);
        self.out_adj.reserve(nodes);
        self.in_adj.reserve(nodes);
        self.dirty.reserve(nodes);
        self.edges.reserve(edges);
        self.edge_index.reserve(edges);
        self.hot.reserve(edges);
    }

    /// Appends a node and marks it for `flush` (a node read from a record may come with its edges); the
    /// caller has validated everything.
    pub(crate) fn push_node(&mut self, node: Node) -> u32 {
        let key = crate::ids::parse_uuid(&node.id);
        let i = self.push_node_keyed(node, key);
        self.dirty.push(i);
        i
    }

    /// Appends a node whose id's value is known (`Minted`), its derived sets left to the caller.
    #[inline]
    pub(crate) fn push_node_keyed(&mut self, node: Node, key: Option<u128>) -> u32 {
        let i = self.nodes.len() as u32;
        // In order when it sorts after the newest id: by value when the index knows it, else by text.
        let out_of_order = match (key, self.node_index.newest()) {
            (Some(key), Some(newest)) => newest >= key,
            _ => self.nodes.last().is_some_and(|last| last.id >= node.id),
        };
        self.node_index.insert_keyed(&node.id, key, i, &self.nodes);
        self.node_active.push_wide(node.is_active());
        self.nodes.push(node);
        self.edge_keys.node_added();
        if out_of_order {
            self.set_id_order(false);
        }
        self.out_adj.push_wide(Adjacency::new());
        self.in_adj.push_wide(Adjacency::new());
        self.txn.log_node_added();
        i
    }

    pub(crate) fn push_edge(&mut self, edge: Edge) -> u32 {
        let key = crate::ids::parse_uuid(&edge.id);
        self.push_edge_keyed(edge, key)
    }

    /// [`Dag::push_edge`] of an edge whose id's value is known (`Minted`).
    #[inline]
    pub(crate) fn push_edge_keyed(&mut self, edge: Edge, key: Option<u128>) -> u32 {
        let i = self.edges.len() as u32;
        self.edge_index.insert_keyed(&edge.id, key, i, &self.edges);
        self.hot.push_wide(EdgeHot {
            from: edge.from,
            to: edge.to,
            edge_type: edge.edge_type,
            active: edge.compressed_at.is_none(),
        });
        self.out_adj[edge.from as usize].push(i);
        self.in_adj[edge.to as usize].push(i);
        self.edges.push(edge);
        self.edge_key_added(i);
        self.txn.log_edge_added();
        self.count_new_edge(i);
        i
    }

    pub(crate) fn new_node(
        id: Option<String>,
        node_type: NodeType,
        state: State,
        input: Value,
        output: Value,
        metadata: Value,
        at: f64,
    ) -> Node {
        let objects = [input, output, metadata].map(stored);
        Dag::new_node_minted(id, node_type, state, objects, at).item
    }

    /// [`Dag::new_node`], with the value of the id when it was minted here.
    #[inline(always)]
    pub(crate) fn new_node_minted(
        id: Option<String>,
        node_type: NodeType,
        state: State,
        objects: [Option<Value>; 3],
        at: f64,
    ) -> Minted<Node> {
        let (id, key) = new_id(id, at);
        let has_output = objects[1].is_some();
        let mut node = Node::bare_stored(id, node_type, state, objects, at);
        node.started_at = OptTime::from((state == State::Running).then_some(at));
        node.finished_at = OptTime::from(state.is_terminal().then_some(at));
        // A new node without an output keeps no preview (there is none to derive): no call for it.
        if has_output {
            node.output_changed();
        }
        Minted { item: node, key }
    }

    /// A new edge, and the value of its id (minted here unless `id` is given).
    #[inline(always)]
    pub(crate) fn new_edge_minted(
        id: Option<String>,
        from: u32,
        to: u32,
        edge_type: EdgeType,
        metadata: Value,
        at: f64,
    ) -> Minted<Edge> {
        let (id, key) = new_id(id, at);
        let edge = Edge {
            id,
            from,
            to,
            edge_type,
            metadata: Edge::boxed_metadata(metadata),
            compressed_at: OptTime::NONE,
            created_at: at,
        };
        Minted { item: edge, key }
    }
}

/// Equal texts. Two ids of one graph usually differ first in their last bytes (a UUIDv7's random tail),
/// so those are compared as one word before the whole text: a miss in `Dag::recent` costs a few
/// instructions instead of a `memcmp` call.
#[inline]
fn same_text(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    // A UUID's 36 bytes compared as two 16-byte words and a 4-byte one: no call to `memcmp`.
    if let (Ok(a), Ok(b)) = (<&[u8; 36]>::try_from(a), <&[u8; 36]>::try_from(b)) {
        let word = |s: &[u8; 36], at: usize| {
            u128::from_ne_bytes(s[at..at + 16].try_into().unwrap_or_default())
        };
        let tail = |s: &[u8; 36]| u32::from_ne_bytes(s[32..].try_into().unwrap_or_default());
        return word(a, 0) == word(b, 0) && word(a, 16) == word(b, 16) && tail(a) == tail(b);
    }
    let tail = |s: &[u8]| -> u64 { s.last_chunk::<8>().map_or(0, |w| u64::from_ne_bytes(*w)) };
    a.len() == b.len() && tail(a) == tail(b) && a == b
}

/// A new node or edge and the value of its id as `ids::parse_uuid` reads it (None when it is not canonical
/// UUID text), known without reading the text back when the graph minted the id: docs/dag.md "Ids and
/// indexes".
pub(crate) struct Minted<T> {
    pub item: T,
    pub key: Option<u128>,
}

#[inline(always)]
fn new_id(given: Option<String>, at: f64) -> (Id, Option<u128>) {
    match given {
        Some(id) => {
            let key = crate::ids::parse_uuid(&id);
            (Id::from(id), key)
        }
        None => {
            let (id, key) = crate::ids::uuid7_keyed_at(at);
            (id, Some(key))
        }
    }
}
#[cfg(test)]
mod sizes {
    /// The row sizes docs/dag.md "Memory" counts with; a field added to a row shows here first.
    #[test]
    fn rows_keep_their_sizes() {
        use std::mem::size_of;
        assert_eq!(
            (
                size_of::<super::Node>(),
                size_of::<super::Edge>(),
                size_of::<super::EdgeHot>()
            ),
            (96, 80, 12)
        );
    }
}
