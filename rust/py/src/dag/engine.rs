//! `DagEngine`: the native graph, one lock per graph, the GIL released around traversals.

use chainwarden_core::dag::{Dag, DagError, DagResult, NodeSpec, Outcome, Value};
use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString};

use super::args::{
    dict, finish_payload, name, node_spec, opt_text, strings, Count, Flag, Ids, Json, JsonDict,
    JsonText, Reason, Text,
};
use super::change::DagCommit;
use super::convert::{to_py, to_py_list};
use super::errors::invalid_arg;
use crate::convert::py_str;
use crate::errors::Result;

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

    /// `create_node` of converted arguments (the general entry's and the fast one's, `fast_build.rs`).
    pub(super) fn create_node_from(
        &self,
        py: Python<'_>,
        node_type: &str,
        state: Option<&str>,
        spec: NodeSpec,
    ) -> Result<Py<PyString>> {
        if spec.is_large() {
            let id = self.detached(py, |g| {
                let n = g.create_node_row(node_type, state, spec)?;
                Ok::<_, chainwarden_core::dag::DagError>(g.node_id_at(n).to_owned())
            })?;
            return Ok(py_str(py, &id).unbind());
        }
        // The caller's `str` is made from the row's text under the lock, not from a copy of the id.
        self.locked(py, |g| {
            let n = g.create_node_row(node_type, state, spec)?;
            Ok(py_str(py, g.node_id_at(n)).unbind())
        })
    }

    /// `create_edge` of converted arguments (the general entry's and the fast one's, `fast_build.rs`).
    pub(super) fn create_edge_from(
        &self,
        py: Python<'_>,
        from_id: &str,
        to_id: &str,
        edge_type: &str,
        metadata: Option<Value>,
        edge_id: Option<String>,
    ) -> Result<Py<PyString>> {
        // Attached: only a cycle search over the graph is long, and the GIL is released around that alone
        // (releasing it for every edge was a tenth of building a fan-out).
        self.locked(py, |g| {
            let long = |step: &mut (dyn FnMut() + Send)| py.detach(step);
            let e = g.create_edge_row_with(from_id, to_id, edge_type, metadata, edge_id, &long)?;
            Ok(py_str(py, g.edge_id_at(e)).unbind())
        })
    }

    /// The four transitions that take a node id and a reason (stored as `str(reason)`).
    fn mark_with_reason(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        reason: Reason,
        mark: fn(&mut Dag, &str, &str) -> DagResult<bool>,
    ) -> Result<bool> {
        Ok(self.locked(py, |g| mark(g, &node_id.0, &reason.0))?)
    }
}

#[pymethods]
impl DagEngine {
    #[new]
    #[pyo3(signature = (graph_id=None, *, leaf_repair=None))]
    fn new(
        py: Python<'_>,
        graph_id: Option<Text<name::GraphId>>,
        leaf_repair: Option<Flag<name::LeafRepair>>,
    ) -> Result<Self> {
        let graph_id = opt_text(graph_id);
        if graph_id.as_deref() == Some("") {
            return Err(invalid_arg(py, "graph_id", "graph_id must be a non-empty string").into());
        }
        // Conversation graphs keep the leaf invariant unless told otherwise (docs/dag.md).
        let leaf_repair = leaf_repair.is_none_or(|f| f.0);
        let mut dag = Dag::new(graph_id);
        dag.set_leaf_repair(leaf_repair);
        Ok(DagEngine {
            inner: Mutex::new(dag),
        })
    }

    #[getter]
    fn leaf_repair(&self, py: Python<'_>) -> bool {
        self.locked(py, |g| g.leaf_repair())
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

    #[pyo3(signature = (node_type, state=None, *, content=None, input=None, output=None, metadata=None, node_id=None))]
    #[pyo3(
        text_signature = "($self, node_type, state='pending', *, content=None, input=None, output=None, metadata=None, node_id=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn create_node(
        &self,
        py: Python<'_>,
        node_type: Text<name::NodeType>,
        state: Option<Text<name::State>>,
        content: Option<Json<name::Content>>,
        input: Option<JsonDict<name::Input>>,
        output: Option<JsonDict<name::Output>>,
        metadata: Option<JsonDict<name::Metadata>>,
        node_id: Option<Text<name::NodeId>>,
    ) -> Result<Py<PyString>> {
        let spec = node_spec(content, input, output, metadata, node_id);
        self.create_node_from(py, &node_type.0, state.as_ref().map(|s| &*s.0), spec)
    }

    #[pyo3(signature = (from_id, to_id, edge_type, *, metadata=None, edge_id=None))]
    pub(super) fn create_edge(
        &self,
        py: Python<'_>,
        from_id: Text<name::FromId>,
        to_id: Text<name::ToId>,
        edge_type: Text<name::EdgeType>,
        metadata: Option<JsonDict<name::Metadata>>,
        edge_id: Option<Text<name::EdgeId>>,
    ) -> Result<Py<PyString>> {
        let (metadata, edge_id) = (dict(metadata), opt_text(edge_id));
        self.create_edge_from(py, &from_id.0, &to_id.0, &edge_type.0, metadata, edge_id)
    }

    #[pyo3(signature = (from_id, node_type, *, state=None, content=None, input=None, metadata=None, node_id=None))]
    #[pyo3(
        text_signature = "($self, from_id, node_type, *, state='pending', content=None, input=None, metadata=None, node_id=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    pub(super) fn fork(
        &self,
        py: Python<'_>,
        from_id: Text<name::FromId>,
        node_type: Text<name::NodeType>,
        state: Option<Text<name::State>>,
        content: Option<Json<name::Content>>,
        input: Option<JsonDict<name::Input>>,
        metadata: Option<JsonDict<name::Metadata>>,
        node_id: Option<Text<name::NodeId>>,
    ) -> Result<String> {
        let state = state.as_ref().map(|s| &*s.0);
        let spec = node_spec(content, input, None, metadata, node_id);
        Ok(self.run(py, spec.is_large(), |g| {
            g.fork(&from_id.0, &node_type.0, state, spec)
        })?)
    }

    #[pyo3(signature = (node_id, *, new_node_id=None))]
    pub(super) fn retry(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        new_node_id: Option<Text<name::NewNodeId>>,
    ) -> Result<String> {
        let new_id = opt_text(new_node_id);
        Ok(self.detached(py, |g| g.retry(&node_id.0, new_id))?)
    }

    #[pyo3(signature = (node_id, *, new_node_id=None))]
    pub(super) fn regenerate(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        new_node_id: Option<Text<name::NewNodeId>>,
    ) -> Result<String> {
        let new_id = opt_text(new_node_id);
        Ok(self.detached(py, |g| g.regenerate(&node_id.0, new_id))?)
    }

    #[pyo3(signature = (node_id, new_input, *, new_node_id=None))]
    pub(super) fn edit(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        new_input: Json<name::NewInput>,
        new_node_id: Option<Text<name::NewNodeId>>,
    ) -> Result<String> {
        let new_id = opt_text(new_node_id);
        Ok(self.detached(py, |g| g.edit(&node_id.0, new_input.0, new_id))?)
    }

    #[pyo3(signature = (node_ids, summary_content, *, metadata=None, node_id=None))]
    fn compress(
        &self,
        py: Python<'_>,
        node_ids: Ids<name::NodeIds>,
        summary_content: Text<name::SummaryContent>,
        metadata: Option<JsonDict<name::Metadata>>,
        node_id: Option<Text<name::NodeId>>,
    ) -> Result<String> {
        let (metadata, node_id) = (dict(metadata), opt_text(node_id));
        Ok(self.detached(py, |g| {
            g.compress(&node_ids.0, &summary_content.0, metadata, node_id)
        })?)
    }

    fn mark_running(&self, py: Python<'_>, node_id: Text<name::NodeId>) -> Result<bool> {
        Ok(self.locked(py, |g| g.mark_running(&node_id.0))?)
    }

    #[pyo3(signature = (node_id, *, content=None, output=None, metadata=None))]
    fn mark_finished(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        content: Option<Json<name::Content>>,
        output: Option<JsonDict<name::Output>>,
        metadata: Option<JsonDict<name::Metadata>>,
    ) -> Result<bool> {
        let payload = finish_payload(content, output, metadata);
        Ok(self.run(py, payload.is_large(), |g| {
            g.mark_finished(&node_id.0, payload)
        })?)
    }

    fn mark_errored(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        error: Reason,
    ) -> Result<bool> {
        self.mark_with_reason(py, node_id, error, Dag::mark_errored)
    }

    fn mark_rejected(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        reason: Reason,
    ) -> Result<bool> {
        self.mark_with_reason(py, node_id, reason, Dag::mark_rejected)
    }

    fn mark_cancelled(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        reason: Reason,
    ) -> Result<bool> {
        self.mark_with_reason(py, node_id, reason, Dag::mark_cancelled)
    }

    fn mark_skipped(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        reason: Reason,
    ) -> Result<bool> {
        self.mark_with_reason(py, node_id, reason, Dag::mark_skipped)
    }

    /// Runner step: apply `outcome` to a running node, then propagate failures and repair leaves.
    /// Returns (transition happened, ids skipped by propagation, ids appended by leaf repair).
    #[pyo3(signature = (node_id, outcome, *, message=None, content=None, output=None, metadata=None))]
    #[allow(clippy::too_many_arguments)]
    fn apply_result(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        outcome: Text<name::Outcome>,
        message: Option<Reason>,
        content: Option<Json<name::Content>>,
        output: Option<JsonDict<name::Output>>,
        metadata: Option<JsonDict<name::Metadata>>,
    ) -> Result<(bool, Vec<String>, Vec<String>)> {
        let msg = message.map(|m| m.0).unwrap_or_default();
        let outcome = match outcome.0.as_str() {
            "finished" => Outcome::Finished(finish_payload(content, output, metadata)),
            "errored" => Outcome::Errored(msg),
            "rejected" => Outcome::Rejected(msg),
            "cancelled" => Outcome::Cancelled(msg),
            "skipped" => Outcome::Skipped(msg),
            other => {
                return Err(invalid_arg(
                    py,
                    "outcome",
                    format!("outcome: unknown outcome {other:?}"),
                )
                .into())
            }
        };
        let applied = self.detached(py, |g| g.apply_outcome(&node_id.0, outcome))?;
        Ok((applied.changed, applied.skipped, applied.repaired))
    }

    fn claim<'py>(
        &self,
        py: Python<'py>,
        limit: Count<name::Limit, 0>,
    ) -> Result<Bound<'py, PyList>> {
        Ok(strings(py, self.detached(py, |g| g.claim(limit.0)))?)
    }

    fn propagate_failures<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyList>> {
        let skipped = self.detached(py, |g| g.propagate_failures_shared());
        Ok(PyList::new(py, skipped.iter().map(|s| py_str(py, s)))?)
    }

    fn repair_leaves<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyList>> {
        Ok(strings(py, self.detached(py, |g| g.repair_leaves()))?)
    }

    #[pyo3(signature = (*, include_compressed=None))]
    fn leaves<'py>(
        &self,
        py: Python<'py>,
        include_compressed: Option<Flag<name::IncludeCompressed>>,
    ) -> Result<Bound<'py, PyList>> {
        let all = flag(include_compressed);
        Ok(strings(py, self.detached(py, |g| g.leaves(all)))?)
    }

    fn node<'py>(&self, py: Python<'py>, node_id: Text<name::NodeId>) -> Result<Bound<'py, PyAny>> {
        let id = node_id.0;
        let rec = self.locked(py, |g| g.node(&id).map(|n| g.node_record(n)));
        match rec {
            Some(v) => Ok(to_py(py, &v)?),
            None => Err(DagError::node_not_found(&id).into()),
        }
    }

    fn edge<'py>(&self, py: Python<'py>, edge_id: Text<name::EdgeId>) -> Result<Bound<'py, PyAny>> {
        let id = edge_id.0;
        let rec = self.locked(py, |g| g.edge(&id).map(|e| g.edge_record(e)));
        match rec {
            Some(v) => Ok(to_py(py, &v)?),
            None => Err(DagError::edge_not_found(&id).into()),
        }
    }

    #[pyo3(signature = (*, include_compressed=None))]
    fn nodes<'py>(
        &self,
        py: Python<'py>,
        include_compressed: Option<Flag<name::IncludeCompressed>>,
    ) -> Result<Bound<'py, PyList>> {
        let all = flag(include_compressed);
        Ok(self.locked(py, |g| super::records::nodes(py, g, all))?)
    }

    #[pyo3(signature = (*, include_compressed=None))]
    fn edges<'py>(
        &self,
        py: Python<'py>,
        include_compressed: Option<Flag<name::IncludeCompressed>>,
    ) -> Result<Bound<'py, PyList>> {
        let all = flag(include_compressed);
        Ok(to_py_list(py, &self.detached(py, |g| g.edge_records(all)))?)
    }

    #[pyo3(signature = (node_id, *, mode=None))]
    fn context_for<'py>(
        &self,
        py: Python<'py>,
        node_id: Text<name::NodeId>,
        mode: Option<Text<name::Mode>>,
    ) -> Result<Bound<'py, PyList>> {
        let full = match opt_text(mode).as_deref() {
            None | Some("preview") => false,
            Some("full") => true,
            Some(other) => {
                return Err(invalid_arg(
                    py,
                    "mode",
                    format!("mode must be 'preview' or 'full', not {other:?}"),
                )
                .into())
            }
        };
        // The graph stays locked while the dicts are built, with the GIL held throughout (never re-acquired
        // under the lock), so no thread can wait on one while holding the other.
        Ok(self.locked(py, |g| super::records::context(py, g, &node_id.0, full))?)
    }

    fn context_ids_for<'py>(
        &self,
        py: Python<'py>,
        node_id: Text<name::NodeId>,
    ) -> Result<Bound<'py, PyList>> {
        // Straight from the arena to Python strings: no intermediate Rust copies of 40k ids.
        Ok(self.locked(py, |g| {
            let order = g.context_order(&node_id.0);
            PyList::new(py, order.iter().map(|&n| py_str(py, g.id_by_index(n))))
        })?)
    }

    fn events<'py>(&self, py: Python<'py>) -> Result<Bound<'py, PyList>> {
        Ok(self.locked(py, |g| super::records::events(py, g))?)
    }

    #[pyo3(signature = (*, include_compressed, max_label_chars))]
    fn to_mermaid(
        &self,
        py: Python<'_>,
        include_compressed: Flag<name::IncludeCompressed>,
        max_label_chars: Count<name::MaxLabelChars, 3>,
    ) -> String {
        let (all, max) = (include_compressed.0, max_label_chars.0);
        self.detached(py, |g| g.to_mermaid(all, max))
    }

    fn to_json<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        let text = self.detached(py, |g| g.to_json());
        PyBytes::new(py, text.as_bytes())
    }

    #[staticmethod]
    fn from_json(py: Python<'_>, data: JsonText<name::Data>) -> Result<DagEngine> {
        let dag = py.detach(|| Dag::from_json(data.0.as_str()))?;
        Ok(DagEngine {
            inner: Mutex::new(dag),
        })
    }

    fn begin(&self, py: Python<'_>) {
        self.locked(py, |g| g.begin());
    }

    /// Keeps the innermost block's changes and says what it did (docs/dag.md "Stores and workers").
    fn commit(&self, py: Python<'_>) -> Result<DagCommit> {
        let done = self.detached(py, |g| g.commit());
        Ok(DagCommit::new(py, done)?)
    }

    fn rollback(&self, py: Python<'_>) {
        self.detached(py, |g| g.rollback());
    }

    /// Recomputes every derived index and structural rule; returns the first violation or None.
    fn check_invariants(&self, py: Python<'_>) -> Option<String> {
        self.detached(py, |g| g.check_invariants().err())
    }
}

/// An optional flag defaults to False.
fn flag(arg: Option<Flag<name::IncludeCompressed>>) -> bool {
    arg.is_some_and(|f| f.0)
}
