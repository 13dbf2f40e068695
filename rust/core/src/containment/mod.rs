//! Chain-level containment (seed 003): the counters, limit checks and node records behind
//! `ExecutionContext`, fused with the chain's call graph. One mutex guards the counters so
//! concurrent wraps see exact totals; the abort flag is an atomic.

mod chain;
mod contained;
mod nesting;
mod record;

pub use chain::{Chain, CounterSnapshot, Done, Limits, Outcome, Stop, BUDGET_EPSILON, MAX_RECORDS};
pub use contained::{Contained, GraphEnd, UNNAMED};
pub use record::{Record, Status};

#[cfg(test)]
mod tests;
