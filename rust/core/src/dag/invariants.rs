//! Self-checks: the structural rules of docs/dag-rules.md §1.2 and the bookkeeping, recomputed from scratch.

use super::arena::Dag;
use super::types::{NodeType, State};

impl Dag {
    /// Kahn over every live edge (all types): docs/design.md §9 keeps the whole active graph acyclic.
    pub fn active_is_acyclic(&self) -> bool {
        let mut indegree = vec![0u32; self.nodes.len()];
        for e in 0..self.edges.len() as u32 {
            if self.is_live(e) {
                indegree[self.edges[e as usize].to as usize] += 1;
            }
        }
        let mut stack: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&n| indegree[n as usize] == 0)
            .collect();
        let mut seen = 0;
        while let Some(n) = stack.pop() {
            seen += 1;
            for &e in &self.out_adj[n as usize] {
                if self.is_live(e) {
                    let to = self.edges[e as usize].to;
                    indegree[to as usize] -= 1;
                    if indegree[to as usize] == 0 {
                        stack.push(to);
                    }
                }
            }
        }
        seen == self.nodes.len()
    }

    /// Every leaf obeys docs/dag-rules.md §5.2.
    pub fn leaves_valid(&mut self) -> bool {
        self.flush();
        self.sets.bad_leaves.is_empty()
    }

    /// Returns a description of the first broken invariant, if any.
    pub fn check_invariants(&mut self) -> Result<(), String> {
        self.flush();
        for (n, node) in self.nodes.iter().enumerate() {
            if self.node_active[n] != node.is_active() {
                return Err(format!("activity mirror is stale for node {}", node.id));
            }
        }
        let in_order = self
            .nodes
            .iter()
            .zip(self.nodes.iter().skip(1))
            .all(|(a, b)| a.id < b.id);
        if self.ids_in_order && !in_order {
            return Err("ids_in_order claims an order the ids do not have".into());
        }
        for (i, edge) in self.edges.iter().enumerate() {
            let h = self.hot[i];
            if (h.from, h.to, h.edge_type, h.active)
                != (
                    edge.from,
                    edge.to,
                    edge.edge_type,
                    edge.compressed_at.is_none(),
                )
            {
                return Err(format!("hot mirror is stale for edge {}", edge.id));
            }
            if edge.compressed_at.is_none() {
                for end in [edge.from, edge.to] {
                    if !self.nodes[end as usize].is_active() {
                        return Err(format!(
                            "active edge {} touches inactive node {}",
                            edge.id, self.nodes[end as usize].id
                        ));
                    }
                }
                if self.active_edge(edge.from, edge.to, edge.edge_type) != Some(i as u32) {
                    return Err(format!("active edge {} is not found by its key", edge.id));
                }
            } else if self.active_edge(edge.from, edge.to, edge.edge_type) == Some(i as u32) {
                return Err(format!("archived edge {} is found by its key", edge.id));
            }
            if self.edge_index.get(&edge.id, &self.edges) != Some(i as u32) {
                return Err(format!("edge {} is not found by its id", edge.id));
            }
        }
        for (n, node) in self.nodes.iter().enumerate() {
            if self.node_index.get(&node.id, &self.nodes) != Some(n as u32) {
                return Err(format!("node {} is not found by its id", node.id));
            }
        }
        if (self.node_index.len(), self.edge_index.len()) != (self.nodes.len(), self.edges.len()) {
            return Err("an id index holds ids the arena does not".into());
        }
        if !self.active_is_acyclic() {
            return Err("the active graph has a cycle".into());
        }
        let counters: Vec<(u32, u32, u32)> = self
            .nodes
            .iter()
            .map(|n| (n.blockers, n.failed_deps, n.out_blocking))
            .collect();
        for (n, node) in self.nodes.iter().enumerate() {
            let held = [
                &self.sets.ready,
                &self.sets.doomed,
                &self.sets.leaves,
                &self.sets.bad_leaves,
                &self.sets.running,
            ]
            .iter()
            .enumerate()
            .fold(0u8, |bits, (i, set)| {
                bits | u8::from(set.contains(n as u32, &node.id)) << i
            });
            if held != node.in_sets {
                return Err(format!("set membership bits are stale on {}", node.id));
            }
        }
        // Each set as it reads: its members, smallest id first.
        let sets: Vec<Vec<u32>> = self.sets.all().iter().map(|s| s.iter().collect()).collect();
        for n in 0..self.nodes.len() as u32 {
            self.refresh(n);
        }
        for (n, before) in counters.iter().enumerate() {
            let node = &self.nodes[n];
            if *before != (node.blockers, node.failed_deps, node.out_blocking) {
                return Err(format!("stale counters on {}", node.id));
            }
        }
        let expect = |f: &dyn Fn(&super::arena::Node) -> bool| -> Vec<u32> {
            let mut members: Vec<u32> = (0..self.nodes.len() as u32)
                .filter(|&n| f(&self.nodes[n as usize]))
                .collect();
            members.sort_by(|&a, &b| self.nodes[a as usize].id.cmp(&self.nodes[b as usize].id));
            members
        };
        let sched = |n: &super::arena::Node| {
            n.is_active() && n.state == State::Pending && n.node_type.is_executable()
        };
        let want_ready = expect(&|n| sched(n) && n.blockers == 0);
        let want_doomed = expect(&|n| sched(n) && n.failed_deps > 0);
        let want_leaves = expect(&|n| n.is_active() && n.out_blocking == 0);
        let want_bad = expect(&|n| {
            n.is_active()
                && n.out_blocking == 0
                && n.state.is_terminal()
                && n.node_type != NodeType::AgentMessage
        });
        let want_running = expect(&|n| n.is_active() && n.state == State::Running);
        if sets != [want_ready, want_doomed, want_leaves, want_bad, want_running] {
            return Err("derived sets differ from a recomputation".into());
        }
        Ok(())
    }
}
