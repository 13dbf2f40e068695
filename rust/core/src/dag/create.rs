//! Creating nodes and edges (the primitive mutations).

use crate::ids::Id;

use super::arena::{stored, Dag, Edge, Minted, Node};
use super::cycle::{inline, LongStep};
use super::error::{DagCode, DagError, DagResult};
use super::state::content_key;
use super::types::{EdgeType, NodeType, State};
use crate::clock::now;
use crate::value::Value;

/// Arguments of `create_node` / `fork`, already converted from the caller's types.
#[derive(Clone, Debug, Default)]
pub struct NodeSpec {
    pub content: Option<Value>,
    pub input: Option<Value>,
    pub output: Option<Value>,
    pub metadata: Option<Value>,
    pub node_id: Option<String>,
}

impl NodeSpec {
    /// Large enough that building the node should run without the GIL (the bindings ask).
    pub fn is_large(&self) -> bool {
        crate::value::any_large([&self.content, &self.input, &self.output, &self.metadata])
    }
}

pub(crate) fn object_or_empty(v: Option<Value>, what: &str) -> DagResult<Value> {
    match v {
        None => Ok(Value::empty_object()),
        Some(v @ Value::Object(_)) => Ok(v),
        Some(_) => Err(DagError::invalid(format!("{what} must be a dict"))),
    }
}

/// The state a new node starts in (`create_node`, `fork`): the one named, else `pending`.
pub(crate) fn initial_state(state: Option<&str>) -> DagResult<State> {
    match state {
        None => Ok(State::Pending),
        Some(s) => Ok(State::parse(s)?),
    }
}

/// Spec §2.5.2: the fields a node type must carry.
/// `object_or_empty` as a node stores it: None for an empty object too (`arena::stored`). Inline, so a
/// node without the object (a fan-out's task has none of the three) costs a test, not a call.
#[inline(always)]
fn object_or_none(v: Option<Value>, what: &str) -> DagResult<Option<Value>> {
    match v {
        None => Ok(None),
        Some(v) => given_object(v, what),
    }
}

#[inline(never)]
fn given_object(v: Value, what: &str) -> DagResult<Option<Value>> {
    match v {
        Value::Object(_) => Ok(stored(v)),
        _ => Err(DagError::invalid(format!("{what} must be a dict"))),
    }
}

fn has_text_content(object: Option<&Value>) -> bool {
    object
        .and_then(|o| o.get("content"))
        .and_then(Value::as_str)
        .is_some()
}

/// `input` and `output` are as stored: None for an empty object.
pub(crate) fn check_required_payload(
    t: NodeType,
    input: Option<&Value>,
    output: Option<&Value>,
) -> DagResult<()> {
    match t {
        NodeType::UserMessage if !has_text_content(input) => Err(DagError::invalid(
            "a user_message needs a string input.content",
        )),
        NodeType::Summary if !has_text_content(output) => {
            Err(DagError::invalid("a summary needs a string output.content"))
        }
        _ => Ok(()),
    }
}

impl Dag {
    /// Validates a node spec and builds the node without inserting it.
    #[inline]
    pub(crate) fn build_node(
        &self,
        node_type: NodeType,
        state: State,
        spec: NodeSpec,
        at: f64,
    ) -> DagResult<Minted<Node>> {
        self.check_new_node_id(&spec.node_id)?;
        // Options, not empty objects: a node without a payload (a fan-out's task) moves no values.
        let mut input = object_or_none(spec.input, "input")?;
        let mut output = object_or_none(spec.output, "output")?;
        let metadata = object_or_none(spec.metadata, "metadata")?;
        if let Some(content) = spec.content {
            let (side, key) = content_key(node_type);
            let object = if side == "input" {
                &mut input
            } else {
                &mut output
            };
            object
                .get_or_insert_with(Value::empty_object)
                .set(key, content);
        }
        check_required_payload(node_type, input.as_ref(), output.as_ref())?;
        Ok(Dag::new_node_minted(
            spec.node_id,
            node_type,
            state,
            [input, output, metadata],
            at,
        ))
    }

    /// Inserts a new node (no edges yet); records `node_created` unless `quiet`.
    #[inline]
    pub(crate) fn insert_node(&mut self, mut node: Minted<Node>, quiet: bool) -> u32 {
        // Without edges its counters are the zeros it was built with: only its sets need placing, which
        // is all a `flush` of it would do. Placed from the node as built, so nothing reads back the row
        // just written (that read waited on the row's copy: a tenth of a fan-out's build).
        let want = node.item.wanted_sets();
        node.item.in_sets = want;
        let (node_type, state) = (node.item.node_type, node.item.state);
        let n = self.push_node_keyed(node.item, node.key);
        // The id is read only by a set kept by id (ids out of order).
        let Dag { nodes, sets, .. } = self;
        sets.apply(n, &nodes[n as usize].id, want, want);
        if !quiet {
            self.record_node_created(n, node_type, state);
        }
        n
    }

    pub fn create_node(&mut self, node_type: &str, state: &str, spec: NodeSpec) -> DagResult<Id> {
        let n = self.create_node_row(node_type, Some(state), spec)?;
        Ok(self.nodes[n as usize].id.clone())
    }

    /// [`Dag::create_node`], answering with the new node's row: a binding makes the caller's `str` straight
    /// from the row's text ([`Dag::node_id_at`]) instead of from a copy of the id handed back.
    pub fn create_node_row(
        &mut self,
        node_type: &str,
        state: Option<&str>,
        spec: NodeSpec,
    ) -> DagResult<u32> {
        let node_type = NodeType::parse(node_type)?;
        let state = initial_state(state)?;
        let node = self.build_node(node_type, state, spec, now())?;
        Ok(self.insert_node(node, false))
    }

    /// Inserts an edge that is known to be valid; records `edge_created` unless `quiet`.
    #[inline]
    pub(crate) fn insert_edge(&mut self, edge: Minted<Edge>, quiet: bool) -> u32 {
        let e = self.push_edge_keyed(edge.item, edge.key);
        if !quiet {
            self.record_edge_created(e);
        }
        e
    }

    pub fn create_edge(
        &mut self,
        from_id: &str,
        to_id: &str,
        edge_type: &str,
        metadata: Option<Value>,
        edge_id: Option<String>,
    ) -> DagResult<Id> {
        let e = self.create_edge_row_with(from_id, to_id, edge_type, metadata, edge_id, &inline)?;
        Ok(self.edges[e as usize].id.clone())
    }

    /// `create_edge`, answering with the edge's row (the new one, or the active edge it repeats: see
    /// [`Dag::create_node_row`]), running the cycle search through `long` when the edge needs one (its
    /// target has a way out and its source a way in).
    pub fn create_edge_row_with(
        &mut self,
        from_id: &str,
        to_id: &str,
        edge_type: &str,
        metadata: Option<Value>,
        edge_id: Option<String>,
        long: LongStep<'_>,
    ) -> DagResult<u32> {
        let edge_type = EdgeType::parse(edge_type)?;
        let metadata = object_or_empty(metadata, "metadata")?;
        self.check_new_edge_id(&edge_id)?;
        let from = self.idx(from_id)?;
        let to = self.idx(to_id)?;
        if from == to {
            return Err(DagError::new(
                DagCode::EdgeSelfLoop,
                format!("edge {from_id:?} -> itself"),
            ));
        }
        for (n, id) in [(from, from_id), (to, to_id)] {
            if !self.nodes[n as usize].is_active() {
                return Err(DagError::new(
                    DagCode::EdgeInactiveEndpoint,
                    format!("node {id:?} is inactive"),
                ));
            }
        }
        if let Some(existing) = self.active_edge(from, to, edge_type) {
            return Ok(existing);
        }
        self.flush();
        if self.would_cycle(from, to, long) {
            return Err(DagError::new(
                DagCode::EdgeCycle,
                format!("edge {from_id:?} -> {to_id:?} would close a cycle"),
            ));
        }
        let edge = Dag::new_edge_minted(edge_id, from, to, edge_type, metadata, now());
        let e = self.insert_edge(edge, false);
        self.flush();
        Ok(e)
    }
}
