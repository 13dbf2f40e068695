//! Bulk load of a stored graph: the rows a store holds (one record per node, edge and event, in arena order)
//! become an engine in one pass, with the same validation as `from_json` and no replay of operations.

use super::arena::Dag;
use super::error::{DagError, DagResult};
use super::persist::{edge_row, event_row, node_row};

/// Reads every row with `read`, on two threads when there are many: reading the JSON is most of a bulk
/// load, and the rows are independent (the 40,000-node chat: 160,000 rows). The first error in row order
/// wins.
fn read_rows<'a, T: Send>(
    rows: &[&'a str],
    read: impl Fn(&'a str) -> DagResult<T> + Sync,
) -> DagResult<Vec<T>> {
    const PARALLEL_FROM: usize = 4_096;
    let read_all = |part: &[&'a str]| part.iter().map(|r| read(r)).collect::<DagResult<Vec<_>>>();
    if rows.len() < PARALLEL_FROM {
        return read_all(rows);
    }
    let (first, second) = rows.split_at(rows.len() / 2);
    let (a, b) = std::thread::scope(|scope| {
        let other = scope.spawn(|| read_all(second));
        let mine = read_all(first);
        // A panic in the reader is a bug; reported as a load error rather than unwinding further.
        (
            mine,
            other
                .join()
                .unwrap_or_else(|_| Err(DagError::invalid("record reader panicked"))),
        )
    });
    let mut values = a?;
    values.extend(b?);
    Ok(values)
}

/// The records of `rows` in arena order. A store reads them in whatever order its database returns
/// (sorting on the server was a sixth of a PostgreSQL load when its statistics were stale); rows are put in
/// order here, and every position must be there exactly once.
fn in_arena_order<'a>(what: &str, rows: &[RecordRow<'a>]) -> DagResult<Vec<&'a str>> {
    let mut sorted;
    let mut rows = rows;
    if !rows.windows(2).all(|w| w[0].0 < w[1].0) {
        sorted = rows.to_vec();
        sorted.sort_unstable_by_key(|r| r.0);
        rows = &sorted;
    }
    rows.iter()
        .enumerate()
        .map(|(at, &(seq, text))| match seq.cmp(&at) {
            std::cmp::Ordering::Equal => Ok(text),
            std::cmp::Ordering::Greater => Err(DagError::invalid(format!(
                "invalid graph rows: {what} row {at} is missing"
            ))),
            std::cmp::Ordering::Less => Err(DagError::invalid(format!(
                "invalid graph rows: {what} row {seq} appears twice"
            ))),
        })
        .collect()
}

impl Dag {
    /// Builds a graph from stored record rows (`(arena position, record JSON)`, in any order), with the same
    /// validation as `from_json` and no replay of operations.
    pub fn from_records(
        graph_id: &str,
        nodes: &[RecordRow<'_>],
        edges: &[RecordRow<'_>],
        events: &[RecordRow<'_>],
    ) -> DagResult<Dag> {
        let nodes = in_arena_order("node", nodes)?;
        let edges = in_arena_order("edge", edges)?;
        let events = in_arena_order("event", events)?;
        let mut dag = Dag::new(Some(graph_id.to_owned()));
        dag.reserve(nodes.len(), edges.len());
        for node in read_rows(&nodes, node_row)? {
            dag.add_loaded_node(node)?;
        }
        for edge in read_rows(&edges, edge_row)? {
            dag.add_loaded_edge(edge)?;
        }
        let events = read_rows(&events, |row| event_row(row, &dag))?;
        dag.events = events.into_iter().collect();
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
            let mut node = node_row(text)?;
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
            } else if seq == self.nodes.len() && !self.node_index.contains(&node.id, &self.nodes) {
                touched.push(self.push_node(node));
            } else {
                return Err(DagError::invalid(format!(
                    "node row {seq} does not follow the arena"
                )));
            }
        }
        for &(seq, text) in edges {
            let edge = self.resolve_edge(edge_row(text)?)?;
            if seq < self.edges.len() {
                let old = &mut self.edges[seq];
                if old.id != edge.id {
                    return Err(DagError::invalid(format!("edge row {seq} changed its id")));
                }
                old.metadata = edge.metadata;
                old.compressed_at = edge.compressed_at;
                let (from, to, active) = (old.from, old.to, old.compressed_at.is_none());
                touched.extend([from, to]);
                self.edge_key_removed(seq as u32);
                self.hot[seq].active = active;
                self.edge_key_restored(seq as u32);
            } else if seq == self.edges.len() && !self.edge_index.contains(&edge.id, &self.edges) {
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
            let event = event_row(text, self)?;
            self.events.push(event);
        }
        for n in touched {
            self.dirty_neighbourhood(n);
        }
        self.flush();
        Ok(())
    }
}
