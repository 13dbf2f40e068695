//! Reachability over the active graph (all edge types: docs/design.md §9 keeps branch edges acyclic too).

use super::arena::{Dag, Marks};

/// Runs a step of an operation that may take long (a search over much of the graph). An embedder with a
/// global interpreter lock passes one that releases it around the step, so a call that needs no such step
/// never pays for releasing it; [`inline`] runs the step as it is.
pub type LongStep<'a> = &'a dyn Fn(&mut (dyn FnMut() + Send));

/// Runs a long step where it is.
pub fn inline(step: &mut (dyn FnMut() + Send)) {
    step();
}

impl Dag {
    /// Is `target` reachable from any of `starts` through live edges? Iterative DFS, O(visited).
    pub(crate) fn reaches_any(&mut self, starts: &[u32], is_target: impl Fn(u32) -> bool) -> bool {
        let mut marks = std::mem::take(&mut self.marks);
        marks.start(self.nodes.len());
        let found = self.search(&mut marks, starts, is_target);
        self.marks = marks;
        found
    }

    fn search(&self, marks: &mut Marks, starts: &[u32], is_target: impl Fn(u32) -> bool) -> bool {
        let mut stack: Vec<u32> = Vec::new();
        for &s in starts {
            if marks.mark(s) {
                stack.push(s);
            }
        }
        while let Some(n) = stack.pop() {
            if is_target(n) {
                return true;
            }
            for &e in &self.out_adj[n as usize] {
                if !self.is_live(e) {
                    continue;
                }
                let to = self.hot[e as usize].to;
                if marks.mark(to) {
                    stack.push(to);
                }
            }
        }
        false
    }

    /// Would an edge from -> to close a cycle, i.e. does `to` already reach `from`? A search that is needed
    /// runs through `long`.
    pub(crate) fn would_cycle(&mut self, from: u32, to: u32, long: LongStep<'_>) -> bool {
        // A node nobody points out of cannot lead back: the common append case costs nothing.
        if self.out_adj[to as usize].is_empty() || self.in_adj[from as usize].is_empty() {
            return false;
        }
        let mut found = false;
        long(&mut || found = self.reaches_any(&[to], |n| n == from));
        found
    }
}
