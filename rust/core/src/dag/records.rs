//! Nodes, edges and events as plain records (the dict shapes of the API and of the JSON file).

use super::arena::{Dag, Edge, Node};
use super::events::{Event, EventRef};
use crate::value::Value;

/// One field of a record, borrowed from the graph.
pub enum Field<'a> {
    Str(&'a str),
    OptStr(Option<&'a str>),
    Float(f64),
    OptFloat(Option<f64>),
    Value(&'a Value),
}

/// Where a record's fields go: a [`Value`] (the API's dicts) or JSON text (`to_json`). The record
/// shapes are written once, in the `visit_*` functions below, for both.
pub trait RecordSink {
    fn field(&mut self, key: &'static str, value: Field<'_>);
}

/// Builds the record as a [`Value`] object.
struct ValueSink(crate::value::Map);

impl RecordSink for ValueSink {
    fn field(&mut self, key: &'static str, value: Field<'_>) {
        let v = match value {
            Field::Str(s) => Value::Str(s.to_owned()),
            Field::OptStr(s) => s.map_or(Value::Null, |s| Value::Str(s.to_owned())),
            Field::Float(f) => Value::Float(f),
            Field::OptFloat(f) => f.map_or(Value::Null, Value::Float),
            Field::Value(v) => v.clone(),
        };
        self.0.push((key.into(), v));
    }
}

fn record(fields: usize, visit: impl FnOnce(&mut ValueSink)) -> Value {
    let mut sink = ValueSink(Vec::with_capacity(fields));
    visit(&mut sink);
    Value::Object(sink.0)
}

impl Dag {
    pub fn visit_node(&self, node: &Node, s: &mut impl RecordSink) {
        s.field("node_id", Field::Str(&node.id));
        s.field("node_type", Field::Str(node.node_type.as_str()));
        s.field("state", Field::Str(node.state.as_str()));
        s.field("input", Field::Value(node.input()));
        s.field("output", Field::Value(node.output()));
        s.field("output_preview", Field::Value(&node.output_preview()));
        s.field("metadata", Field::Value(node.metadata()));
        s.field(
            "retry_of_id",
            Field::OptStr(node.retry_of_id().map(|s| &**s)),
        );
        s.field(
            "compressed_by_id",
            Field::OptStr(node.compressed_by_id().map(|s| &**s)),
        );
        s.field("compressed_at", Field::OptFloat(node.compressed_at()));
        s.field("started_at", Field::OptFloat(node.started_at.get()));
        s.field("finished_at", Field::OptFloat(node.finished_at.get()));
        s.field("created_at", Field::Float(node.created_at));
    }

    pub fn visit_edge(&self, edge: &Edge, s: &mut impl RecordSink) {
        s.field("edge_id", Field::Str(&edge.id));
        s.field(
            "from_node_id",
            Field::Str(&self.nodes[edge.from as usize].id),
        );
        s.field("to_node_id", Field::Str(&self.nodes[edge.to as usize].id));
        s.field("edge_type", Field::Str(edge.edge_type.as_str()));
        s.field("metadata", Field::Value(edge.metadata()));
        s.field("compressed_at", Field::OptFloat(edge.compressed_at.get()));
        s.field("created_at", Field::Float(edge.created_at));
    }

    pub fn visit_event(event: &EventRef<'_>, s: &mut impl RecordSink) {
        s.field("event_type", Field::Str(event.event_type));
        s.field("subject_id", Field::Str(event.subject_id));
        s.field("particulars", Field::Value(&event.particulars_value()));
        s.field("created_at", Field::Float(event.created_at));
    }

    pub fn node_record(&self, node: &Node) -> Value {
        record(13, |s| self.visit_node(node, s))
    }

    pub fn edge_record(&self, edge: &Edge) -> Value {
        record(7, |s| self.visit_edge(edge, s))
    }

    pub fn event_record(&self, event: &Event) -> Value {
        record(4, |s| Dag::visit_event(&self.read_event(event), s))
    }

    /// Arena indexes of the nodes `nodes()` lists, sorted by id; the active view hides archived nodes.
    pub fn node_order(&self, include_compressed: bool) -> Vec<u32> {
        let mut nodes: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&n| include_compressed || self.node_active[n as usize])
            .collect();
        // While `ids_in_order` holds, arena order is id order: no string comparisons needed.
        if !self.ids_in_order {
            nodes.sort_unstable_by(|&a, &b| {
                self.nodes[a as usize].id.cmp(&self.nodes[b as usize].id)
            });
        }
        nodes
    }

    /// Arena indexes of the edges `edges()` lists, sorted by id; the active view keeps live edges only.
    pub fn edge_order(&self, include_compressed: bool) -> Vec<u32> {
        let mut edges: Vec<u32> = (0..self.edges.len() as u32)
            .filter(|&e| include_compressed || self.is_live(e))
            .collect();
        edges.sort_unstable_by(|&a, &b| self.edges[a as usize].id.cmp(&self.edges[b as usize].id));
        edges
    }

    /// Records sorted by id; the active view hides archived nodes and edges that are not live.
    pub fn node_records(&self, include_compressed: bool) -> Vec<Value> {
        self.node_order(include_compressed)
            .into_iter()
            .map(|n| self.node_record(&self.nodes[n as usize]))
            .collect()
    }

    pub fn edge_records(&self, include_compressed: bool) -> Vec<Value> {
        self.edge_order(include_compressed)
            .into_iter()
            .map(|e| self.edge_record(&self.edges[e as usize]))
            .collect()
    }
}
