//! What a finished wrap call looks like from outside: its node joined with its outcome.

use crate::recorder::ids::NodeId;
use crate::recorder::Kind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Halted,
    Aborted,
    Timeout,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Halted => "halted",
            Status::Aborted => "aborted",
            Status::Timeout => "timeout",
            Status::Error => "error",
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The call's node in the chain's graph.
    pub node: NodeId,
    /// The enclosing wrap call's node; None at the top level (child of the root).
    pub parent: Option<NodeId>,
    pub kind: Kind,
    pub name: String,
    /// Unix milliseconds, from the graph node.
    pub start_ms: i64,
    pub end_ms: Option<i64>,
    pub status: Status,
    pub cost_usd: f64,
    pub retries: u32,
}
