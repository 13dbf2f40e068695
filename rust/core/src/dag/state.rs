//! The state machine (docs/dag-rules.md §2.3) as compare-and-set operations.

use super::arena::Dag;
use super::error::DagResult;
use super::types::{NodeType, State};
use crate::clock::now;
use crate::value::Value;

/// What a finished node carries; everything optional.
#[derive(Default, Clone, Debug)]
pub struct FinishPayload {
    pub content: Option<Value>,
    pub output: Option<Value>,
    pub metadata: Option<Value>,
}

impl FinishPayload {
    /// Large enough that merging it should run without the GIL (the bindings ask).
    pub fn is_large(&self) -> bool {
        crate::value::any_large([&self.content, &self.output, &self.metadata])
    }
}

pub(crate) fn allowed(from: State, to: State) -> bool {
    matches!(
        (from, to),
        (State::Pending, State::Running)
            | (State::Pending, State::Skipped)
            | (State::Running, State::Finished)
            | (State::Running, State::Errored)
            | (State::Running, State::Rejected)
            | (State::Running, State::Cancelled)
    )
}

pub(crate) fn content_key(t: NodeType) -> (&'static str, &'static str) {
    match t {
        NodeType::UserMessage => ("input", "content"),
        NodeType::Task => ("output", "result"),
        _ => ("output", "content"),
    }
}

impl Dag {
    /// Moves an active node from `expect`-compatible state to `to`; `Ok(false)` when the CAS does not apply.
    pub(crate) fn transition(&mut self, n: u32, to: State, at: f64) -> bool {
        let node = &self.nodes[n as usize];
        if !node.is_active() || !allowed(node.state, to) {
            return false;
        }
        self.set_state(n, to, at);
        true
    }

    pub fn mark_running(&mut self, id: &str) -> DagResult<bool> {
        let n = self.idx(id)?;
        let changed = self.transition(n, State::Running, now());
        self.flush();
        Ok(changed)
    }

    pub fn mark_finished(&mut self, id: &str, payload: FinishPayload) -> DagResult<bool> {
        let n = self.idx(id)?;
        let node = &self.nodes[n as usize];
        if !node.is_active() || node.state != State::Running {
            return Ok(false);
        }
        self.save_node(n);
        let node = &mut self.nodes[n as usize];
        if let Some(out) = payload.output {
            node.output_mut().deep_merge(out);
        }
        if let Some(content) = payload.content {
            match content_key(node.node_type) {
                ("input", key) => node.input_mut().set(key, content),
                (_, key) => node.output_mut().set(key, content),
            }
        }
        if let Some(meta) = payload.metadata {
            node.metadata_mut().shallow_merge(meta);
        }
        node.output_changed();
        self.set_state(n, State::Finished, now());
        self.flush();
        Ok(true)
    }

    /// errored / rejected / cancelled / skipped: the message goes to `metadata[key]`.
    pub fn mark_with_reason(
        &mut self,
        id: &str,
        to: State,
        key: &str,
        message: &str,
    ) -> DagResult<bool> {
        let n = self.idx(id)?;
        let node = &self.nodes[n as usize];
        if !node.is_active()
            || !allowed(node.state, to)
            || to == State::Running
            || to == State::Finished
        {
            return Ok(false);
        }
        self.save_node(n);
        self.nodes[n as usize]
            .metadata_mut()
            .set(key, Value::Str(message.to_owned()));
        self.set_state(n, to, now());
        self.flush();
        Ok(true)
    }

    pub fn mark_errored(&mut self, id: &str, error: &str) -> DagResult<bool> {
        self.mark_with_reason(id, State::Errored, "error", error)
    }

    pub fn mark_rejected(&mut self, id: &str, reason: &str) -> DagResult<bool> {
        self.mark_with_reason(id, State::Rejected, "reason", reason)
    }

    pub fn mark_cancelled(&mut self, id: &str, reason: &str) -> DagResult<bool> {
        self.mark_with_reason(id, State::Cancelled, "reason", reason)
    }

    pub fn mark_skipped(&mut self, id: &str, reason: &str) -> DagResult<bool> {
        self.mark_with_reason(id, State::Skipped, "reason", reason)
    }
}
