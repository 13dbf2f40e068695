//! Bulk load of a stored graph: the rows a store holds (one record per node, edge and event, in arena order)
//! become an engine in one pass, with the same validation as `from_json` and no replay of operations.

use super::arena::Dag;
use super::error::{DagError, DagResult};
use super::persist::{parse_edge, parse_event, parse_node, parse_record, record_id};
use crate::value::Value;

/// Parses every record row, on two threads when there are many: JSON parsing is most of a bulk load, and
/// the rows are independent (the 40,000-node chat: 160,000 rows). The first error in row order wins.
fn parse_rows(rows: &[&str]) -> DagResult<Vec<Value>> {
    const PARALLEL_FROM: usize = 4_096;
    let parse = |part: &[&str]| {
        part.iter()
            .map(|r| parse_record(r))
            .collect::<DagResult<Vec<_>>>()
    };
    if rows.len() < PARALLEL_FROM {
        return parse(rows);
    }
    let (first, second) = rows.split_at(rows.len() / 2);
    let (a, b) = std::thread::scope(|scope| {
        let other = scope.spawn(|| parse(second));
        let mine = parse(first);
        // A panic in the parser is a bug; reported as a load error rather than unwinding further.
        (
            mine,
            other
                .join()
                .unwrap_or_else(|_| Err(DagError::invalid("record parser panicked"))),
        )
    });
    let mut values = a?;
    values.extend(b?);
    Ok(values)
}

impl Dag {
    /// Builds a graph from stored record rows (each the JSON of one node / edge / event record), with the
    /// same validation as `from_json` and no replay of operations.
    pub fn from_records<'a>(
        graph_id: &str,
        nodes: impl IntoIterator<Item = &'a str>,
        edges: impl IntoIterator<Item = &'a str>,
        events: impl IntoIterator<Item = &'a str>,
    ) -> DagResult<Dag> {
        let nodes: Vec<&str> = nodes.into_iter().collect();
        let edges: Vec<&str> = edges.into_iter().collect();
        let events: Vec<&str> = events.into_iter().collect();
        let all: Vec<&str> = nodes.iter().chain(&edges).chain(&events).copied().collect();
        let mut values = parse_rows(&all)?;
        let events_v = values.split_off(nodes.len() + edges.len());
        let edges_v = values.split_off(nodes.len());
        let mut dag = Dag::new(Some(graph_id.to_owned()));
        dag.load_nodes(values)?;
        dag.load_edges(edges_v)?;
        dag.load_events(events_v)?;
        dag.finish_load()
    }
}

/// A row of a change committed elsewhere: arena position and record JSON.
pub type RecordRow<'a> = (usize, &'a str);

impl Dag {
    /// Catch-up: applies rows other processes committed (new or rewritten nodes and edges, new events) in
    /// place, then recomputes the derived state of what they touch — O(rows + their neighbourhood), not a
    /// reload. On error the graph is in an unknown state and must be reloaded (the store does).
    pub fn apply_records(
        &mut self,
        nodes: &[RecordRow<'_>],
        edges: &[RecordRow<'_>],
        events: &[RecordRow<'_>],
    ) -> DagResult<()> {
        if self.txn_depth() != 0 {
            return Err(DagError::invalid("cannot catch up inside a mutate() block"));
        }
        let mut touched: Vec<u32> = Vec::new();
        for &(seq, text) in nodes {
            let mut rec = parse_record(text)?;
            let id = record_id(&mut rec, "node_id")?;
            let mut node = parse_node(&mut rec, id)?;
            if seq < self.nodes.len() {
                let old = &self.nodes[seq];
                if old.id != node.id {
                    return Err(DagError::invalid(format!("node row {seq} changed its id")));
                }
                node.id = old.id.clone();
                // Which derived sets the node is in stays the arena's: the refresh below diffs against it.
                node.in_sets = old.in_sets;
                self.node_active[seq] = node.is_active();
                self.nodes[seq] = node;
                touched.push(seq as u32);
            } else if seq == self.nodes.len() && !self.node_index.contains_key(&*node.id) {
                touched.push(self.push_node(node));
            } else {
                return Err(DagError::invalid(format!(
                    "node row {seq} does not follow the arena"
                )));
            }
        }
        for &(seq, text) in edges {
            let mut rec = parse_record(text)?;
            let id = record_id(&mut rec, "edge_id")?;
            let edge = parse_edge(self, &mut rec, id)?;
            if seq < self.edges.len() {
                let old = &mut self.edges[seq];
                if old.id != edge.id {
                    return Err(DagError::invalid(format!("edge row {seq} changed its id")));
                }
                old.metadata = edge.metadata;
                old.compressed_at = edge.compressed_at;
                let (from, to, t, at) = (old.from, old.to, old.edge_type, old.compressed_at);
                self.hot[seq].active = at.is_none();
                if at.is_none() {
                    self.active_keys.insert((from, to, t), seq as u32);
                } else if self.active_keys.get(&(from, to, t)) == Some(&(seq as u32)) {
                    self.active_keys.remove(&(from, to, t));
                }
                touched.extend([from, to]);
            } else if seq == self.edges.len() && !self.edge_index.contains_key(&*edge.id) {
                self.push_edge(edge);
            } else {
                return Err(DagError::invalid(format!(
                    "edge row {seq} does not follow the arena"
                )));
            }
        }
        for &(seq, text) in events {
            if seq < self.events.len() {
                continue;
            }
            if seq > self.events.len() {
                return Err(DagError::invalid(format!("event row {seq} leaves a gap")));
            }
            self.events.push(parse_event(&mut parse_record(text)?)?);
        }
        for n in touched {
            self.dirty_neighbourhood(n);
        }
        self.flush();
        Ok(())
    }
}
