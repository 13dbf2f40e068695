//! Applying an executor's result: transition, propagation and leaf repair as one step under one lock.

use super::arena::Dag;
use super::error::DagResult;
use super::state::FinishPayload;
use super::types::State;
use crate::clock::now;
use crate::value::Value;

#[derive(Clone, Debug)]
pub enum Outcome {
    Finished(FinishPayload),
    Errored(String),
    Rejected(String),
    Cancelled(String),
    Skipped(String),
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Applied {
    pub changed: bool,
    pub skipped: Vec<String>,
    pub repaired: Vec<String>,
}

impl Dag {
    pub fn apply_outcome(&mut self, id: &str, outcome: Outcome) -> DagResult<Applied> {
        let changed = match outcome {
            Outcome::Finished(p) => self.mark_finished(id, p)?,
            Outcome::Errored(e) => self.mark_errored(id, &e)?,
            Outcome::Rejected(r) => self.mark_rejected(id, &r)?,
            Outcome::Cancelled(r) => self.mark_cancelled(id, &r)?,
            Outcome::Skipped(reason) => {
                // A running node cannot become skipped (docs/dag-rules.md §2.3); the executor broke the contract.
                let n = self.idx(id)?;
                let node = &self.nodes[n as usize];
                if node.is_active() && node.state == State::Running {
                    self.save_node(n);
                    let meta = self.nodes[n as usize].metadata_mut();
                    meta.set(
                        "error",
                        Value::Str(
                            "invalid_execution_result_state=skipped_for_running_node".into(),
                        ),
                    );
                    meta.set("reason", Value::Str(reason));
                    self.set_state(n, State::Errored, now());
                    self.flush();
                    true
                } else {
                    false
                }
            }
        };
        let skipped = self.propagate_failures();
        let repaired = self.auto_repair();
        Ok(Applied {
            changed,
            skipped,
            repaired,
        })
    }
}
