//! What a transition tells the caller, so observers and subscribers can be notified after
//! the graph lock is released.

use super::kind::{Kind, Status};
use crate::ids::NodeId;
use crate::value::Value;

/// A node entered `running` (for `on_node_start`).
#[derive(Clone, Debug, PartialEq)]
pub struct Started {
    pub id: NodeId,
    pub name: String,
    pub metadata: Option<Value>,
}

/// A full copy of a node at its terminal transition (for `NodeEvent` subscribers).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeEvent {
    pub id: NodeId,
    pub status: Status,
    pub kind: Kind,
    pub name: String,
    pub cost_usd: f64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub depth: u32,
    pub elapsed_ms: Option<f64>,
    pub model: Option<String>,
    pub error_class: Option<String>,
    pub stop_reason: Option<String>,
}

/// Result of `mark_success` / `mark_failure` / `mark_halt`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Finished {
    /// False when the node was already terminal (the call was a no-op).
    pub applied: bool,
    /// `end - start` in ms, at least 1 (success only).
    pub duration_ms: i64,
    /// The stop reason recorded (halt defaults to "halt").
    pub reason: Option<String>,
    /// Present only when the caller asked for it; boxed so the common no-subscriber
    /// result stays a few words wide.
    pub event: Option<Box<NodeEvent>>,
}
