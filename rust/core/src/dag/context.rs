//! Context (docs/dag-rules.md §4): the causal ancestor closure of a node in a stable topological order.
//!
//! Kahn's algorithm over the closure, always emitting the smallest available id (docs/design.md §11). The closure
//! is ancestor-closed, so every live blocking in-edge of a member comes from a member: in-degrees need no
//! membership test, and the heap only ever holds the current frontier.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::arena::{Dag, Marks};
use super::events::obj;
use crate::value::Value;

impl Dag {
    /// Arena indexes of the closure of `id`, in context order; empty for an unknown or inactive id.
    pub fn context_order(&mut self, id: &str) -> Vec<u32> {
        let Some(target) = self.node_index.get(id, &self.nodes) else {
            return Vec::new();
        };
        if !self.nodes[target as usize].is_active() {
            return Vec::new();
        }
        let mut marks = std::mem::take(&mut self.marks);
        marks.start(self.nodes.len());
        let order = self.ordered_closure(&mut marks, target);
        self.marks = marks;
        order
    }

    fn ordered_closure(&self, marks: &mut Marks, target: u32) -> Vec<u32> {
        marks.mark(target);
        let mut closure = vec![target];
        let mut indegree: Vec<u32> = vec![0; self.nodes.len()];
        let mut i = 0;
        while i < closure.len() {
            let n = closure[i];
            i += 1;
            let mut deg = 0;
            for &e in &self.in_adj[n as usize] {
                let h = self.hot[e as usize];
                if h.edge_type.is_blocking() && h.active && self.node_active[h.from as usize] {
                    deg += 1;
                    if marks.mark(h.from) {
                        closure.push(h.from);
                    }
                }
            }
            indegree[n as usize] = deg;
        }
        if self.ids_in_order {
            self.kahn(&closure, &mut indegree, marks, |n| n)
        } else {
            self.kahn(&closure, &mut indegree, marks, |n| {
                (&*self.nodes[n as usize].id, n)
            })
        }
    }

    /// Kahn's algorithm restricted to the marked closure, emitting the smallest `key` first.
    fn kahn<'a, K: Ord + 'a>(
        &'a self,
        closure: &[u32],
        indegree: &mut [u32],
        marks: &Marks,
        key: impl Fn(u32) -> K,
    ) -> Vec<u32> {
        let mut heap: BinaryHeap<Reverse<(K, u32)>> = closure
            .iter()
            .filter(|&&n| indegree[n as usize] == 0)
            .map(|&n| Reverse((key(n), n)))
            .collect();
        let mut order = Vec::with_capacity(closure.len());
        while let Some(Reverse((_, n))) = heap.pop() {
            order.push(n);
            for &e in &self.out_adj[n as usize] {
                let h = self.hot[e as usize];
                if !h.edge_type.is_blocking() || !h.active || !marks.is_marked(h.to) {
                    continue;
                }
                let d = &mut indegree[h.to as usize];
                *d -= 1;
                if *d == 0 {
                    heap.push(Reverse((key(h.to), h.to)));
                }
            }
        }
        order
    }

    pub fn context_ids_for(&mut self, id: &str) -> Vec<String> {
        self.context_order(id)
            .into_iter()
            .map(|n| self.nodes[n as usize].id.to_string())
            .collect()
    }

    /// One context entry (docs/dag-rules.md §4.3): preview mode omits the full output.
    pub fn context_entry(&self, n: u32, full: bool) -> Value {
        let node = &self.nodes[n as usize];
        let mut payload = vec![
            ("input", node.input().clone()),
            ("output_preview", node.output_preview().into_owned()),
        ];
        if full {
            payload.push(("output", node.output().clone()));
        }
        obj(vec![
            ("node_id", Value::Str(node.id.to_string())),
            ("node_type", Value::Str(node.node_type.as_str().into())),
            ("state", Value::Str(node.state.as_str().into())),
            ("payload", obj(payload)),
            ("metadata", node.metadata().clone()),
        ])
    }

    pub fn context_for(&mut self, id: &str, full: bool) -> Vec<Value> {
        self.context_order(id)
            .into_iter()
            .map(|n| self.context_entry(n, full))
            .collect()
    }
}
