//! Chain-level containment (seed 003): the counters, limit checks and node records behind
//! `ExecutionContext`. One mutex guards the counters so concurrent wraps see exact totals;
//! the abort flag is an atomic so the refusal path after an abort never contends.

mod chain;
mod record;

pub use chain::{Chain, Limits, Outcome, Stop, BUDGET_EPSILON, MAX_RECORDS};
pub use record::{Kind, Record, Status};

#[cfg(test)]
mod tests;
