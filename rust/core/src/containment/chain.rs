//! Counters and limits of one chain.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

use super::record::{Kind, Record, Status};

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
}

/// How an admitted call ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Completed; adds one step and its cost.
    Success,
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

#[derive(Default)]
struct Counters {
    steps: u64,
    in_flight: u64,
    cost_usd: f64,
    retries: u64,
    abort_reason: Option<String>,
    records: Vec<Record>,
}

pub struct Chain {
    limits: Limits,
    epoch: Instant,
    wall_epoch_s: f64,
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
}

impl Chain {
    pub fn new(limits: Limits) -> Chain {
        let wall_epoch_s = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        Chain {
            limits,
            epoch: Instant::now(),
            wall_epoch_s,
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

    /// Unix time in seconds of a timestamp taken by `now_ns`.
    pub fn wall_time(&self, ns: u64) -> f64 {
        self.wall_epoch_s + ns as f64 / 1e9
    }

    fn timed_out(&self, now_ns: u64) -> bool {
        if self.cancel_cause.load(Ordering::Acquire) == Stop::Timeout.code() {
            return true;
        }
        let limit = self.limits.timeout_ms;
        if limit > 0 && now_ns / 1_000_000 >= limit {
            self.cancel(Stop::Timeout);
            return true;
        }
        false
    }

    /// Admits one call or names the first limit that refuses it. An admitted call holds a
    /// step reservation until `leave`, so concurrent callers never overshoot `max_steps`.
    /// Returns the call's start timestamp.
    pub fn enter(&self, cost_estimate: f64) -> Result<u64, Stop> {
        if self.aborted.load(Ordering::Acquire) {
            return Err(Stop::Aborted);
        }
        let now = self.now_ns();
        let mut c = self.counters.lock();
        let limits = &self.limits;
        if c.cost_usd + BUDGET_EPSILON >= limits.max_cost_usd {
            return Err(Stop::Budget);
        }
        if c.steps + c.in_flight >= limits.max_steps {
            return Err(Stop::Steps);
        }
        if c.retries >= limits.max_retries_total {
            return Err(Stop::Retries);
        }
        if self.timed_out(now) {
            return Err(Stop::Timeout);
        }
        if cost_estimate > 0.0 && c.cost_usd + cost_estimate > limits.max_cost_usd {
            return Err(Stop::Estimate);
        }
        c.in_flight += 1;
        Ok(now)
    }

    /// Closes an admitted call and records it. Returns the chain's retries used afterwards.
    pub fn leave(&self, mut record: Record, outcome: Outcome) -> u64 {
        record.end_ns = self.now_ns();
        let mut c = self.counters.lock();
        c.in_flight = c.in_flight.saturating_sub(1);
        match outcome {
            Outcome::Success => {
                c.steps += 1;
                c.cost_usd += record.cost_usd;
                record.status = Status::Ok;
            }
            Outcome::Retry => {
                c.retries += 1;
                record.retries += 1;
                record.status = Status::Error;
            }
            Outcome::Stopped(status) => record.status = status,
        }
        let retries = c.retries;
        if c.records.len() < MAX_RECORDS {
            c.records.push(record);
        }
        retries
    }

    /// Records a call refused before admission (it never held a reservation).
    pub fn record_refusal(&self, mut record: Record) {
        let now = self.now_ns();
        record.start_ns = now;
        record.end_ns = now;
        let mut c = self.counters.lock();
        if c.records.len() < MAX_RECORDS {
            c.records.push(record);
        }
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
        }
    }

    pub fn record_count(&self) -> usize {
        self.counters.lock().records.len()
    }

    pub fn records(&self, start: usize, stop: usize) -> Vec<Record> {
        let c = self.counters.lock();
        let stop = stop.min(c.records.len());
        let start = start.min(stop);
        c.records[start..stop].to_vec()
    }

    pub fn in_flight(&self) -> u64 {
        self.counters.lock().in_flight
    }

    pub fn new_record(
        node_id: String,
        parent_id: Option<String>,
        kind: Kind,
        name: String,
    ) -> Record {
        Record {
            node_id,
            parent_id,
            kind,
            name,
            start_ns: 0,
            end_ns: 0,
            status: Status::Halted,
            cost_usd: 0.0,
            retries: 0,
        }
    }
}
