//! Counters and limits of one chain, the cost reports of calls in flight, and the finished
//! calls in completion order.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::error::ContainmentError;
use super::record::{Record, Status};
use crate::ids::NodeId;

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
    pub const ALL: [Stop; 6] = [
        Stop::Aborted,
        Stop::Budget,
        Stop::Steps,
        Stop::Retries,
        Stop::Timeout,
        Stop::Estimate,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    pub fn from_code(code: u8) -> Option<Stop> {
        Stop::ALL.into_iter().find(|s| s.code() == code)
    }

    /// The docs/design.md §5 (docs/design.md §5) stop reason.
    pub fn reason(self) -> &'static str {
        match self {
            Stop::Aborted => "aborted",
            Stop::Budget | Stop::Estimate => "budget_exceeded",
            Stop::Steps => "step_limit_exceeded",
            Stop::Retries => "retry_budget_exceeded",
            Stop::Timeout => "timeout",
        }
    }

    /// The record status of a call refused, or cancelled while running, for this reason.
    pub fn status(self) -> Status {
        match self {
            Stop::Aborted => Status::Aborted,
            Stop::Timeout => Status::Timeout,
            _ => Status::Halted,
        }
    }
}

/// What the retry budget said about a failed call that asked for a retry (docs/design.md §34).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RetryVerdict {
    /// One unit consumed: the caller may retry.
    Granted,
    /// No unit was left: this failure stops the chain with `provider_error`.
    Drained,
    /// The chain was already stopped by a failure that found no unit (on another thread): the
    /// call halts with `retry_budget_exceeded`.
    Exhausted,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub max_cost_usd: f64,
    pub max_steps: u64,
    pub max_retries_total: u64,
    /// 0 disables the chain timeout.
    pub timeout_ms: u64,
}

/// Actual usage reported by a call while it runs (docs/design.md §20); summed when a call
/// reports more than once (a tool that makes two provider requests).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Reported {
    pub cost_usd: f64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
}

/// Largest token count a report may carry (strict JSON integers, docs/design.md §23).
pub const MAX_TOKENS: u64 = i64::MAX as u64;

fn invalid(field: &'static str, reason: String) -> ContainmentError {
    ContainmentError::InvalidNumber { field, reason }
}

fn add_tokens(
    field: &'static str,
    a: Option<u64>,
    b: Option<u64>,
) -> Result<Option<u64>, ContainmentError> {
    match (a, b) {
        (Some(x), Some(y)) => match x.checked_add(y).filter(|&s| s <= MAX_TOKENS) {
            Some(s) => Ok(Some(s)),
            None => Err(invalid(
                field,
                format!("total would overflow (> {MAX_TOKENS})"),
            )),
        },
        (x, y) => Ok(x.or(y)),
    }
}

impl Reported {
    /// `self + more`, or an error naming the field that would overflow.
    pub fn plus(self, more: Reported) -> Result<Reported, ContainmentError> {
        let cost_usd = self.cost_usd + more.cost_usd;
        if !cost_usd.is_finite() {
            return Err(invalid(
                "cost_usd",
                "total of the call's reports would not be finite".into(),
            ));
        }
        Ok(Reported {
            cost_usd,
            tokens_in: add_tokens("tokens_in", self.tokens_in, more.tokens_in)?,
            tokens_out: add_tokens("tokens_out", self.tokens_out, more.tokens_out)?,
        })
    }
}

#[derive(Default)]
struct Counters {
    steps: u64,
    cost_usd: f64,
    retries: u64,
    /// Admitted calls not yet closed; each holds a step reservation.
    in_flight: u64,
    /// Sum of the cost estimates of the calls in flight (docs/design.md §20): concurrent calls
    /// must not all slip under the ceiling.
    reserved_usd: f64,
    abort_reason: Option<String>,
    /// A failure found the retry budget spent: the chain refuses calls from then on
    /// (docs/design.md §34).
    retries_exhausted: bool,
    /// Reports of calls still in flight; a handful at most, so a vector beats a map.
    reports: Vec<(NodeId, Reported)>,
    records: Vec<Record>,
}

impl Counters {
    fn unreserve(&mut self, cost_estimate: f64) {
        self.in_flight = self.in_flight.saturating_sub(1);
        // With nothing in flight the exact answer is 0; this also drops float residue.
        self.reserved_usd = if self.in_flight == 0 {
            0.0
        } else {
            (self.reserved_usd - cost_estimate).max(0.0)
        };
    }

    fn take_report(&mut self, node: NodeId) -> Option<Reported> {
        if self.reports.is_empty() {
            return None;
        }
        let i = self.reports.iter().position(|(n, _)| *n == node)?;
        Some(self.reports.swap_remove(i).1)
    }
}

pub struct Chain {
    limits: Limits,
    epoch: Instant,
    aborted: AtomicBool,
    /// `Stop` code of the first cancellation (abort, timeout or budget), 0 while not cancelled.
    cancel_cause: AtomicU8,
    /// Set once `MAX_RECORDS` records are kept: later calls skip building theirs, lock-free.
    records_full: AtomicBool,
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
            records_full: AtomicBool::new(false),
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

    /// Admits a call (reserving a step and its cost estimate until it is settled) or names the
    /// first limit that refuses it, in the documented order. docs/design.md §20: admitted only
    /// while `spent + reserved + estimate <= max_cost_usd`.
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
        if c.retries_exhausted {
            return Err(Stop::Retries);
        }
        if self.timed_out() {
            return Err(Stop::Timeout);
        }
        // The same float tolerance as the ceiling: 0.2 + 0.1 must fit under 0.3.
        let committed = c.cost_usd + c.reserved_usd;
        if committed + cost_estimate > limits.max_cost_usd + BUDGET_EPSILON {
            return Err(Stop::Estimate);
        }
        c.in_flight += 1;
        c.reserved_usd += cost_estimate;
        Ok(())
    }

    pub fn records_full(&self) -> bool {
        self.records_full.load(Ordering::Relaxed)
    }

    pub fn push_record(&self, record: Record) {
        let mut c = self.counters.lock();
        if c.records.len() < MAX_RECORDS {
            c.records.push(record);
        }
        if c.records.len() >= MAX_RECORDS {
            self.records_full.store(true, Ordering::Relaxed);
        }
    }

    /// Gives back the reservation of an admitted call that could not start.
    pub fn release(&self, cost_estimate: f64) {
        self.counters.lock().unreserve(cost_estimate);
    }

    /// Adds a report to an open call's usage. Nothing changes on error.
    pub fn report(&self, node: NodeId, more: Reported) -> Result<(), ContainmentError> {
        let mut c = self.counters.lock();
        match c.reports.iter_mut().find(|(n, _)| *n == node) {
            Some((_, total)) => *total = total.plus(more)?,
            None => {
                Reported::default().plus(more)?;
                c.reports.push((node, more));
            }
        }
        Ok(())
    }

    /// Removes and returns what an open call reported so far.
    pub fn take_report(&self, node: NodeId) -> Option<Reported> {
        self.counters.lock().take_report(node)
    }

    /// Settles a completed call (docs/design.md §20) at `actual`, else what it reported, else
    /// its estimate: releases its reservation and adds one step and the cost. Returns what it
    /// was charged. A total that would not be finite is refused with every counter unchanged
    /// (docs/design.md §23).
    pub fn settle_success(
        &self,
        node: NodeId,
        cost_estimate: f64,
        actual: Option<Reported>,
    ) -> Result<Reported, ContainmentError> {
        let mut c = self.counters.lock();
        let reported = c.take_report(node);
        let settled = actual.or(reported).unwrap_or(Reported {
            cost_usd: cost_estimate,
            ..Reported::default()
        });
        let cost_usd = settled.cost_usd;
        let total = c.cost_usd + cost_usd;
        if !total.is_finite() {
            return Err(invalid(
                "cost_usd",
                format!("would make the chain's total cost not finite; got {cost_usd}"),
            ));
        }
        c.unreserve(cost_estimate);
        c.steps += 1;
        c.cost_usd = total;
        Ok(settled)
    }

    /// Closes a failed or stopped call: releases its reservation, charges what it reported
    /// before it failed (docs/design.md §30: the provider was paid whatever happened next; no
    /// step is counted) and, with `retry`, consumes a unit of the retry budget in the same
    /// critical section as the check, so concurrent failures never take the budget past
    /// `max_retries_total` (docs/design.md §34). Returns the verdict and what was charged.
    pub fn settle_failure(
        &self,
        node: NodeId,
        cost_estimate: f64,
        retry: bool,
    ) -> (RetryVerdict, Option<Reported>) {
        let mut c = self.counters.lock();
        let charged = c.take_report(node);
        if let Some(r) = charged {
            // A failure cannot be refused: a total past f64 is held at its largest value, which
            // still stops the chain (the report itself was checked finite).
            let total = c.cost_usd + r.cost_usd;
            c.cost_usd = if total.is_finite() { total } else { f64::MAX };
        }
        c.unreserve(cost_estimate);
        if !retry {
            return (RetryVerdict::Granted, charged);
        }
        let verdict = if c.retries_exhausted {
            RetryVerdict::Exhausted
        } else if c.retries < self.limits.max_retries_total {
            c.retries += 1;
            RetryVerdict::Granted
        } else {
            c.retries_exhausted = true;
            RetryVerdict::Drained
        };
        (verdict, charged)
    }

    /// Signals cancellation; only the first cause is kept. Returns whether this call set it.
    pub fn cancel(&self, cause: Stop) -> bool {
        self.cancel_cause
            .compare_exchange(0, cause.code(), Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub fn cancel_cause(&self) -> Option<Stop> {
        Stop::from_code(self.cancel_cause.load(Ordering::Acquire))
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

    /// Adds cost spent elsewhere (a child chain). Returns the new total and whether this call
    /// pushed the chain to its ceiling and made the budget the chain's cancellation cause.
    pub fn add_cost(&self, cost_usd: f64) -> Result<(f64, bool), ContainmentError> {
        let mut c = self.counters.lock();
        let total = c.cost_usd + cost_usd;
        if !total.is_finite() || cost_usd < 0.0 {
            return Err(invalid(
                "cost_usd",
                format!("must be >= 0 and keep the chain's total finite; got {cost_usd}"),
            ));
        }
        c.cost_usd = total;
        drop(c);
        let crossed =
            total + BUDGET_EPSILON >= self.limits.max_cost_usd && self.cancel(Stop::Budget);
        Ok((total, crossed))
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
            records: c.records.len(),
        }
    }

    pub fn records(&self, start: usize, stop: usize) -> Vec<Record> {
        let c = self.counters.lock();
        let stop = stop.min(c.records.len());
        let start = start.min(stop);
        c.records[start..stop].to_vec()
    }

    /// The chain's figures for the limit behind `reason` (a stop reason of docs/design.md §5), as a
    /// refusal states them; `estimate` is the refused call's own estimate when it did not fit.
    pub fn describe(&self, reason: &str, estimate: Option<f64>) -> String {
        let limits = self.limits;
        let c = self.counters.lock();
        let (spent, reserved, in_flight) = (c.cost_usd, c.reserved_usd, c.in_flight);
        match reason {
            "budget_exceeded" => match estimate {
                Some(e) => format!(
                    "spent ${spent:.4} + ${reserved:.4} reserved by calls in flight + this call's \
                     estimate ${e:.4} would pass the ${:.4} ceiling",
                    limits.max_cost_usd
                ),
                None if reserved > 0.0 => format!(
                    "spent ${spent:.4} (${reserved:.4} reserved by calls in flight) of the ${:.4} \
                     ceiling",
                    limits.max_cost_usd
                ),
                None => format!(
                    "spent ${spent:.4} of the ${:.4} ceiling",
                    limits.max_cost_usd
                ),
            },
            "step_limit_exceeded" if in_flight > 0 => format!(
                "{} steps (+{in_flight} in flight) of the limit of {}",
                c.steps, limits.max_steps
            ),
            "step_limit_exceeded" => {
                format!("{} steps of the limit of {}", c.steps, limits.max_steps)
            }
            "retry_budget_exceeded" | "provider_error" => format!(
                "{} of {} retries used, and a failure found none left",
                c.retries, limits.max_retries_total
            ),
            "timeout" if self.cancel_cause() == Some(Stop::Timeout) => format!(
                "{:.0} ms elapsed of the chain's timeout_ms={}",
                self.epoch.elapsed().as_secs_f64() * 1000.0,
                limits.timeout_ms
            ),
            "timeout" => "the call's own timeout_ms ran out".to_owned(),
            "aborted" => match &c.abort_reason {
                Some(why) => format!("aborted: {why}"),
                None => "aborted".to_owned(),
            },
            _ => format!(
                "spent ${spent:.4} of ${:.4}, {} of {} steps, {} of {} retries",
                limits.max_cost_usd, c.steps, limits.max_steps, c.retries, limits.max_retries_total
            ),
        }
    }

    pub fn in_flight(&self) -> u64 {
        self.counters.lock().in_flight
    }

    /// Cost the calls in flight reserved.
    pub fn reserved_usd(&self) -> f64 {
        self.counters.lock().reserved_usd
    }
}
