//! Gated claiming (docs/dag-rules.md §3.2): ready pending executables become running, smallest ids first.

use super::arena::Dag;
use super::types::State;
use crate::clock::now;

impl Dag {
    /// Ids of active pending executables whose every live blocking parent unblocks them, ascending.
    pub fn ready_ids(&self, limit: usize) -> Vec<String> {
        self.ready
            .iter()
            .take(limit)
            .map(|s| s.to_string())
            .collect()
    }

    pub fn claim(&mut self, limit: usize) -> Vec<String> {
        self.flush();
        let picked: Vec<_> = self.ready.iter().take(limit).cloned().collect();
        let at = now();
        for id in &picked {
            let n = self.node_index[id];
            self.set_state(n, State::Running, at);
        }
        self.flush();
        picked.iter().map(|s| s.to_string()).collect()
    }
}
