//! `ChainCore`: the native counters behind `chainwarden.containment.ExecutionContext`.
//!
//! The Python layer makes one call to admit a wrap (`enter`) and one to close it (`leave`);
//! everything else here serves snapshots and cancellation, off the hot path.

use chainwarden_core::containment::{Chain, Kind, Limits, Outcome, Status, Stop};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

type RecordTuple = (
    String,
    Option<String>,
    &'static str,
    String,
    f64,
    f64,
    &'static str,
    f64,
    u32,
);

fn check_cost(value: f64, name: &str) -> PyResult<f64> {
    if !value.is_finite() || value < 0.0 {
        return Err(PyValueError::new_err(format!(
            "{name} must be finite and >= 0, got {value}"
        )));
    }
    Ok(value)
}

fn kind_of(code: u8) -> PyResult<Kind> {
    Kind::from_code(code)
        .ok_or_else(|| PyValueError::new_err(format!("unknown node kind code {code}")))
}

fn outcome_of(code: u8) -> PyResult<Outcome> {
    Ok(match code {
        0 => Outcome::Success,
        1 => Outcome::Retry,
        _ => Outcome::Stopped(status_of(code)?),
    })
}

fn status_of(code: u8) -> PyResult<Status> {
    Ok(match code {
        2 => Status::Halted,
        3 => Status::Aborted,
        4 => Status::Timeout,
        5 => Status::Error,
        _ => {
            return Err(PyValueError::new_err(format!(
                "unknown outcome code {code}"
            )))
        }
    })
}

fn stop_of(code: u8) -> PyResult<Stop> {
    Ok(match code {
        1 => Stop::Aborted,
        2 => Stop::Budget,
        5 => Stop::Timeout,
        _ => {
            return Err(PyValueError::new_err(format!(
                "{code} is not a cancellation cause"
            )))
        }
    })
}

#[pyclass(frozen, module = "chainwarden._core")]
pub struct ChainCore {
    chain: Chain,
}

#[pymethods]
impl ChainCore {
    #[new]
    fn new(
        max_cost_usd: f64,
        max_steps: u64,
        max_retries_total: u64,
        timeout_ms: u64,
    ) -> PyResult<Self> {
        let max_cost_usd = check_cost(max_cost_usd, "max_cost_usd")?;
        let limits = Limits {
            max_cost_usd,
            max_steps,
            max_retries_total,
            timeout_ms,
        };
        Ok(ChainCore {
            chain: Chain::new(limits),
        })
    }

    /// Start timestamp (ns, >= 0) when admitted, else minus the refusing stop code.
    fn enter(&self, cost_estimate: f64) -> i64 {
        match self.chain.enter(cost_estimate) {
            Ok(start) => i64::try_from(start).unwrap_or(i64::MAX),
            Err(stop) => -i64::from(stop.code()),
        }
    }

    /// Closes an admitted call; returns the chain's retries used afterwards.
    #[allow(clippy::too_many_arguments)]
    fn leave(
        &self,
        outcome: u8,
        node_id: String,
        parent_id: Option<String>,
        kind: u8,
        name: String,
        start_ns: u64,
        cost_usd: f64,
    ) -> PyResult<u64> {
        let outcome = outcome_of(outcome)?;
        let mut record = Chain::new_record(node_id, parent_id, kind_of(kind)?, name);
        record.start_ns = start_ns;
        record.cost_usd = check_cost(cost_usd, "cost_usd")?;
        Ok(self.chain.leave(record, outcome))
    }

    /// Records a call refused before admission.
    fn refuse(
        &self,
        status: u8,
        node_id: String,
        parent_id: Option<String>,
        kind: u8,
        name: String,
    ) -> PyResult<()> {
        let mut record = Chain::new_record(node_id, parent_id, kind_of(kind)?, name);
        record.status = status_of(status)?;
        self.chain.record_refusal(record);
        Ok(())
    }

    fn abort(&self, reason: &str) -> bool {
        self.chain.abort(reason)
    }

    fn cancel(&self, cause: u8) -> PyResult<bool> {
        Ok(self.chain.cancel(stop_of(cause)?))
    }

    #[getter]
    fn cancel_cause(&self) -> u8 {
        self.chain.cancel_cause()
    }

    #[getter]
    fn aborted(&self) -> bool {
        self.chain.is_aborted()
    }

    #[getter]
    fn in_flight(&self) -> u64 {
        self.chain.in_flight()
    }

    #[getter]
    fn max_cost_usd(&self) -> f64 {
        self.chain.limits().max_cost_usd
    }

    fn add_cost(&self, cost_usd: f64) -> PyResult<f64> {
        Ok(self.chain.add_cost(check_cost(cost_usd, "cost_usd")?))
    }

    /// (step_count, cost_usd, retries_used, aborted, abort_reason, elapsed_ms)
    fn counters(&self) -> (u64, f64, u64, bool, Option<String>, f64) {
        let c = self.chain.counters();
        (
            c.steps,
            c.cost_usd,
            c.retries,
            c.aborted,
            c.abort_reason,
            c.elapsed_ms,
        )
    }

    fn __len__(&self) -> usize {
        self.chain.record_count()
    }

    /// Records `start..stop` as (node_id, parent_id, kind, name, start_unix_s, end_unix_s,
    /// status, cost_usd, retries_used).
    fn records(&self, start: usize, stop: usize) -> Vec<RecordTuple> {
        let chain = &self.chain;
        chain
            .records(start, stop)
            .into_iter()
            .map(|r| {
                let (start_s, end_s) = (chain.wall_time(r.start_ns), chain.wall_time(r.end_ns));
                let kind = r.kind.as_str();
                (
                    r.node_id,
                    r.parent_id,
                    kind,
                    r.name,
                    start_s,
                    end_s,
                    r.status.as_str(),
                    r.cost_usd,
                    r.retries,
                )
            })
            .collect()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChainCore>()
}
