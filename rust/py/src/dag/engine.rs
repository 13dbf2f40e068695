//! `DagEngine`: the native graph, one lock per graph, the GIL released around traversals.

use chainwarden_core::dag::{Dag, DagResult, Outcome, Value};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::args::{finish_payload, node_spec, strings};
use super::convert::{count, optional_dict, optional_text, text, to_py, to_py_list};
use super::errors::{invalid, IntoPyResult};
use crate::convert::py_str;

#[pyclass(frozen, module = "chainwarden._core")]
pub struct DagEngine {
    pub(super) inner: Mutex<Dag>,
}

impl DagEngine {
    /// Runs `f` with the graph locked and the GIL released; the lock is dropped before the GIL returns.
    fn detached<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&mut Dag) -> R + Send) -> R {
        py.detach(|| f(&mut self.inner.lock()))
    }

    /// Runs `f` with the graph locked while attached to the interpreter (it builds Python objects). The lock
    /// is never awaited while attached: a thread blocked here could otherwise stall a stop-the-world pause
    /// (free-threaded builds) that the lock holder is waiting for.
    fn locked<R>(&self, py: Python<'_>, f: impl FnOnce(&mut Dag) -> R) -> R {
        loop {
            if let Some(mut guard) = self.inner.try_lock() {
                return f(&mut guard);
            }
            py.detach(|| drop(self.inner.lock()));
        }
    }

    /// `detached` for work proportional to a large payload, `locked` otherwise: releasing the GIL costs a
    /// thread switch under contention, which only pays off when the native work is long.
    fn run<R: Send>(&self, py: Python<'_>, large: bool, f: impl FnOnce(&mut Dag) -> R + Send) -> R {
        if large {
            self.detached(py, f)
        } else {
            self.locked(py, f)
        }
    }

    /// The four transitions that take a node id and a reason (stored as `str(reason)`).
    fn mark_with_reason(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
        mark: fn(&mut Dag, &str, &str) -> DagResult<bool>,
    ) -> PyResult<bool> {
        let (id, msg) = (text(node_id, "node_id")?, reason.str()?.to_string());
        self.locked(py, |g| mark(g, &id, &msg)).py_err(py)
    }
}

#[pymethods]
impl DagEngine {
    #[new]
    #[pyo3(signature = (graph_id=None))]
    fn new(py: Python<'_>, graph_id: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let graph_id = optional_text(graph_id, "graph_id")?;
        if graph_id.as_deref() == Some("") {
            return Err(invalid(py, "graph_id must be a non-empty string"));
        }
        Ok(DagEngine {
            inner: Mutex::new(Dag::new(graph_id)),
        })
    }

    #[getter]
    fn graph_id(&self, py: Python<'_>) -> String {
        self.locked(py, |g| g.graph_id.clone())
    }

    #[getter]
    fn txn_depth(&self, py: Python<'_>) -> usize {
        self.locked(py, |g| g.txn_depth())
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        self.locked(py, |g| g.node_count())
    }

    #[pyo3(signature = (node_type, state="pending", *, content=None, input=None, output=None, metadata=None, node_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_node(
        &self,
        py: Python<'_>,
        node_type: &Bound<'_, PyAny>,
        state: &str,
        content: Option<&Bound<'_, PyAny>>,
        input: Option<&Bound<'_, PyAny>>,
        output: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        node_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let node_type = text(node_type, "node_type")?;
        let spec = node_spec(content, input, output, metadata, node_id)?;
        self.run(py, spec.is_large(), |g| {
            g.create_node(&node_type, state, spec)
        })
        .py_err(py)
    }

    #[pyo3(signature = (from_id, to_id, edge_type, *, metadata=None, edge_id=None))]
    fn create_edge(
        &self,
        py: Python<'_>,
        from_id: &Bound<'_, PyAny>,
        to_id: &Bound<'_, PyAny>,
        edge_type: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyAny>>,
        edge_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (from, to) = (text(from_id, "from_id")?, text(to_id, "to_id")?);
        let edge_type = text(edge_type, "edge_type")?;
        let metadata = optional_dict(metadata, "metadata")?;
        let edge_id = optional_text(edge_id, "edge_id")?;
        self.detached(py, |g| {
            g.create_edge(&from, &to, &edge_type, metadata, edge_id)
        })
        .py_err(py)
    }

    #[pyo3(signature = (from_id, node_type, *, state="pending", content=None, input=None, metadata=None, node_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn fork(
        &self,
        py: Python<'_>,
        from_id: &Bound<'_, PyAny>,
        node_type: &Bound<'_, PyAny>,
        state: &str,
        content: Option<&Bound<'_, PyAny>>,
        input: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        node_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let from = text(from_id, "from_id")?;
        let node_type = text(node_type, "node_type")?;
        let spec = node_spec(content, input, None, metadata, node_id)?;
        self.run(py, spec.is_large(), |g| {
            g.fork(&from, &node_type, state, spec)
        })
        .py_err(py)
    }

    #[pyo3(signature = (node_id, *, new_node_id=None))]
    fn retry(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        new_node_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (id, new_id) = (
            text(node_id, "node_id")?,
            optional_text(new_node_id, "new_node_id")?,
        );
        self.detached(py, |g| g.retry(&id, new_id)).py_err(py)
    }

    #[pyo3(signature = (node_id, *, new_node_id=None))]
    fn regenerate(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        new_node_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let (id, new_id) = (
            text(node_id, "node_id")?,
            optional_text(new_node_id, "new_node_id")?,
        );
        self.detached(py, |g| g.regenerate(&id, new_id)).py_err(py)
    }

    #[pyo3(signature = (node_id, new_input, *, new_node_id=None))]
    fn edit(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        new_input: &Bound<'_, PyAny>,
        new_node_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        let id = text(node_id, "node_id")?;
        let new_input = super::convert::to_value(new_input, "new_input")?;
        let new_id = optional_text(new_node_id, "new_node_id")?;
        self.detached(py, |g| g.edit(&id, new_input, new_id))
            .py_err(py)
    }

    #[pyo3(signature = (node_ids, summary_content, *, metadata=None, node_id=None))]
    fn compress(
        &self,
        py: Python<'_>,
        node_ids: &Bound<'_, PyAny>,
        summary_content: &Bound<'_, PyAny>,
        metadata: Option<&Bound<'_, PyAny>>,
        node_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<String> {
        if node_ids.cast::<pyo3::types::PyString>().is_ok() {
            return Err(invalid(py, "node_ids must be a list of ids, not a string"));
        }
        let ids: Vec<String> = node_ids
            .try_iter()
            .map_err(|_| invalid(py, "node_ids must be an iterable of ids"))?
            .map(|item| text(&item?, "node_ids item"))
            .collect::<PyResult<_>>()?;
        let content = text(summary_content, "summary_content")?;
        let metadata = optional_dict(metadata, "metadata")?;
        let node_id = optional_text(node_id, "node_id")?;
        self.detached(py, |g| g.compress(&ids, &content, metadata, node_id))
            .py_err(py)
    }

    fn mark_running(&self, py: Python<'_>, node_id: &Bound<'_, PyAny>) -> PyResult<bool> {
        let id = text(node_id, "node_id")?;
        self.locked(py, |g| g.mark_running(&id)).py_err(py)
    }

    #[pyo3(signature = (node_id, *, content=None, output=None, metadata=None))]
    fn mark_finished(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        content: Option<&Bound<'_, PyAny>>,
        output: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let id = text(node_id, "node_id")?;
        let payload = finish_payload(content, output, metadata)?;
        self.run(py, payload.is_large(), |g| g.mark_finished(&id, payload))
            .py_err(py)
    }

    fn mark_errored(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        error: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.mark_with_reason(py, node_id, error, Dag::mark_errored)
    }

    fn mark_rejected(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.mark_with_reason(py, node_id, reason, Dag::mark_rejected)
    }

    fn mark_cancelled(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.mark_with_reason(py, node_id, reason, Dag::mark_cancelled)
    }

    fn mark_skipped(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        reason: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.mark_with_reason(py, node_id, reason, Dag::mark_skipped)
    }

    /// Runner step: apply `outcome` to a running node, then propagate failures and repair leaves.
    /// Returns (transition happened, ids skipped by propagation, ids appended by leaf repair).
    #[pyo3(signature = (node_id, outcome, *, message=None, content=None, output=None, metadata=None))]
    #[allow(clippy::too_many_arguments)]
    fn apply_result(
        &self,
        py: Python<'_>,
        node_id: &Bound<'_, PyAny>,
        outcome: &str,
        message: Option<&Bound<'_, PyAny>>,
        content: Option<&Bound<'_, PyAny>>,
        output: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<(bool, Vec<String>, Vec<String>)> {
        let id = text(node_id, "node_id")?;
        let msg = match message {
            Some(m) if !m.is_none() => m.str()?.to_string(),
            _ => String::new(),
        };
        let outcome = match outcome {
            "finished" => Outcome::Finished(finish_payload(content, output, metadata)?),
            "errored" => Outcome::Errored(msg),
            "rejected" => Outcome::Rejected(msg),
            "cancelled" => Outcome::Cancelled(msg),
            "skipped" => Outcome::Skipped(msg),
            other => return Err(invalid(py, format!("unknown outcome {other:?}"))),
        };
        let applied = self
            .detached(py, |g| g.apply_outcome(&id, outcome))
            .py_err(py)?;
        Ok((applied.changed, applied.skipped, applied.repaired))
    }

    fn claim<'py>(
        &self,
        py: Python<'py>,
        limit: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let limit = count(limit, "limit", 0)?;
        strings(py, self.detached(py, |g| g.claim(limit)))
    }

    fn propagate_failures<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        strings(py, self.detached(py, |g| g.propagate_failures()))
    }

    fn repair_leaves<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        strings(py, self.detached(py, |g| g.repair_leaves()))
    }

    #[pyo3(signature = (*, include_compressed=false))]
    fn leaves<'py>(
        &self,
        py: Python<'py>,
        include_compressed: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let all = include_compressed;
        strings(py, self.detached(py, |g| g.leaves(all)))
    }

    fn node<'py>(
        &self,
        py: Python<'py>,
        node_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = text(node_id, "node_id")?;
        let rec = self.locked(py, |g| g.node(&id).map(|n| g.node_record(n)));
        match rec {
            Some(v) => to_py(py, &v),
            None => Err(super::errors::to_py(
                py,
                chainwarden_core::dag::DagError::node_not_found(&id),
            )),
        }
    }

    fn edge<'py>(
        &self,
        py: Python<'py>,
        edge_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let id = text(edge_id, "edge_id")?;
        let rec = self.locked(py, |g| g.edge(&id).map(|e| g.edge_record(e)));
        match rec {
            Some(v) => to_py(py, &v),
            None => Err(super::errors::to_py(
                py,
                chainwarden_core::dag::DagError::edge_not_found(&id),
            )),
        }
    }

    #[pyo3(signature = (*, include_compressed=false))]
    fn nodes<'py>(
        &self,
        py: Python<'py>,
        include_compressed: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let all = include_compressed;
        to_py_list(py, &self.detached(py, |g| g.node_records(all)))
    }

    #[pyo3(signature = (*, include_compressed=false))]
    fn edges<'py>(
        &self,
        py: Python<'py>,
        include_compressed: bool,
    ) -> PyResult<Bound<'py, PyList>> {
        let all = include_compressed;
        to_py_list(py, &self.detached(py, |g| g.edge_records(all)))
    }

    #[pyo3(signature = (node_id, *, mode="preview"))]
    fn context_for<'py>(
        &self,
        py: Python<'py>,
        node_id: &Bound<'py, PyAny>,
        mode: &str,
    ) -> PyResult<Bound<'py, PyList>> {
        let id = text(node_id, "node_id")?;
        let full = match mode {
            "preview" => false,
            "full" => true,
            other => {
                return Err(invalid(
                    py,
                    format!("mode must be 'preview' or 'full', not {other:?}"),
                ))
            }
        };
        // The graph stays locked while the dicts are built, with the GIL held throughout (never re-acquired
        // under the lock), so no thread can wait on one while holding the other.
        self.locked(py, |g| {
            let order = g.context_order(&id);
            let list = PyList::empty(py);
            for n in order {
                list.append(super::convert::context_entry(py, g.node_by_index(n), full)?)?;
            }
            Ok(list)
        })
    }

    fn context_ids_for<'py>(
        &self,
        py: Python<'py>,
        node_id: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let id = text(node_id, "node_id")?;
        // Straight from the arena to Python strings: no intermediate Rust copies of 40k ids.
        self.locked(py, |g| {
            let order = g.context_order(&id);
            PyList::new(py, order.iter().map(|&n| py_str(py, g.id_by_index(n))))
        })
    }

    fn events<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let records: Vec<Value> =
            self.detached(py, |g| g.events().iter().map(Dag::event_record).collect());
        to_py_list(py, &records)
    }

    #[pyo3(signature = (*, include_compressed, max_label_chars))]
    fn to_mermaid(
        &self,
        py: Python<'_>,
        include_compressed: bool,
        max_label_chars: &Bound<'_, PyAny>,
    ) -> PyResult<String> {
        let all = include_compressed;
        let max = count(max_label_chars, "max_label_chars", 3)?;
        Ok(self.detached(py, |g| g.to_mermaid(all, max)))
    }

    fn to_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let text = self.detached(py, |g| g.to_json());
        PyBytes::new(py, text.as_bytes())
    }

    #[staticmethod]
    fn from_json(py: Python<'_>, data: &Bound<'_, PyAny>) -> PyResult<DagEngine> {
        let text: String = if let Ok(b) = data.cast::<PyBytes>() {
            String::from_utf8(b.as_bytes().to_vec())
                .map_err(|_| invalid(py, "data is not UTF-8"))?
        } else if let Ok(s) = data.cast::<pyo3::types::PyString>() {
            super::convert::utf8(s, "data")?
        } else {
            return Err(invalid(py, "data must be bytes or str"));
        };
        let dag = py.detach(|| Dag::from_json(&text)).py_err(py)?;
        Ok(DagEngine {
            inner: Mutex::new(dag),
        })
    }

    fn begin(&self, py: Python<'_>) {
        self.locked(py, |g| g.begin());
    }

    fn commit<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        strings(py, self.detached(py, |g| g.commit()))
    }

    fn rollback(&self, py: Python<'_>) {
        self.detached(py, |g| g.rollback());
    }

    /// Recomputes every derived index and structural rule; returns the first violation or None.
    fn check_invariants(&self, py: Python<'_>) -> Option<String> {
        self.detached(py, |g| g.check_invariants().err())
    }
}
