//! Chain-level containment (docs/containment.md): the counters, limit checks and node records behind
//! `ExecutionContext`, fused with the chain's call graph. One mutex guards the counters so
//! concurrent wraps see exact totals; the abort flag is an atomic.

mod chain;
mod contained;
mod error;
pub mod kinds;
pub mod nesting;
mod record;

pub use chain::{
    Chain, CounterSnapshot, Limits, Reported, RetryVerdict, Stop, BUDGET_EPSILON, MAX_RECORDS,
    MAX_TOKENS,
};
pub use contained::{Closed, Contained, Failure, GraphEnd, Refusal, UNNAMED};
pub use error::ContainmentError;
pub use record::{cut_message, Record, Status, MAX_ERROR_MESSAGE, STOP_REASONS};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_chain;
