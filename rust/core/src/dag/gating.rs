//! Gated claiming (docs/dag-rules.md §3.2): ready pending executables become running, smallest ids first.

use super::arena::Dag;
use super::types::State;
use crate::clock::now;

impl Dag {
    /// Ids of active pending executables whose every live blocking parent unblocks them, ascending.
    pub fn ready_ids(&self, limit: usize) -> Vec<String> {
        self.sets
            .ready
            .iter()
            .take(limit)
            .map(|n| self.nodes[n as usize].id.to_string())
            .collect()
    }

    pub fn claim(&mut self, limit: usize) -> Vec<String> {
        let picked = self.claim_nodes(limit);
        picked
            .into_iter()
            .map(|n| self.nodes[n as usize].id.to_string())
            .collect()
    }

    /// `claim`, returning arena positions.
    pub(crate) fn claim_nodes(&mut self, limit: usize) -> Vec<u32> {
        self.flush();
        let picked: Vec<u32> = self.sets.ready.iter().take(limit).collect();
        let at = now();
        for &n in &picked {
            self.set_state(n, State::Running, at);
        }
        self.flush();
        picked
    }
}
