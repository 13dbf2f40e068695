//! Thin bindings a durable store needs from the engine: the delta of a change, a bulk load from stored rows,
//! and leased claims (docs/dag.md "Stores and workers"). Free functions taking the engine keep them apart from
//! the `DagEngine` method block.

use chainwarden_core::dag::{Dag, Mark};
use parking_lot::Mutex;
use pyo3::prelude::*;

use super::args::{name, ArgName, Rows};
use super::change::{DagDelta, DagMark};
use super::convert::count;
use super::engine::DagEngine;
use super::errors::invalid_arg;
use crate::errors::Error;

fn with<R: Send>(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    f: impl FnOnce(&mut Dag) -> R + Send,
) -> R {
    let engine = engine.get();
    py.detach(|| f(&mut engine.inner.lock()))
}

fn finite(py: Python<'_>, v: f64, what: &str) -> PyResult<f64> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(invalid_arg(
            py,
            what,
            format!("{what} must be a finite number"),
        ))
    }
}

/// Where a change starts (events, nodes, edges): pass it to `dag_delta` once the change is applied.
#[pyfunction]
pub fn dag_change_mark(py: Python<'_>, engine: &Bound<'_, DagEngine>) -> DagMark {
    with(py, engine, |g| g.change_mark()).into()
}

/// The rows written since `mark` (a `dag_change_mark`, or a `DagCommit.start`); `extra_node_ids` names nodes
/// changed without an event (a renewed lease).
#[pyfunction]
#[pyo3(signature = (engine, mark, extra_node_ids=Vec::new()))]
pub fn dag_delta(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    mark: PyRef<'_, DagMark>,
    extra_node_ids: Vec<String>,
) -> PyResult<DagDelta> {
    let mark = Mark::from(&*mark);
    let d = with(py, engine, |g| g.delta_since(mark, &extra_node_ids));
    DagDelta::new(py, d)
}

/// Stored rows as the driver returned them: `(arena position, record)`, the text borrowed from the Python
/// string, not copied (160,000 rows of a 40,000-node chat).
fn borrowed<A: ArgName>(rows: &Rows<A>) -> Vec<(usize, &str)> {
    rows.0.iter().map(|(seq, text)| (*seq, &**text)).collect()
}

/// An engine built from stored `(seq, record)` rows (any order), validated like `from_json`; `leaf_repair`
/// is the graph's flag, kept by the store beside its rows.
#[pyfunction]
#[pyo3(signature = (graph_id, nodes, edges, events, *, leaf_repair=true))]
pub fn dag_from_records(
    py: Python<'_>,
    graph_id: &str,
    nodes: Rows<name::Nodes>,
    edges: Rows<name::Edges>,
    events: Rows<name::Events>,
    leaf_repair: bool,
) -> PyResult<DagEngine> {
    if graph_id.is_empty() {
        return Err(invalid_arg(
            py,
            "graph_id",
            "graph_id must be a non-empty string",
        ));
    }
    let dag = py
        .detach(|| {
            Dag::from_records(
                graph_id,
                &borrowed(&nodes),
                &borrowed(&edges),
                &borrowed(&events),
            )
        })
        .map_err(|e| PyErr::from(Error::from(e)))?;
    let mut dag = dag;
    dag.set_leaf_repair(leaf_repair);
    Ok(DagEngine {
        inner: Mutex::new(dag),
    })
}

/// Catch-up: applies rows committed elsewhere in place (`(seq, record)` lists); on error, reload instead.
#[pyfunction]
pub fn dag_apply_records(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    nodes: Rows<name::Nodes>,
    edges: Rows<name::Edges>,
    events: Rows<name::Events>,
) -> PyResult<()> {
    with(py, engine, |g| {
        g.apply_records(&borrowed(&nodes), &borrowed(&edges), &borrowed(&events))
    })
    .map_err(|e| PyErr::from(Error::from(e)))
}

#[pyfunction]
#[pyo3(signature = (engine, limit, worker_id=None, lease_until=None))]
pub fn dag_claim_leased(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    limit: &Bound<'_, PyAny>,
    worker_id: Option<String>,
    lease_until: Option<f64>,
) -> PyResult<Vec<String>> {
    let limit = count(limit, "limit", 0)?;
    let until = lease_until
        .map(|t| finite(py, t, "lease_until"))
        .transpose()?;
    Ok(with(py, engine, |g| {
        g.claim_leased(limit, worker_id.as_deref(), until)
    }))
}

#[pyfunction]
pub fn dag_heartbeat(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    node_ids: Vec<String>,
    worker_id: String,
    lease_until: f64,
) -> PyResult<Vec<String>> {
    let until = finite(py, lease_until, "lease_until")?;
    with(py, engine, |g| g.heartbeat(&node_ids, &worker_id, until))
        .map_err(|e| PyErr::from(Error::from(e)))
}

#[pyfunction]
#[pyo3(signature = (engine, now, max_attempts))]
pub fn dag_reclaim_expired(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    now: Option<f64>,
    max_attempts: &Bound<'_, PyAny>,
) -> PyResult<Vec<String>> {
    let max = count(max_attempts, "max_attempts", 1)?;
    let max = u32::try_from(max)
        .map_err(|_| invalid_arg(py, "max_attempts", "max_attempts is too large"))?;
    let now = now.map(|t| finite(py, t, "now")).transpose()?;
    Ok(with(py, engine, |g| g.reclaim_expired(now, max)))
}

/// Gives back, unfinished and without counting an attempt, the nodes among `node_ids` that `worker_id` holds.
#[pyfunction]
pub fn dag_release(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    node_ids: Vec<String>,
    worker_id: String,
) -> PyResult<Vec<String>> {
    with(py, engine, |g| g.release(&node_ids, &worker_id)).map_err(|e| PyErr::from(Error::from(e)))
}

/// A graph's work at a glance, kept on its row by a store: how many nodes are claimable now, how many
/// run, and the earliest lease end among the running ones (None without leases). `dag_work` reads it
/// from an engine; a store builds it from the row it read.
#[pyclass(frozen, eq, get_all, module = "chainwarden._core")]
#[derive(Clone, Copy, PartialEq)]
pub struct DagWork {
    claimable: usize,
    running: usize,
    lease_due: Option<f64>,
}

#[pymethods]
impl DagWork {
    #[new]
    #[pyo3(signature = (claimable=0, running=0, lease_due=None))]
    fn new(claimable: usize, running: usize, lease_due: Option<f64>) -> Self {
        DagWork {
            claimable,
            running,
            lease_due,
        }
    }

    fn __repr__(&self) -> String {
        let due = self
            .lease_due
            .map_or_else(|| "None".to_owned(), |d| format!("{d:?}"));
        format!(
            "DagWork(claimable={}, running={}, lease_due={due})",
            self.claimable, self.running
        )
    }
}

/// The engine's work summary (`DagWork`).
#[pyfunction]
pub fn dag_work(py: Python<'_>, engine: &Bound<'_, DagEngine>) -> DagWork {
    let w = with(py, engine, |g| g.work());
    DagWork {
        claimable: w.claimable,
        running: w.running,
        lease_due: w.lease_due,
    }
}

/// Raises `DagPreconditionError` (`dag.claim.lease_lost`) unless `worker_id` still holds `node_id`.
#[pyfunction]
pub fn dag_check_lease(
    py: Python<'_>,
    engine: &Bound<'_, DagEngine>,
    node_id: String,
    worker_id: String,
) -> PyResult<()> {
    with(py, engine, |g| g.check_lease(&node_id, &worker_id))
        .map_err(|e| PyErr::from(Error::from(e)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DagWork>()?;
    m.add_function(wrap_pyfunction!(dag_change_mark, m)?)?;
    m.add_function(wrap_pyfunction!(dag_delta, m)?)?;
    m.add_function(wrap_pyfunction!(dag_from_records, m)?)?;
    m.add_function(wrap_pyfunction!(dag_apply_records, m)?)?;
    m.add_function(wrap_pyfunction!(dag_claim_leased, m)?)?;
    m.add_function(wrap_pyfunction!(dag_heartbeat, m)?)?;
    m.add_function(wrap_pyfunction!(dag_reclaim_expired, m)?)?;
    m.add_function(wrap_pyfunction!(dag_check_lease, m)?)?;
    m.add_function(wrap_pyfunction!(dag_release, m)?)?;
    m.add_function(wrap_pyfunction!(dag_work, m)?)?;
    Ok(())
}
