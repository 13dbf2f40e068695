//! Failure propagation in rounds (docs/dag-rules.md §6, docs/design.md §10).
//!
//! The doomed set (pending executables with a failed live dependency parent) is kept up to date by the
//! bookkeeping, so a round is "skip the whole current set"; it only ever reads start-of-round states.

use crate::ids::Id;

use super::arena::Dag;
use super::events::obj;
use super::types::{EdgeType, State};
use crate::clock::now;
use crate::value::Value;

impl Dag {
    pub fn propagate_failures(&mut self) -> Vec<String> {
        self.propagate_failures_shared()
            .iter()
            .map(|s| s.to_string())
            .collect()
    }

    /// `propagate_failures` returning the graph's own id strings (the bindings copy them straight into
    /// Python strings, with no intermediate Rust copy).
    pub fn propagate_failures_shared(&mut self) -> Vec<Id> {
        self.flush();
        let mut skipped = Vec::new();
        let at = now();
        while !self.sets.doomed.is_empty() {
            let indexes: Vec<u32> = self.sets.doomed.iter().collect();
            let round: Vec<Id> = indexes
                .iter()
                .map(|&n| self.nodes[n as usize].id.clone())
                .collect();
            // Decide everything from the states at the start of the round before writing anything.
            let blocked_by: Vec<Value> = indexes.iter().map(|&n| self.failed_parents(n)).collect();
            for (n, why) in indexes.into_iter().zip(blocked_by) {
                self.save_node(n);
                let meta = self.nodes[n as usize].metadata_mut();
                meta.set(
                    "reason",
                    Value::Str("blocked_by_failed_dependencies".into()),
                );
                meta.set("blocked_by", why);
                self.set_state(n, State::Skipped, at);
            }
            self.flush();
            skipped.extend(round);
        }
        skipped
    }

    fn failed_parents(&self, n: u32) -> Value {
        let mut parents: Vec<(&str, &str, &str)> = self
            .live_in(n)
            .filter(|e| e.edge_type == EdgeType::Dependency)
            .filter_map(|e| {
                let p = &self.nodes[e.from as usize];
                p.state
                    .is_failed()
                    .then(|| (&*p.id, p.state.as_str(), &*e.id))
            })
            .collect();
        parents.sort_unstable();
        Value::Array(
            parents
                .into_iter()
                .map(|(id, state, edge)| {
                    obj(vec![
                        ("node_id", Value::Str(id.into())),
                        ("state", Value::Str(state.into())),
                        ("edge_id", Value::Str(edge.into())),
                    ])
                })
                .collect(),
        )
    }
}
