//! Chain aggregates as atomics: written under the graph lock, read without it, so
//! dashboards and limit checks never wait behind a writer.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

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
fn add(a: &AtomicU64, v: u64) {
    a.store(a.load(Ordering::Relaxed) + v, Ordering::Release);
}

impl Aggregates {
    pub fn add_cost(&self, cost: f64) {
        let cur = f64::from_bits(self.total_cost_bits.load(Ordering::Relaxed));
        self.total_cost_bits
            .store((cur + cost).to_bits(), Ordering::Release);
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
    pub fn add_tokens_out(&self, n: u64) {
        add(&self.tokens_out, n);
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
