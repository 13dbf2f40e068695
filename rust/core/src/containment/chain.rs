//! Counters and limits of one chain, and the completion order of its calls.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::record::Status;
use crate::recorder::ids::NodeId;

/// Accumulated float costs (ten calls of 0.1) must still reach a ceiling of 1.0.
pub const BUDGET_EPSILON: f64 = 1e-9;
/// A runaway loop must not grow the record list without bound; counters keep counting.
pub const MAX_RECORDS: usize = 10_000;

/// Why a wrap call is refused, in the order the checks run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Stop {
    Aborted = 1,
    Budget = 2,
    Steps = 3,
    Retries = 4,
    Timeout = 5,
    Estimate = 6,
}

impl Stop {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The seed 003 §6 stop reason.
    pub fn reason(self) -> &'static str {
        match self {
            Stop::Aborted => "aborted",
            Stop::Budget | Stop::Estimate => "budget_exceeded",
            Stop::Steps => "step_limit_exceeded",
            Stop::Retries => "retry_budget_exceeded",
            Stop::Timeout => "timeout",
        }
    }

    pub fn status(self) -> Status {
        match self {
            Stop::Aborted => Status::Aborted,
            Stop::Timeout => Status::Timeout,
            _ => Status::Halted,
        }
    }
}

/// How an admitted call ended.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Outcome {
    /// Completed; adds one step and its cost.
    Success(f64),
    /// Failed and the caller may retry; consumes one unit of the retry budget.
    Retry,
    /// Failed or was stopped without consuming the retry budget.
    Stopped(Status),
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub max_cost_usd: f64,
    pub max_steps: u64,
    pub max_retries_total: u64,
    /// 0 disables the chain timeout.
    pub timeout_ms: u64,
}

/// A finished call in completion order; the rest of its record lives in the graph node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Done {
    pub node: NodeId,
    pub status: Status,
    /// False when the call had no operation name (the graph labels it "unnamed").
    pub named: bool,
}

#[derive(Default)]
struct Counters {
    steps: u64,
    cost_usd: f64,
    retries: u64,
    /// Admitted calls not yet closed; each holds a step reservation.
    in_flight: u64,
    /// Sum of the cost estimates of the calls in flight: concurrent estimated calls must not
    /// overshoot the ceiling together.
    reserved_usd: f64,
    abort_reason: Option<String>,
    done: Vec<Done>,
}

pub struct Chain {
    limits: Limits,
    epoch: Instant,
    aborted: AtomicBool,
    /// `Stop` code of the first cancellation (abort, timeout or budget), 0 while not cancelled.
    cancel_cause: AtomicU8,
    counters: Mutex<Counters>,
}

pub struct CounterSnapshot {
    pub steps: u64,
    pub cost_usd: f64,
    pub retries: u64,
    pub aborted: bool,
    pub abort_reason: Option<String>,
    pub elapsed_ms: f64,
    pub records: usize,
}

impl Chain {
    pub fn new(limits: Limits) -> Chain {
        Chain {
            limits,
            epoch: Instant::now(),
            aborted: AtomicBool::new(false),
            cancel_cause: AtomicU8::new(0),
            counters: Mutex::new(Counters::default()),
        }
    }

    pub fn limits(&self) -> Limits {
        self.limits
    }

    pub fn now_ns(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    /// Reads the clock only when the chain has a timeout: most chains do not pay for it.
    fn timed_out(&self) -> bool {
        if self.cancel_cause.load(Ordering::Acquire) == Stop::Timeout.code() {
            return true;
        }
        let limit = self.limits.timeout_ms;
        if limit > 0 && self.now_ns() / 1_000_000 >= limit {
            self.cancel(Stop::Timeout);
            return true;
        }
        false
    }

    /// Admits a call (taking a step reservation until `leave`) or names the first limit that
    /// refuses it, in the documented order.
    pub fn admit(&self, cost_estimate: f64) -> Result<(), Stop> {
        if self.aborted.load(Ordering::Acquire) {
            return Err(Stop::Aborted);
        }
        let limits = &self.limits;
        let mut c = self.counters.lock();
        if c.cost_usd + BUDGET_EPSILON >= limits.max_cost_usd {
            return Err(Stop::Budget);
        }
        // In-flight calls hold a step reservation so concurrent callers never overshoot.
        if c.steps + c.in_flight >= limits.max_steps {
            return Err(Stop::Steps);
        }
        if c.retries >= limits.max_retries_total {
            return Err(Stop::Retries);
        }
        if self.timed_out() {
            return Err(Stop::Timeout);
        }
        // The same float tolerance as the ceiling: 0.2 + 0.1 must fit under 0.3. Estimates of
        // calls in flight count as spent.
        let committed = c.cost_usd + c.reserved_usd;
        if cost_estimate > 0.0 && committed + cost_estimate > limits.max_cost_usd + BUDGET_EPSILON {
            return Err(Stop::Estimate);
        }
        c.in_flight += 1;
        c.reserved_usd += cost_estimate;
        Ok(())
    }

    fn push(c: &mut Counters, done: Done) {
        if c.done.len() < MAX_RECORDS {
            c.done.push(done);
        }
    }

    /// Records a call refused by `admit`.
    pub fn record_refusal(&self, done: Done) {
        Self::push(&mut self.counters.lock(), done);
    }

    /// Gives back the reservation of an admitted call that could not start.
    pub fn release(&self, cost_estimate: f64) {
        Self::unreserve(&mut self.counters.lock(), cost_estimate);
    }

    fn unreserve(c: &mut Counters, cost_estimate: f64) {
        c.in_flight = c.in_flight.saturating_sub(1);
        // With nothing in flight the exact answer is 0; this also drops float residue.
        c.reserved_usd = if c.in_flight == 0 {
            0.0
        } else {
            (c.reserved_usd - cost_estimate).max(0.0)
        };
    }

    /// Closes an admitted call. Returns the chain's retries used afterwards.
    /// `cost_estimate` is the estimate the call was admitted with (its reservation).
    pub fn leave(&self, node: NodeId, named: bool, cost_estimate: f64, outcome: Outcome) -> u64 {
        let mut c = self.counters.lock();
        Self::unreserve(&mut c, cost_estimate);
        let status = match outcome {
            Outcome::Success(cost) => {
                c.steps += 1;
                c.cost_usd += cost;
                Status::Ok
            }
            Outcome::Retry => {
                c.retries += 1;
                Status::Error
            }
            Outcome::Stopped(status) => status,
        };
        Self::push(
            &mut c,
            Done {
                node,
                status,
                named,
            },
        );
        c.retries
    }

    /// Signals cancellation; only the first cause is kept. Returns whether this call set it.
    pub fn cancel(&self, cause: Stop) -> bool {
        self.cancel_cause
            .compare_exchange(0, cause.code(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub fn cancel_cause(&self) -> u8 {
        self.cancel_cause.load(Ordering::Acquire)
    }

    /// Marks the chain aborted. Returns true only for the first abort.
    pub fn abort(&self, reason: &str) -> bool {
        let mut c = self.counters.lock();
        if self.aborted.swap(true, Ordering::AcqRel) {
            return false;
        }
        c.abort_reason = Some(reason.to_owned());
        drop(c);
        self.cancel(Stop::Aborted);
        true
    }

    pub fn is_aborted(&self) -> bool {
        self.aborted.load(Ordering::Acquire)
    }

    /// Adds cost spent elsewhere (a child chain). Returns the new total.
    pub fn add_cost(&self, cost_usd: f64) -> f64 {
        let mut c = self.counters.lock();
        c.cost_usd += cost_usd;
        c.cost_usd
    }

    pub fn counters(&self) -> CounterSnapshot {
        let c = self.counters.lock();
        CounterSnapshot {
            steps: c.steps,
            cost_usd: c.cost_usd,
            retries: c.retries,
            aborted: self.aborted.load(Ordering::Acquire),
            abort_reason: c.abort_reason.clone(),
            elapsed_ms: self.epoch.elapsed().as_secs_f64() * 1000.0,
            records: c.done.len(),
        }
    }

    pub fn done(&self, start: usize, stop: usize) -> Vec<Done> {
        let c = self.counters.lock();
        let stop = stop.min(c.done.len());
        let start = start.min(stop);
        c.done[start..stop].to_vec()
    }

    pub fn in_flight(&self) -> u64 {
        self.counters.lock().in_flight
    }
}
