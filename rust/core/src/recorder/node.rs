//! One recorded call. Compact on purpose: a million of these must stay far below the
//! footprint of a Python object per node.

use super::ids::NodeId;
use super::intern::Sym;
use super::kind::{Kind, Status};
use crate::value::Value;

#[derive(Clone, Debug)]
pub struct Node {
    pub id: NodeId,
    /// 0 for the root (ids start at 1).
    pub parent: NodeId,
    pub start_ms: i64,
    pub end_ms: Option<i64>,
    pub cost_usd: f64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub stop_reason: Option<Box<str>>,
    pub metadata: Option<Box<Value>>,
    pub name: Sym,
    pub model: Option<Sym>,
    pub error_class: Option<Sym>,
    pub depth: u32,
    pub retries: u32,
    pub kind: Kind,
    pub status: Status,
    /// Evicted by `max_nodes` pruning; the slot stays until the arena front passes it.
    pub pruned: bool,
}

impl Node {
    pub fn parent_id(&self) -> Option<NodeId> {
        (self.parent != 0).then_some(self.parent)
    }
}
