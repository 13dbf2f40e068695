//! What a finished wrap call looks like from outside: its node joined with its outcome.

use crate::ids::NodeId;
use crate::recorder::Kind;
use crate::vocab::vocab;

vocab!(
    /// How a wrap call ended (docs/design.md §5).
    Status, "call status", {
    Ok => "ok",
    Halted => "halted",
    Aborted => "aborted",
    Timeout => "timeout",
    Error => "error",
});

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
    /// What the call's node says about it, so a saved chain loses nothing its graph knew: tokens,
    /// the model, the exception's class and the stop reason.
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub model: Option<Box<str>>,
    pub error_class: Option<Box<str>>,
    pub stop_reason: Option<Box<str>>,
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
