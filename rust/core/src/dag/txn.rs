//! Undo log behind `mutate()`: nested savepoints, rolled back in reverse order.
//!
//! Every public operation validates before it writes, so a lone failed call never needs this; the log exists
//! for blocks of several calls that must vanish together when the caller's block raises.

use rustc_hash::FxHashMap;

use super::arena::{Dag, Node};
use super::delta::Mark;

/// Scratch buffers keep this much room between uses; what a large block grew beyond it is returned.
pub(crate) const KEEP: usize = 1_024;

/// Empties a scratch buffer, returning what it grew beyond [`KEEP`].
pub(crate) fn release<T>(v: &mut Vec<T>) {
    v.clear();
    v.shrink_to(KEEP);
}

pub(crate) enum Undo {
    /// A run of nodes and edges added one after another, in any interleaving: undone by removing its edges,
    /// newest first, then its nodes, newest first. An edge of the run names only nodes made before it, so
    /// every node is bare of edges by the time it is removed, and a build's log stays one entry long
    /// (docs/dag.md "Memory").
    Added {
        nodes: u32,
        edges: u32,
    },
    NodeSaved(u32, Box<Node>),
    EdgeSaved(u32, Option<f64>),
}

struct Savepoint {
    id: u64,
    log_len: usize,
    /// Where the block started: the same [`Mark`] a store takes before a change.
    start: Mark,
}

/// What a committed block did: where it started (pass it to [`Dag::delta_since`] for its rows, rendered only
/// when a store asks, so an in-memory block of 200,000 nodes pays nothing for them) and the agent messages
/// the outermost commit's leaf repair added (docs/dag.md "Stores and workers").
#[derive(Debug, Default, PartialEq)]
pub struct Commit {
    pub start: Mark,
    pub repaired: Vec<String>,
}

#[derive(Default)]
pub(crate) struct Txn {
    log: Vec<Undo>,
    savepoints: Vec<Savepoint>,
    /// Arena slot -> savepoint that already holds its pre-image, so each slot is cloned once per level.
    saved_nodes: FxHashMap<u32, u64>,
    saved_edges: FxHashMap<u32, u64>,
    next_id: u64,
}

impl Txn {
    pub fn depth(&self) -> usize {
        self.savepoints.len()
    }

    #[cfg(test)]
    pub fn log_capacity(&self) -> usize {
        self.log.capacity()
    }

    #[cfg(test)]
    pub fn log_len(&self) -> usize {
        self.log.len()
    }

    pub fn log_node_added(&mut self) {
        if let Some((nodes, _)) = self.open_run() {
            *nodes += 1;
        }
    }

    pub fn log_edge_added(&mut self) {
        if let Some((_, edges)) = self.open_run() {
            *edges += 1;
        }
    }

    /// The counts of the run of additions the innermost savepoint's log ends with, started here when the log
    /// ends with anything else (or with a run that belongs to an outer savepoint); `None` outside a block.
    fn open_run(&mut self) -> Option<(&mut u32, &mut u32)> {
        let sp = self.savepoints.last()?;
        let continues =
            self.log.len() > sp.log_len && matches!(self.log.last(), Some(Undo::Added { .. }));
        if !continues {
            self.log.push(Undo::Added { nodes: 0, edges: 0 });
        }
        match self.log.last_mut() {
            Some(Undo::Added { nodes, edges }) => Some((nodes, edges)),
            _ => None,
        }
    }
}

impl Dag {
    pub fn txn_depth(&self) -> usize {
        self.txn.depth()
    }

    pub fn begin(&mut self) {
        self.flush();
        self.txn.next_id += 1;
        let sp = Savepoint {
            id: self.txn.next_id,
            log_len: self.txn.log.len(),
            start: self.change_mark(),
        };
        self.txn.savepoints.push(sp);
    }

    pub(crate) fn save_node(&mut self, n: u32) {
        let Some(sp) = self.txn.savepoints.last() else {
            return;
        };
        if (n as usize) >= sp.start.nodes || self.txn.saved_nodes.get(&n) == Some(&sp.id) {
            return;
        }
        let id = sp.id;
        self.txn
            .log
            .push(Undo::NodeSaved(n, Box::new(self.nodes[n as usize].clone())));
        self.txn.saved_nodes.insert(n, id);
    }

    pub(crate) fn save_edge(&mut self, e: u32) {
        let Some(sp) = self.txn.savepoints.last() else {
            return;
        };
        if (e as usize) >= sp.start.edges || self.txn.saved_edges.get(&e) == Some(&sp.id) {
            return;
        }
        let id = sp.id;
        self.txn.log.push(Undo::EdgeSaved(
            e,
            self.edges[e as usize].compressed_at.get(),
        ));
        self.txn.saved_edges.insert(e, id);
    }

    /// Keeps the innermost savepoint's changes; the outermost commit runs leaf repair first (docs/design.md §7)
    /// unless the graph was made without it.
    ///
    /// With no open block there is nothing to keep: the commit is empty and starts where the graph is.
    pub fn commit(&mut self) -> Commit {
        let repaired = if self.txn.depth() == 1 {
            self.auto_repair()
        } else {
            Vec::new()
        };
        let start = match self.txn.savepoints.pop() {
            Some(sp) => sp.start,
            None => self.change_mark(),
        };
        if self.txn.savepoints.is_empty() {
            // A big block's undo log is released, not kept: cleared in place it held 16 to 32 bytes per
            // row the block wrote, for the life of the graph (docs/dag.md "Mutations are atomic").
            release(&mut self.txn.log);
            self.txn.saved_nodes.clear();
            self.txn.saved_edges.clear();
            self.txn.saved_nodes.shrink_to(KEEP);
            self.txn.saved_edges.shrink_to(KEEP);
        }
        Commit { start, repaired }
    }

    /// Undoes everything since the innermost `begin`.
    pub fn rollback(&mut self) {
        let Some(sp) = self.txn.savepoints.pop() else {
            return;
        };
        self.flush();
        let mut touched: Vec<u32> = Vec::new();
        while self.txn.log.len() > sp.log_len {
            match self.txn.log.pop().expect("log longer than savepoint") {
                Undo::Added { nodes, edges } => {
                    for _ in 0..edges {
                        self.undo_edge_added(&mut touched);
                    }
                    for _ in 0..nodes {
                        self.undo_node_added();
                    }
                }
                Undo::NodeSaved(n, mut node) => {
                    self.node_active[n as usize] = node.is_active();
                    // Set membership is not part of the pre-image: the sets themselves are not rolled back
                    // here, and the refresh below brings both back together.
                    node.in_sets = self.nodes[n as usize].in_sets;
                    self.nodes[n as usize] = *node;
                    touched.push(n);
                }
                Undo::EdgeSaved(e, at) => {
                    let edge = &mut self.edges[e as usize];
                    edge.compressed_at = at.into();
                    touched.extend([edge.from, edge.to]);
                    self.hot[e as usize].active = at.is_none();
                    if at.is_none() {
                        self.edge_key_restored(e);
                    }
                }
            }
        }
        self.events.truncate(sp.start.events);
        if !self.ids_in_order {
            self.recheck_id_order();
        }
        if self.txn.savepoints.is_empty() {
            self.txn.saved_nodes.clear();
            self.txn.saved_edges.clear();
        }
        for n in touched {
            if (n as usize) < self.nodes.len() {
                self.dirty_neighbourhood(n);
            }
        }
        self.flush();
    }

    /// Removes the newest node, which has no edges left.
    fn undo_node_added(&mut self) {
        let node = self.nodes.pop().expect("node to undo");
        self.node_active.pop();
        self.out_adj.pop();
        self.in_adj.pop();
        self.edge_keys.node_removed();
        self.node_index.remove(&node.id);
        let n = self.nodes.len() as u32;
        for set in self.sets.all_mut() {
            set.remove(n, &node.id);
        }
    }

    /// Removes the newest edge; its ends go to `touched` for the refresh.
    fn undo_edge_added(&mut self, touched: &mut Vec<u32>) {
        let i = self.edges.len() as u32 - 1;
        self.edge_key_removed(i);
        let edge = self.edges.pop().expect("edge to undo");
        self.hot.pop();
        let popped_out = self.out_adj[edge.from as usize].pop();
        let popped_in = self.in_adj[edge.to as usize].pop();
        debug_assert_eq!((popped_out, popped_in), (Some(i), Some(i)));
        self.edge_index.remove(&edge.id);
        touched.extend([edge.from, edge.to]);
    }
}
