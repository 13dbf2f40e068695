//! Incremental bookkeeping: per-node counters and the ready / doomed / leaf sets derived from them.
//!
//! A state change adjusts its children's counters by delta (O(out-degree)); structural changes (edges added
//! or archived, nodes archived, rollbacks) mark nodes dirty and `flush` recomputes them from their
//! neighbourhood. Both paths converge on what `refresh` computes from scratch, which the invariant check uses.

use super::arena::{Dag, EdgeHot, Node};
use super::types::{EdgeType, NodeType, State};

impl Node {
    /// The sets this node belongs in, as `in_sets` bits.
    #[inline]
    pub(crate) fn wanted_sets(&self) -> u8 {
        let active = self.is_active();
        let schedulable = active && self.state == State::Pending && self.node_type.is_executable();
        let ready = schedulable && self.blockers == 0;
        let doomed = schedulable && self.failed_deps > 0;
        let leaf = active && self.out_blocking == 0;
        let bad_leaf = leaf && self.state.is_terminal() && self.node_type != NodeType::AgentMessage;
        let running = active && self.state == State::Running;
        u8::from(ready)
            | u8::from(doomed) << 1
            | u8::from(leaf) << 2
            | u8::from(bad_leaf) << 3
            | u8::from(running) << 4
    }
}

impl Dag {
    /// Recomputes one node's counters from its live edges.
    pub(crate) fn refresh(&mut self, n: u32) {
        let (mut blockers, mut failed, mut out) = (0u32, 0u32, 0u32);
        if self.nodes[n as usize].is_active() {
            for e in self.live_in(n) {
                if e.edge_type.is_blocking() {
                    let parent = self.nodes[e.from as usize].state;
                    if !e.edge_type.unblocks(parent) {
                        blockers += 1;
                    }
                    if e.edge_type == EdgeType::Dependency && parent.is_failed() {
                        failed += 1;
                    }
                }
            }
            out = self
                .live_out(n)
                .filter(|e| e.edge_type.is_blocking())
                .count() as u32;
        }
        let node = &mut self.nodes[n as usize];
        node.blockers = blockers;
        node.failed_deps = failed;
        node.out_blocking = out;
        self.update_sets(n);
    }

    /// Adds a new edge to its endpoints' counters by delta: recounting the source's out-edges would make a
    /// fan-out of k children cost O(k²). A node that is dirty gets recomputed later anyway.
    pub(crate) fn count_new_edge(&mut self, e: u32) {
        if !self.is_live(e) {
            return;
        }
        let EdgeHot {
            from,
            to,
            edge_type,
            ..
        } = self.hot[e as usize];
        if !edge_type.is_blocking() {
            return;
        }
        let source = &mut self.nodes[from as usize];
        let parent = source.state;
        source.out_blocking += 1;
        // Only the source's leaf status reads its out-edges: its sets change with its first one alone.
        let first_out = source.out_blocking == 1;
        let child = &mut self.nodes[to as usize];
        child.blockers += u32::from(!edge_type.unblocks(parent));
        child.failed_deps += u32::from(edge_type == EdgeType::Dependency && parent.is_failed());
        if first_out {
            self.update_sets(from);
        }
        self.update_sets(to);
    }

    pub(crate) fn update_sets(&mut self, n: u32) {
        let Dag { nodes, sets, .. } = self;
        let node = &mut nodes[n as usize];
        let want = node.wanted_sets();
        let changed = want ^ node.in_sets;
        if changed == 0 {
            return;
        }
        node.in_sets = want;
        sets.apply(n, &node.id, want, changed);
    }

    pub(crate) fn flush(&mut self) {
        if self.dirty.is_empty() {
            return;
        }
        let dirty = std::mem::take(&mut self.dirty);
        self.marks.start(self.nodes.len());
        for &n in &dirty {
            if (n as usize) < self.nodes.len() && self.marks.mark(n) {
                self.refresh(n);
            }
        }
        let mut dirty = dirty;
        super::txn::release(&mut dirty);
        self.dirty = dirty;
    }

    /// Marks a node and every neighbour (through any edge, live or not) for recomputation.
    pub(crate) fn dirty_neighbourhood(&mut self, n: u32) {
        self.dirty.push(n);
        for &e in &self.in_adj[n as usize] {
            self.dirty.push(self.edges[e as usize].from);
        }
        for &e in &self.out_adj[n as usize] {
            self.dirty.push(self.edges[e as usize].to);
        }
    }

    /// The one place a state is written; callers have checked the transition is allowed.
    pub(crate) fn set_state(&mut self, n: u32, to: State, at: f64) {
        self.flush();
        self.save_node(n);
        let from = self.nodes[n as usize].state;
        {
            let node = &mut self.nodes[n as usize];
            node.state = to;
            if from == State::Pending && to == State::Running {
                node.started_at = Some(at).into();
            }
            if to.is_terminal() {
                node.finished_at = Some(at).into();
            }
        }
        if self.nodes[n as usize].is_active() {
            let children: Vec<(u32, EdgeType)> = self
                .live_out(n)
                .filter(|e| e.edge_type.is_blocking())
                .map(|e| (e.to, e.edge_type))
                .collect();
            for (c, t) in children {
                let child = &mut self.nodes[c as usize];
                child.blockers =
                    child.blockers + u32::from(!t.unblocks(to)) - u32::from(!t.unblocks(from));
                if t == EdgeType::Dependency {
                    child.failed_deps =
                        child.failed_deps + u32::from(to.is_failed()) - u32::from(from.is_failed());
                }
                self.update_sets(c);
            }
        }
        self.update_sets(n);
        self.record_state_change(n, from, to, at);
    }

    pub(crate) fn archive_edge(&mut self, e: u32, at: f64) -> bool {
        if self.edges[e as usize].compressed_at.is_some() {
            return false;
        }
        self.save_edge(e);
        self.edge_key_removed(e);
        let edge = &mut self.edges[e as usize];
        edge.compressed_at = Some(at).into();
        self.hot[e as usize].active = false;
        let (from, to) = (edge.from, edge.to);
        self.dirty.push(from);
        self.dirty.push(to);
        true
    }

    /// Archives a node with all its incident edges (docs/dag-rules.md §1.2); returns the edges it archived.
    pub(crate) fn archive_node(&mut self, n: u32, by: &crate::ids::Id, at: f64) -> Vec<u32> {
        self.save_node(n);
        {
            let node = &mut self.nodes[n as usize];
            node.set_archived(by.clone(), at);
        }
        self.node_active[n as usize] = false;
        let incident: Vec<u32> = self.in_adj[n as usize]
            .iter()
            .chain(self.out_adj[n as usize].iter())
            .copied()
            .collect();
        let mut archived = Vec::new();
        for e in incident {
            if self.archive_edge(e, at) {
                archived.push(e);
            }
        }
        self.dirty_neighbourhood(n);
        archived
    }
}
