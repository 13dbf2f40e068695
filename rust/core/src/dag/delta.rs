//! The delta of a committed change, for a durable store (docs/dag.md "Stores and workers").
//!
//! The arena only appends, so nodes and edges created by a change are those past the arena lengths at its
//! start; every other write records an event whose subject or particulars name what it touched (state
//! changes, archived, replaced or compressed nodes and edges). So the delta is: the appended nodes and edges,
//! the events appended since the start, and the current record of every node and edge those events name. A
//! store writes exactly those rows (O(change), not O(graph)).

use rustc_hash::FxHashSet;

use super::arena::Dag;
use super::events::Particulars;
use crate::json;
use crate::value::Value;

/// One row to upsert: arena position (creation order, kept by the store so a load rebuilds the same arena),
/// id and the record as compact JSON (the same shape as in `to_json`).
pub type Row = (usize, String, String);

/// Nodes, edges and events (position, record JSON) written since the event log had `since_events` entries.
#[derive(Debug, Default, PartialEq)]
pub struct Delta {
    pub nodes: Vec<Row>,
    pub edges: Vec<Row>,
    pub events: Vec<(usize, String)>,
}

impl Delta {
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty() && self.edges.is_empty() && self.events.is_empty()
    }
}

/// Every string of an event's particulars as the API shows them, read from a typed shape without rendering
/// it: any of them may name a node or an edge.
fn particular_strings<'a>(p: &Particulars<'a>, out: &mut Vec<&'a str>) {
    match *p {
        Particulars::NodeCreated { node_type, state } => {
            out.extend([node_type.as_str(), state.as_str()]);
        }
        Particulars::EdgeCreated {
            edge_type,
            from,
            to,
        } => out.extend([edge_type.as_str(), from, to]),
        Particulars::StateChanged { from, to } => out.extend([from.as_str(), to.as_str()]),
        Particulars::LeafRepaired { leaf } => out.push(leaf),
        Particulars::Other { particulars } => collect_strings(particulars, out),
    }
}

fn collect_strings<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
    match v {
        Value::Str(s) => out.push(s),
        Value::Array(items) => items.iter().for_each(|i| collect_strings(i, out)),
        Value::Object(m) => m.iter().for_each(|(_, i)| collect_strings(i, out)),
        _ => {}
    }
}

/// Where a change starts: the lengths of the event log, the node arena and the edge arena.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    pub events: usize,
    pub nodes: usize,
    pub edges: usize,
}

impl Dag {
    pub fn change_mark(&self) -> Mark {
        Mark {
            events: self.events.len(),
            nodes: self.nodes.len(),
            edges: self.edges.len(),
        }
    }

    /// The delta since `mark`; `extra_nodes` names nodes changed without an event (a lease renewed by a
    /// heartbeat). Unknown extra ids are ignored.
    pub fn delta_since(&self, mark: Mark, extra_nodes: &[String]) -> Delta {
        let since = mark.events.min(self.events.len());
        let mut names: Vec<&str> = extra_nodes.iter().map(String::as_str).collect();
        for ev in self.events_from(since) {
            names.push(ev.subject_id);
            particular_strings(&ev.particulars, &mut names);
        }
        let mut nodes: FxHashSet<u32> =
            (mark.nodes.min(self.nodes.len()) as u32..self.nodes.len() as u32).collect();
        let mut edges: FxHashSet<u32> =
            (mark.edges.min(self.edges.len()) as u32..self.edges.len() as u32).collect();
        for name in names {
            if let Some(n) = self.node_index.get(name, &self.nodes) {
                nodes.insert(n);
            }
            if let Some(e) = self.edge_index.get(name, &self.edges) {
                edges.insert(e);
            }
        }
        let mut nodes: Vec<u32> = nodes.into_iter().collect();
        let mut edges: Vec<u32> = edges.into_iter().collect();
        nodes.sort_unstable();
        edges.sort_unstable();
        Delta {
            nodes: nodes
                .into_iter()
                .map(|n| {
                    let node = &self.nodes[n as usize];
                    let rec = json::to_string(&self.node_record(node), json::Layout::Compact);
                    (n as usize, node.id.to_string(), rec)
                })
                .collect(),
            edges: edges
                .into_iter()
                .map(|e| {
                    let edge = &self.edges[e as usize];
                    let rec = json::to_string(&self.edge_record(edge), json::Layout::Compact);
                    (e as usize, edge.id.to_string(), rec)
                })
                .collect(),
            events: self
                .events
                .iter_from(since)
                .enumerate()
                .map(|(i, ev)| {
                    (
                        since + i,
                        json::to_string(&self.event_record(ev), json::Layout::Compact),
                    )
                })
                .collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::{NodeSpec, Value};

    /// A typed event's strings, read without rendering, are the strings of the object the API shows.
    #[test]
    fn typed_strings_are_the_shown_particulars_strings() {
        let mut g = Dag::new(None);
        let content = || NodeSpec {
            content: Some(Value::Str("hi".into())),
            ..NodeSpec::default()
        };
        let u = g
            .create_node("user_message", "finished", content())
            .unwrap();
        let t = g
            .create_node("task", "pending", NodeSpec::default())
            .unwrap();
        g.create_edge(&u, &t, "sequence", None, None).unwrap();
        g.mark_running(&t).unwrap();
        g.create_node("user_message", "finished", content())
            .unwrap();
        assert_eq!(g.repair_leaves().len(), 1);
        let listed = Value::Array(vec![Value::Str(t.to_string()), Value::Int(1)]);
        g.record(
            "custom",
            &u,
            Value::Object(vec![("ids".into(), listed)]),
            1.0,
        );
        let mut kinds = FxHashSet::default();
        for ev in g.events() {
            let (mut typed, mut shown) = (Vec::new(), Vec::new());
            particular_strings(&ev.particulars, &mut typed);
            let value = ev.particulars_value();
            collect_strings(&value, &mut shown);
            assert_eq!(typed, shown, "{}", ev.event_type);
            kinds.insert(ev.event_type);
        }
        assert_eq!(kinds.len(), 5, "{kinds:?}");
    }
}
