//! Chain aggregates as atomics: written under the graph lock, read without it, so
//! dashboards and limit checks never wait behind a writer.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use super::error::RecorderError;

/// The largest token total: totals must stay valid signed 64-bit integers for every
/// consumer (docs/design.md §23).
pub const MAX_TOKENS_TOTAL: u64 = i64::MAX as u64;

#[derive(Default)]
pub struct Aggregates {
    total_cost_bits: AtomicU64,
    llm_calls: AtomicU64,
    tool_calls: AtomicU64,
    retries: AtomicU64,
    tokens_out: AtomicU64,
    divergence_emitted: AtomicU64,
    max_depth: AtomicU32,
    live_nodes: AtomicU64,
    pruned: AtomicU64,
}

/// A plain copy of the counters.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AggregatesView {
    pub total_cost_usd: f64,
    pub total_llm_calls: u64,
    pub total_tool_calls: u64,
    pub total_retries: u64,
    pub max_depth: u32,
    pub divergence_emitted_count: u64,
    pub total_tokens_out: u64,
}

impl AggregatesView {
    /// Every chain has one root; the ratios are kept as floats so multi-root totals
    /// would not change the field types.
    pub const ROOT_COUNT: f64 = 1.0;

    pub fn llm_calls_per_root(&self) -> f64 {
        self.total_llm_calls as f64 / Self::ROOT_COUNT
    }
    pub fn tool_calls_per_root(&self) -> f64 {
        self.total_tool_calls as f64 / Self::ROOT_COUNT
    }
    pub fn retries_per_root(&self) -> f64 {
        self.total_retries as f64 / Self::ROOT_COUNT
    }
}

// Writers hold the graph lock, so plain load+store is race-free among writers;
// Release/Acquire lets lock-free readers see each counter's latest value.
// Counts (calls, retries) cannot realistically reach 2^64; saturating keeps them exact until
// then without a panic path.
fn add(a: &AtomicU64, v: u64) {
    a.store(
        a.load(Ordering::Relaxed).saturating_add(v),
        Ordering::Release,
    );
}

/// `cur + cost`, or an error if the total would not be finite (docs/design.md §23).
pub fn cost_total(cur: f64, cost: f64) -> Result<f64, RecorderError> {
    let total = cur + cost;
    if total.is_finite() {
        Ok(total)
    } else {
        Err(RecorderError::InvalidNumber {
            field: "cost_usd",
            reason: format!(
                "would make total_cost_usd non-finite ({cur:e} + {cost:e}); the call is rejected"
            ),
        })
    }
}

/// `cur + n`, or an error beyond [`MAX_TOKENS_TOTAL`] (docs/design.md §23).
pub fn tokens_out_total(cur: u64, n: u64) -> Result<u64, RecorderError> {
    match cur.checked_add(n).filter(|&t| t <= MAX_TOKENS_TOTAL) {
        Some(t) => Ok(t),
        None => Err(RecorderError::InvalidNumber {
            field: "tokens_out",
            reason: format!(
                "would make total_tokens_out exceed 2**63-1 ({cur} + {n}); the call is rejected"
            ),
        }),
    }
}

impl Aggregates {
    /// The cost total after adding `cost`, or an error if it would not be finite.
    pub fn cost_after(&self, cost: f64) -> Result<f64, RecorderError> {
        cost_total(
            f64::from_bits(self.total_cost_bits.load(Ordering::Relaxed)),
            cost,
        )
    }
    /// The output-token total after adding `n`, or an error beyond [`MAX_TOKENS_TOTAL`].
    pub fn tokens_out_after(&self, n: u64) -> Result<u64, RecorderError> {
        tokens_out_total(self.tokens_out.load(Ordering::Relaxed), n)
    }
    /// Stores a total computed by [`Self::cost_after`].
    pub fn set_cost(&self, total: f64) {
        self.total_cost_bits
            .store(total.to_bits(), Ordering::Release);
    }
    /// Stores a total computed by [`Self::tokens_out_after`].
    pub fn set_tokens_out(&self, total: u64) {
        self.tokens_out.store(total, Ordering::Release);
    }
    /// Sets every counter at once (a graph loaded from a snapshot).
    pub fn restore(&self, v: &AggregatesView) {
        self.set_cost(v.total_cost_usd);
        self.llm_calls.store(v.total_llm_calls, Ordering::Release);
        self.tool_calls.store(v.total_tool_calls, Ordering::Release);
        self.retries.store(v.total_retries, Ordering::Release);
        self.max_depth.store(v.max_depth, Ordering::Release);
        self.divergence_emitted
            .store(v.divergence_emitted_count, Ordering::Release);
        self.set_tokens_out(v.total_tokens_out);
    }
    pub fn add_llm_call(&self) {
        add(&self.llm_calls, 1);
    }
    pub fn add_tool_call(&self) {
        add(&self.tool_calls, 1);
    }
    pub fn add_retries(&self, n: u64) {
        if n > 0 {
            add(&self.retries, n);
        }
    }
    pub fn set_divergence_emitted(&self, n: u64) {
        self.divergence_emitted.store(n, Ordering::Release);
    }
    pub fn raise_max_depth(&self, depth: u32) {
        if depth > self.max_depth.load(Ordering::Relaxed) {
            self.max_depth.store(depth, Ordering::Release);
        }
    }
    pub fn set_live_nodes(&self, n: usize) {
        self.live_nodes.store(n as u64, Ordering::Release);
    }
    pub fn live_nodes(&self) -> u64 {
        self.live_nodes.load(Ordering::Acquire)
    }
    pub fn add_pruned(&self) {
        add(&self.pruned, 1);
    }
    pub fn pruned(&self) -> u64 {
        self.pruned.load(Ordering::Acquire)
    }

    pub fn view(&self) -> AggregatesView {
        AggregatesView {
            total_cost_usd: f64::from_bits(self.total_cost_bits.load(Ordering::Acquire)),
            total_llm_calls: self.llm_calls.load(Ordering::Acquire),
            total_tool_calls: self.tool_calls.load(Ordering::Acquire),
            total_retries: self.retries.load(Ordering::Acquire),
            max_depth: self.max_depth.load(Ordering::Acquire),
            divergence_emitted_count: self.divergence_emitted.load(Ordering::Acquire),
            total_tokens_out: self.tokens_out.load(Ordering::Acquire),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overflowing_totals_are_refused_and_leave_the_counters_alone() {
        let a = Aggregates::default();
        a.set_cost(a.cost_after(1e308).unwrap());
        assert!(a.cost_after(1e308).is_err());
        assert_eq!(a.view().total_cost_usd, 1e308);
        a.set_tokens_out(a.tokens_out_after(MAX_TOKENS_TOTAL - 1).unwrap());
        assert_eq!(a.tokens_out_after(1), Ok(MAX_TOKENS_TOTAL));
        assert!(a.tokens_out_after(2).is_err());
        assert!(a.tokens_out_after(u64::MAX).is_err(), "no wrap modulo 2^64");
        assert_eq!(a.view().total_tokens_out, MAX_TOKENS_TOTAL - 1);
    }
}
