//! `ExecutionGraph`: the native class users import. Argument checks, hook dispatch and
//! object creation only; the graph itself is `chainwarden_core::recorder::Graph`.

use chainwarden_core::ids::parse_id;
use chainwarden_core::recorder::events::{Finished, Started};
use chainwarden_core::recorder::{Config, FinishedCall, Graph, Kind, Recorded, Status};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use pyo3::{PyTraverseError, PyVisit};

use super::args::{self as record_args, name as arg, Int, KindArg, Number, StatusArg};
use super::hooks::{check_observer, fire, notify, observer_list, HookList};
use super::node_event::NodeEvent;
use super::snapshot::{self, id_str};
use crate::convert::{metadata_to_py, number, opt_int};
use crate::errors;
use crate::exceptions::{invalid_argument, invalid_argument_type};

/// Lets other threads run Python while this one waits for the graph lock (the one way the
/// bindings release the GIL: `py.detach`). Only called from methods entered attached, so
/// `attach` is a counter bump.
fn release_gil_while(f: &(dyn Fn() + Sync)) {
    Python::attach(|py| py.detach(f));
}

#[pyclass(
    frozen,
    subclass,
    module = "chainwarden._core",
    name = "ExecutionGraph"
)]
pub struct ExecutionGraph {
    graph: Graph,
    observers: HookList,
    subscribers: HookList,
}

fn kind_arg(py: Python<'_>, kind: &str) -> PyResult<Kind> {
    Kind::parse(kind).map_err(|u| {
        let expected: Vec<String> = u.expected.iter().map(|t| format!("'{t}'")).collect();
        invalid_argument(
            py,
            Some("kind"),
            format!("kind must be one of {}; got {kind:?}", expected.join(", ")),
        )
    })
}

/// The constructor's numeric settings, shared with `from_snapshot`.
fn config(
    py: Python<'_>,
    cost_rate_threshold_usd_per_sec: Option<&Bound<'_, PyAny>>,
    token_velocity_threshold: Option<&Bound<'_, PyAny>>,
    max_nodes: Option<&Bound<'_, PyAny>>,
) -> PyResult<Config> {
    let defaults = Config::default();
    let threshold =
        |v: Option<&Bound<'_, PyAny>>, field, default| v.map_or(Ok(default), |v| number(v, field));
    let max_nodes = opt_int(max_nodes, "max_nodes")?.unwrap_or(0);
    if max_nodes < 0 {
        return Err(invalid_argument(
            py,
            Some("max_nodes"),
            format!("max_nodes must be >= 0 (0 = unlimited); got {max_nodes}"),
        ));
    }
    Ok(Config {
        cost_rate_threshold_usd_per_sec: threshold(
            cost_rate_threshold_usd_per_sec,
            "cost_rate_threshold_usd_per_sec",
            defaults.cost_rate_threshold_usd_per_sec,
        )?,
        token_velocity_threshold: threshold(
            token_velocity_threshold,
            "token_velocity_threshold",
            defaults.token_velocity_threshold,
        )?,
        max_nodes: usize::try_from(max_nodes).unwrap_or(usize::MAX),
    })
}

impl ExecutionGraph {
    pub fn core(&self) -> &Graph {
        &self.graph
    }

    /// `on_node_start`, when a node entered `running` and an observer listens.
    fn started(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyString>,
        started: Option<Box<Started>>,
    ) -> PyResult<()> {
        let Some(s) = started else {
            return Ok(());
        };
        notify(py, &self.observers, "on_node_start", || {
            (
                node_id,
                s.name.as_str(),
                metadata_to_py(py, s.metadata.as_ref())?,
            )
                .into_pyobject(py)
        })
    }

    /// The hooks of a terminal transition, only if it happened: the observers' method for
    /// `status`, then the subscribers. The one place that says which hooks a node's end fires,
    /// whether it was marked or recorded finished.
    fn ended(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyString>,
        status: Status,
        cost_usd: f64,
        error_class: Option<&str>,
        finished: Finished,
    ) -> PyResult<()> {
        if !finished.applied {
            return Ok(());
        }
        match status {
            Status::Success => {
                let duration = finished.duration_ms as f64;
                notify(py, &self.observers, "on_node_complete", || {
                    (node_id, cost_usd, duration).into_pyobject(py)
                })?;
            }
            Status::Fail => {
                let class = error_class.unwrap_or_default();
                notify(py, &self.observers, "on_node_failed", || {
                    (node_id, class).into_pyobject(py)
                })?;
            }
            _ => {
                let reason = finished.reason.as_deref().unwrap_or_default();
                notify(py, &self.observers, "on_node_failed", || {
                    (node_id, reason).into_pyobject(py)
                })?;
                notify(py, &self.observers, "on_decision", || {
                    (node_id, "HALT", reason).into_pyobject(py)
                })?;
            }
        }
        if let Some(event) = finished.event {
            let event = Bound::new(py, NodeEvent::from_core(*event, self.graph.chain_id()))?;
            fire(py, &self.subscribers, event.as_any())?;
        }
        Ok(())
    }

    /// Records one finished call and returns its id, after its hooks: what both entries of
    /// `record_call` end in (`super::fast_call`).
    pub(super) fn record<'py>(
        &self,
        py: Python<'py>,
        call: &mut FinishedCall<'_>,
    ) -> errors::Result<Bound<'py, PyString>> {
        let (status, cost_usd, error_class) = (call.status, call.cost_usd, call.error_class);
        let (want_start, want_event) = (self.observers.any(), self.subscribers.any());
        let recorded = self.graph.record_call(call, want_start, want_event)?;
        if !(want_start || want_event) {
            // Nothing listens: no hook to fire, only the id to return.
            return Ok(id_str(py, recorded.id));
        }
        Ok(self.recorded(py, recorded, status, cost_usd, error_class)?)
    }

    /// A recorded call's id, after the hooks its start and its end fire.
    fn recorded<'py>(
        &self,
        py: Python<'py>,
        r: Recorded,
        status: Status,
        cost_usd: f64,
        error_class: Option<&str>,
    ) -> PyResult<Bound<'py, PyString>> {
        let node_id = id_str(py, r.id);
        self.started(py, &node_id, r.started)?;
        self.ended(py, &node_id, status, cost_usd, error_class, r.finished)?;
        Ok(node_id)
    }
}

#[pymethods]
impl ExecutionGraph {
    #[new]
    #[pyo3(
        signature = (chain_id=None, cost_rate_threshold_usd_per_sec=None, token_velocity_threshold=None, observers=None, max_nodes=None),
        text_signature = "(chain_id=None, cost_rate_threshold_usd_per_sec=0.1, token_velocity_threshold=500.0, observers=None, max_nodes=0)"
    )]
    fn new(
        py: Python<'_>,
        chain_id: Option<String>,
        cost_rate_threshold_usd_per_sec: Option<&Bound<'_, PyAny>>,
        token_velocity_threshold: Option<&Bound<'_, PyAny>>,
        observers: Option<&Bound<'_, PyAny>>,
        max_nodes: Option<&Bound<'_, PyAny>>,
    ) -> errors::Result<Self> {
        let config = config(
            py,
            cost_rate_threshold_usd_per_sec,
            token_velocity_threshold,
            max_nodes,
        )?;
        let chain_id = match chain_id.filter(|c| !c.is_empty()) {
            Some(c) => c,
            None => py.import("uuid")?.call_method0("uuid4")?.str()?.to_string(),
        };
        let graph = Graph::new(chain_id, config)?.with_blocking_section(release_gil_while);
        let observers = observer_list(observers)?;
        Ok(ExecutionGraph {
            graph,
            observers: HookList::from_vec(observers),
            subscribers: HookList::default(),
        })
    }

    #[getter]
    fn chain_id(&self) -> &str {
        self.graph.chain_id()
    }

    #[getter]
    fn root_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyString>> {
        self.graph.root_id().map(|r| id_str(py, r))
    }

    /// Read-only alias of `root_id`: code written against veronica-core reads `_root_id`.
    #[getter]
    fn _root_id<'py>(&self, py: Python<'py>) -> Option<Bound<'py, PyString>> {
        self.root_id(py)
    }

    /// The observers attached now, in order, as a new list (changing it changes nothing): code
    /// written against veronica-core reads its private `_observers` list.
    #[getter]
    fn _observers(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.observers
            .current()
            .iter()
            .map(|o| o.clone_ref(py))
            .collect()
    }

    /// The subscribers attached now, as `_observers` (veronica-core's `_subscribers`).
    #[getter]
    fn _subscribers(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.subscribers
            .current()
            .iter()
            .map(|o| o.clone_ref(py))
            .collect()
    }

    /// A graph rebuilt from a `snapshot()` dict or `snapshot_json()` bytes/str: same chain
    /// id, node ids, fields and aggregates; new ids continue after the highest one.
    /// Observers and subscribers are not part of a snapshot: add them afterwards.
    #[classmethod]
    #[pyo3(
        signature = (snapshot, *, cost_rate_threshold_usd_per_sec=None, token_velocity_threshold=None, max_nodes=None),
        text_signature = "(snapshot, *, cost_rate_threshold_usd_per_sec=0.1, token_velocity_threshold=500.0, max_nodes=0)"
    )]
    fn from_snapshot(
        cls: &Bound<'_, pyo3::types::PyType>,
        snapshot: &Bound<'_, PyAny>,
        cost_rate_threshold_usd_per_sec: Option<&Bound<'_, PyAny>>,
        token_velocity_threshold: Option<&Bound<'_, PyAny>>,
        max_nodes: Option<&Bound<'_, PyAny>>,
    ) -> errors::Result<Self> {
        let py = cls.py();
        let config = config(
            py,
            cost_rate_threshold_usd_per_sec,
            token_velocity_threshold,
            max_nodes,
        )?;
        let text: Vec<u8> = if let Ok(b) = snapshot.cast::<PyBytes>() {
            b.as_bytes().to_vec()
        } else if let Ok(s) = snapshot.cast::<PyString>() {
            s.to_str()?.as_bytes().to_vec()
        } else if snapshot.is_instance_of::<PyDict>() {
            // The dict goes through the same strict reader as the bytes: one set of rules.
            let kwargs = PyDict::new(py);
            kwargs.set_item("allow_nan", false)?;
            let dumped = py
                .import("json")?
                .call_method("dumps", (snapshot,), Some(&kwargs))
                .map_err(|e| {
                    invalid_argument(
                        py,
                        Some("snapshot"),
                        format!("invalid snapshot: not JSON-serialisable ({})", e.value(py)),
                    )
                })?;
            dumped.cast::<PyString>()?.to_str()?.as_bytes().to_vec()
        } else {
            return Err(invalid_argument_type(
                py,
                Some("snapshot"),
                format!(
                    "snapshot must be a dict, bytes or str, not {}",
                    snapshot.get_type().name()?
                ),
            )
            .into());
        };
        let graph = py
            .detach(|| Graph::from_snapshot_json(&text, config))?
            .with_blocking_section(release_gil_while);
        Ok(ExecutionGraph {
            graph,
            observers: HookList::default(),
            subscribers: HookList::default(),
        })
    }

    #[getter]
    fn max_nodes(&self) -> usize {
        self.graph.config().max_nodes
    }

    #[getter]
    fn pruned_count(&self) -> u64 {
        self.graph.pruned_count()
    }

    fn __len__(&self) -> usize {
        self.graph.len()
    }

    fn add_observer(&self, py: Python<'_>, observer: &Bound<'_, PyAny>) -> PyResult<()> {
        check_observer(observer, "observer")?;
        self.observers.add(py, observer);
        Ok(())
    }

    fn remove_observer(&self, py: Python<'_>, observer: &Bound<'_, PyAny>) {
        self.observers.remove(py, observer);
    }

    fn add_subscriber(&self, py: Python<'_>, callback: &Bound<'_, PyAny>) -> PyResult<()> {
        if !callback.is_callable() {
            return Err(invalid_argument_type(
                py,
                Some("callback"),
                "subscriber must be callable",
            ));
        }
        self.subscribers.add(py, callback);
        Ok(())
    }

    fn remove_subscriber(&self, py: Python<'_>, callback: &Bound<'_, PyAny>) {
        self.subscribers.remove(py, callback);
    }

    #[pyo3(signature = (name, metadata=None))]
    fn create_root<'py>(
        &self,
        py: Python<'py>,
        name: &str,
        metadata: Option<&Bound<'py, PyAny>>,
    ) -> errors::Result<Bound<'py, PyString>> {
        let meta = crate::convert::metadata(metadata)?;
        let id = self.graph.create_root(name, meta)?;
        Ok(id_str(py, id))
    }

    #[pyo3(signature = (parent_id, kind, name, model=None, metadata=None, *, running=false))]
    fn begin_node<'py>(
        &self,
        py: Python<'py>,
        parent_id: &str,
        kind: &str,
        name: &str,
        model: Option<&str>,
        metadata: Option<&Bound<'py, PyAny>>,
        running: bool,
    ) -> errors::Result<Bound<'py, PyString>> {
        let kind = kind_arg(py, kind)?;
        let meta = crate::convert::metadata(metadata)?;
        let want_start = running && self.observers.any();
        let (id, started) = self
            .graph
            .begin_node(parent_id, kind, name, model, meta, running, want_start)?;
        let node_id = id_str(py, id);
        self.started(py, &node_id, started)?;
        Ok(node_id)
    }

    fn mark_running(&self, py: Python<'_>, node_id: &Bound<'_, PyString>) -> errors::Result<()> {
        let want_start = self.observers.any();
        let started = self.graph.mark_running(node_id.to_str()?, want_start)?;
        Ok(self.started(py, node_id, started)?)
    }

    #[pyo3(signature = (node_id, cost_usd, tokens_in=None, tokens_out=None))]
    fn mark_success(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyString>,
        cost_usd: &Bound<'_, PyAny>,
        tokens_in: Option<&Bound<'_, PyAny>>,
        tokens_out: Option<&Bound<'_, PyAny>>,
    ) -> errors::Result<()> {
        let cost = number(cost_usd, "cost_usd")?;
        let tokens_in = opt_int(tokens_in, "tokens_in")?;
        let tokens_out = opt_int(tokens_out, "tokens_out")?;
        let finished = self.graph.mark_success(
            node_id.to_str()?,
            cost,
            tokens_in,
            tokens_out,
            self.subscribers.any(),
        )?;
        Ok(self.ended(py, node_id, Status::Success, cost, None, finished)?)
    }

    #[pyo3(signature = (node_id, error_class, stop_reason=None))]
    fn mark_failure(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyString>,
        error_class: &str,
        stop_reason: Option<&str>,
    ) -> errors::Result<()> {
        let finished = self.graph.mark_failure(
            node_id.to_str()?,
            error_class,
            stop_reason,
            self.subscribers.any(),
        )?;
        let class = Some(error_class);
        Ok(self.ended(py, node_id, Status::Fail, 0.0, class, finished)?)
    }

    #[pyo3(signature = (node_id, stop_reason=None))]
    fn mark_halt(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyString>,
        stop_reason: Option<&str>,
    ) -> errors::Result<()> {
        let finished =
            self.graph
                .mark_halt(node_id.to_str()?, stop_reason, self.subscribers.any())?;
        Ok(self.ended(py, node_id, Status::Halt, 0.0, None, finished)?)
    }

    /// Records a call that already finished in one step, as `begin_node(running=True)` and
    /// `mark_success` / `mark_failure` / `mark_halt` would, with the same hooks
    /// (docs/recorder.md "Recording finished calls").
    #[allow(clippy::too_many_arguments)]
    #[pyo3(
        signature = (parent, kind, name, *, cost_usd, tokens_in=None, tokens_out=None, model=None, status=record_args::success(), started_at=None, ended_at=None, metadata=None, error_class=None, stop_reason=None),
        text_signature = "($self, parent, kind, name, *, cost_usd, tokens_in=None, tokens_out=None, model=None, status='success', started_at=None, ended_at=None, metadata=None, error_class=None, stop_reason=None)"
    )]
    fn record_call<'py>(
        &self,
        py: Python<'py>,
        parent: &str,
        kind: KindArg<arg::Kind>,
        name: &str,
        cost_usd: Number<arg::CostUsd>,
        tokens_in: Option<Int<arg::TokensIn>>,
        tokens_out: Option<Int<arg::TokensOut>>,
        model: Option<&str>,
        status: StatusArg<arg::Status>,
        started_at: Option<Int<arg::StartedAt>>,
        ended_at: Option<Int<arg::EndedAt>>,
        metadata: Option<&Bound<'py, PyAny>>,
        error_class: Option<&str>,
        stop_reason: Option<&str>,
    ) -> errors::Result<Bound<'py, PyString>> {
        let mut call = FinishedCall {
            parent: record_args::parent_id(parent)?,
            kind: kind.0,
            name,
            model,
            status: status.0,
            cost_usd: cost_usd.0,
            tokens_in: tokens_in.map(|t| t.0),
            tokens_out: tokens_out.map(|t| t.0),
            started_ms: started_at.map(|t| t.0),
            ended_ms: ended_at.map(|t| t.0),
            error_class,
            stop_reason,
            metadata: crate::convert::metadata(metadata)?,
        };
        self.record(py, &mut call)
    }

    /// Records finished calls in bulk (log ingestion): `rows` is an iterable of mappings of
    /// `record_call`'s arguments, recorded in order in one step. The whole batch is checked
    /// first: a bad row raises naming its index and field (`rows[3].cost_usd`) and changes
    /// nothing. Returns the new ids, in row order (docs/recorder.md "Recording finished calls").
    fn record_calls<'py>(
        &self,
        py: Python<'py>,
        rows: &Bound<'py, PyAny>,
    ) -> errors::Result<Bound<'py, PyList>> {
        let mut rows = record_args::rows(rows)?;
        let mut calls = Vec::with_capacity(rows.len());
        for (i, row) in rows.iter_mut().enumerate() {
            calls.push(row.call(i)?);
        }
        let batch =
            self.graph
                .record_calls(&mut calls, self.observers.any(), self.subscribers.any())?;
        drop(calls);
        if batch.hooked.is_empty() {
            let ids = (0..batch.len as u64).map(|i| id_str(py, batch.first + i));
            return Ok(PyList::new(py, ids)?);
        }
        let mut ids = Vec::with_capacity(batch.len);
        for (row, r) in rows.iter().zip(batch.hooked) {
            let class = row.error_class.as_deref();
            ids.push(self.recorded(py, r, row.status, row.cost_usd, class)?);
        }
        Ok(PyList::new(py, ids)?)
    }

    /// Adds the keys of `metadata` to a node's metadata, at any status (docs/recorder.md
    /// "Annotations").
    fn annotate(&self, node_id: &str, metadata: &Bound<'_, PyAny>) -> errors::Result<()> {
        if let Some(value) = crate::convert::metadata(Some(metadata))? {
            self.graph.annotate(node_id, value)?;
        }
        Ok(())
    }

    fn increment_retries(&self, node_id: &str) -> errors::Result<()> {
        Ok(self.graph.increment_retries(node_id)?)
    }

    fn drain_divergence_events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        snapshot::divergence_events(
            py,
            self.graph.chain_id(),
            self.graph.drain_divergence_events(),
        )
    }

    fn snapshot<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        snapshot::snapshot(py, &self.graph)
    }

    /// The snapshot as JSON bytes, identical to `json.dumps(self.snapshot())`.
    fn snapshot_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        snapshot::snapshot_json_bytes(py, &self.graph)
    }

    /// The aggregate counters only, read without taking the graph lock.
    fn aggregates<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        snapshot::aggregates(py, &self.graph.aggregates())
    }

    /// One node's fields, as in `snapshot()["nodes"][node_id]`.
    fn node<'py>(&self, py: Python<'py>, node_id: &str) -> errors::Result<Bound<'py, PyDict>> {
        snapshot::node(py, &self.graph, parse_id(node_id))?.ok_or_else(|| {
            chainwarden_core::recorder::RecorderError::NodeNotFound(node_id.to_owned()).into()
        })
    }

    fn __contains__(&self, node_id: &Bound<'_, PyAny>) -> bool {
        node_id
            .cast::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok().and_then(parse_id))
            .is_some_and(|id| self.graph.lock().arena.get(id).is_some())
    }

    fn __repr__(&self) -> String {
        let a = self.graph.aggregates();
        format!(
            "<ExecutionGraph chain_id={:?} nodes={} llm_calls={} tool_calls={} cost_usd={}>",
            self.graph.chain_id(),
            self.graph.len(),
            a.total_llm_calls,
            a.total_tool_calls,
            a.total_cost_usd
        )
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.observers.traverse(&visit)?;
        self.subscribers.traverse(&visit)
    }

    fn __clear__(&self) {
        self.observers.clear();
        self.subscribers.clear();
    }
}
