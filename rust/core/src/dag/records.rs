//! Nodes, edges and events as plain records (the dict shapes of the API and of the JSON file).

use super::arena::{Dag, Edge, Node};
use super::events::{obj, Event};
use super::value::Value;

fn opt_str(s: &Option<std::sync::Arc<str>>) -> Value {
    s.as_ref()
        .map_or(Value::Null, |s| Value::Str(s.to_string()))
}

fn opt_f64(f: Option<f64>) -> Value {
    f.map_or(Value::Null, Value::Float)
}

impl Dag {
    pub fn node_record(&self, node: &Node) -> Value {
        obj(vec![
            ("node_id", Value::Str(node.id.to_string())),
            ("node_type", Value::Str(node.node_type.as_str().into())),
            ("state", Value::Str(node.state.as_str().into())),
            ("input", node.input.clone()),
            ("output", node.output.clone()),
            ("output_preview", node.output_preview.clone()),
            ("metadata", node.metadata.clone()),
            ("retry_of_id", opt_str(&node.retry_of_id)),
            ("compressed_by_id", opt_str(&node.compressed_by_id)),
            ("compressed_at", opt_f64(node.compressed_at)),
            ("started_at", opt_f64(node.started_at)),
            ("finished_at", opt_f64(node.finished_at)),
            ("created_at", Value::Float(node.created_at)),
        ])
    }

    pub fn edge_record(&self, edge: &Edge) -> Value {
        obj(vec![
            ("edge_id", Value::Str(edge.id.to_string())),
            (
                "from_node_id",
                Value::Str(self.nodes[edge.from as usize].id.to_string()),
            ),
            (
                "to_node_id",
                Value::Str(self.nodes[edge.to as usize].id.to_string()),
            ),
            ("edge_type", Value::Str(edge.edge_type.as_str().into())),
            ("metadata", edge.metadata.clone()),
            ("compressed_at", opt_f64(edge.compressed_at)),
            ("created_at", Value::Float(edge.created_at)),
        ])
    }

    pub fn event_record(event: &Event) -> Value {
        obj(vec![
            ("event_type", Value::Str(event.event_type().into())),
            ("subject_id", Value::Str(event.subject_id.to_string())),
            ("particulars", event.particulars_value()),
            ("created_at", Value::Float(event.created_at)),
        ])
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
