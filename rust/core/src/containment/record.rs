//! What a finished wrap call looks like from outside: its node joined with its outcome.

use crate::recorder::ids::NodeId;
use crate::recorder::Kind;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
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
    /// The failure's message, at most `MAX_ERROR_MESSAGE` code points (docs/design.md §22).
    pub error_message: Option<Box<str>>,
}

/// Longest error message a record keeps, in Unicode code points (docs/design.md §22).
pub const MAX_ERROR_MESSAGE: usize = 1000;

/// `message` cut to `MAX_ERROR_MESSAGE` code points.
pub fn cut_message(message: &str) -> Box<str> {
    match message.char_indices().nth(MAX_ERROR_MESSAGE) {
        Some((end, _)) => message[..end].into(),
        None => message.into(),
    }
}

/// Every stop reason of docs/design.md §5 (docs/design.md §5), in the documented order.
pub const STOP_REASONS: [&str; 8] = [
    "budget_exceeded",
    "retry_budget_exceeded",
    "circuit_open",
    "step_limit_exceeded",
    "timeout",
    "aborted",
    "provider_rate_limit",
    "provider_error",
];
