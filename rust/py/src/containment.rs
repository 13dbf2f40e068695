//! `ChainCore`: the native state behind `chainwarden.containment.ExecutionContext` — limits,
//! counters, node records and the chain's call graph, fused.
//!
//! The Python layer makes one call to admit a wrap and create its node (`begin`) and one to
//! close both (`succeed` / `fail`); nodes travel as ints so the hot path formats no ids.
//! Everything else serves snapshots and cancellation.

use chainwarden_core::containment::{Contained, GraphEnd, Limits, Status, Stop};
use chainwarden_core::recorder::divergence::DivergenceEvent;
use chainwarden_core::recorder::ids::{format_id, NodeId};
use chainwarden_core::recorder::Kind;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::errors::recorder_err;

type RecordTuple = (
    String,
    Option<String>,
    &'static str,
    String,
    f64,
    Option<f64>,
    &'static str,
    f64,
    u32,
);

fn id_string(id: NodeId) -> String {
    format_id(id, &mut [0; 24]).to_owned()
}

fn kind_arg(code: u8) -> PyResult<Kind> {
    match code {
        0 => Ok(Kind::Llm),
        1 => Ok(Kind::Tool),
        _ => Err(PyValueError::new_err(format!(
            "kind code must be 0 (llm) or 1 (tool), got {code}"
        ))),
    }
}

fn status_arg(code: u8) -> PyResult<Status> {
    Ok(match code {
        2 => Status::Halted,
        3 => Status::Aborted,
        4 => Status::Timeout,
        5 => Status::Error,
        _ => {
            return Err(PyValueError::new_err(format!(
                "status code must be 2..=5, got {code}"
            )))
        }
    })
}

fn cause_arg(code: u8) -> PyResult<Stop> {
    Ok(match code {
        1 => Stop::Aborted,
        2 => Stop::Budget,
        5 => Stop::Timeout,
        _ => {
            return Err(PyValueError::new_err(format!(
                "{code} is not a cancellation cause (1, 2, 5)"
            )))
        }
    })
}

fn divergence_dict<'py>(
    py: Python<'py>,
    chain_id: &str,
    event: DivergenceEvent,
    name: Option<String>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match event {
        DivergenceEvent::Pattern {
            mode,
            kind,
            repeat_count,
            ..
        } => {
            d.set_item("event_type", "divergence_suspected")?;
            d.set_item("detection_mode", mode.as_str())?;
            d.set_item("signature", (kind.as_str(), name.unwrap_or_default()))?;
            d.set_item("repeat_count", repeat_count)?;
        }
        DivergenceEvent::CostRate {
            cost_rate,
            threshold,
            node,
        } => {
            d.set_item("event_type", "COST_RATE_EXCEEDED")?;
            d.set_item("cost_rate", cost_rate)?;
            d.set_item("threshold", threshold)?;
            d.set_item("node_id", id_string(node))?;
        }
        DivergenceEvent::TokenVelocity {
            token_velocity,
            threshold,
            node,
        } => {
            d.set_item("event_type", "TOKEN_VELOCITY_EXCEEDED")?;
            d.set_item("token_velocity", token_velocity)?;
            d.set_item("threshold", threshold)?;
            d.set_item("node_id", id_string(node))?;
        }
    }
    d.set_item("severity", "warn")?;
    d.set_item("chain_id", chain_id)?;
    Ok(d)
}

#[pyclass(frozen, module = "chainwarden._core")]
pub struct ChainCore {
    inner: Contained,
}

#[pymethods]
impl ChainCore {
    #[new]
    fn new(
        max_cost_usd: f64,
        max_steps: u64,
        max_retries_total: u64,
        timeout_ms: u64,
        chain_id: &str,
    ) -> PyResult<Self> {
        if !max_cost_usd.is_finite() || max_cost_usd < 0.0 {
            return Err(PyValueError::new_err(format!(
                "max_cost_usd must be finite and >= 0, got {max_cost_usd}"
            )));
        }
        let limits = Limits {
            max_cost_usd,
            max_steps,
            max_retries_total,
            timeout_ms,
        };
        let inner = Contained::new(limits, chain_id).map_err(recorder_err)?;
        Ok(ChainCore { inner })
    }

    #[getter]
    fn root_id(&self) -> String {
        id_string(self.inner.root())
    }

    /// The id of node `node` as the graph spells it (`n000042`).
    fn node_name(&self, node: NodeId) -> String {
        id_string(node)
    }

    /// Admits a call and returns its node (a positive int), or minus the refusing stop code
    /// (the node then exists already, halted, and is recorded). See `Contained::begin` for
    /// `parent_hint` and `nest`.
    #[allow(clippy::too_many_arguments)]
    fn begin(
        &self,
        parent_hint: Option<NodeId>,
        kind: u8,
        name: &str,
        model: Option<&str>,
        cost_estimate: f64,
        dispatch: bool,
        nest: bool,
    ) -> PyResult<i64> {
        let begun = self
            .inner
            .begin(
                parent_hint,
                kind_arg(kind)?,
                name,
                model,
                cost_estimate,
                dispatch,
                nest,
            )
            .map_err(recorder_err)?;
        Ok(match begun {
            Ok(node) => i64::try_from(node).unwrap_or(i64::MAX),
            Err(stop) => -i64::from(stop.code()),
        })
    }

    fn dispatch(&self, node: NodeId) -> PyResult<()> {
        self.inner.dispatch(node).map_err(recorder_err)
    }

    /// Closes a call that completed; `named` tells whether it had an operation name.
    fn succeed(&self, node: NodeId, named: bool, cost_usd: f64) -> PyResult<()> {
        self.inner
            .succeed(node, named, cost_usd)
            .map_err(recorder_err)
    }

    /// Closes a failed or stopped call admitted with `cost_estimate`; returns the chain's
    /// retries used afterwards.
    #[pyo3(signature = (node, named, cost_estimate, retry, status, error_class, halt_reason=None))]
    fn fail(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
        retry: bool,
        status: u8,
        error_class: &str,
        halt_reason: Option<&str>,
    ) -> PyResult<u64> {
        let end = halt_reason.map_or(GraphEnd::Fail(error_class), GraphEnd::Halt);
        self.inner
            .fail(node, named, cost_estimate, retry, status_arg(status)?, end)
            .map_err(recorder_err)
    }

    fn abort(&self, reason: &str) -> bool {
        self.inner.chain().abort(reason)
    }

    fn cancel(&self, cause: u8) -> PyResult<bool> {
        Ok(self.inner.chain().cancel(cause_arg(cause)?))
    }

    #[getter]
    fn cancel_cause(&self) -> u8 {
        self.inner.chain().cancel_cause()
    }

    #[getter]
    fn aborted(&self) -> bool {
        self.inner.chain().is_aborted()
    }

    #[getter]
    fn in_flight(&self) -> u64 {
        self.inner.chain().in_flight()
    }

    fn add_cost(&self, cost_usd: f64) -> PyResult<f64> {
        if !cost_usd.is_finite() || cost_usd < 0.0 {
            return Err(PyValueError::new_err(format!(
                "cost_usd must be finite and >= 0, got {cost_usd}"
            )));
        }
        Ok(self.inner.chain().add_cost(cost_usd))
    }

    /// (step_count, cost_usd, retries_used, aborted, abort_reason, elapsed_ms, record_count)
    #[allow(clippy::type_complexity)]
    fn counters(&self) -> (u64, f64, u64, bool, Option<String>, f64, usize) {
        let c = self.inner.counters();
        (
            c.steps,
            c.cost_usd,
            c.retries,
            c.aborted,
            c.abort_reason,
            c.elapsed_ms,
            c.records,
        )
    }

    /// Finished calls `start..stop` in completion order as (node_id, parent_id, kind, name,
    /// start_unix_s, end_unix_s, status, cost_usd, retries_used).
    fn records(&self, start: usize, stop: usize) -> Vec<RecordTuple> {
        let seconds = |ms: i64| ms as f64 / 1000.0;
        self.inner
            .records(start, stop)
            .into_iter()
            .map(|r| {
                let parent = r.parent.map(id_string);
                let (kind, status) = (r.kind.as_str(), r.status.as_str());
                let (start_s, end_s) = (seconds(r.start_ms), r.end_ms.map(seconds));
                (
                    id_string(r.node),
                    parent,
                    kind,
                    r.name,
                    start_s,
                    end_s,
                    status,
                    r.cost_usd,
                    r.retries,
                )
            })
            .collect()
    }

    /// The graph's aggregate counters (decision 3 key order), read without the graph lock.
    fn aggregates<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::recorder::snapshot::aggregates(py, &self.inner.aggregates())
    }

    /// The whole graph as JSON, in the format of `ExecutionGraph.snapshot_json()`.
    fn graph_snapshot_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.inner.graph().snapshot_json())
    }

    fn drain_divergence<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let graph = self.inner.graph();
        let out = PyList::empty(py);
        for (event, name) in graph.drain_divergence_events() {
            out.append(divergence_dict(py, graph.chain_id(), event, name)?)?;
        }
        Ok(out)
    }

    fn __len__(&self) -> usize {
        self.inner.counters().records
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChainCore>()
}
