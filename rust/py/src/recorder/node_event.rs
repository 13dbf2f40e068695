//! `NodeEvent`: the immutable record handed to subscribers at each terminal transition.

use chainwarden_core::ids::id_string;
use chainwarden_core::recorder::events;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[pyclass(frozen, eq, get_all, module = "chainwarden._core", name = "NodeEvent")]
#[derive(Clone, PartialEq)]
pub struct NodeEvent {
    node_id: String,
    status: String,
    kind: String,
    name: String,
    cost_usd: f64,
    tokens_in: Option<u64>,
    tokens_out: Option<u64>,
    depth: u32,
    elapsed_ms: Option<f64>,
    chain_id: String,
    model: Option<String>,
    error_class: Option<String>,
    stop_reason: Option<String>,
}

const FIELDS: [&str; 13] = [
    "node_id",
    "status",
    "kind",
    "name",
    "cost_usd",
    "tokens_in",
    "tokens_out",
    "depth",
    "elapsed_ms",
    "chain_id",
    "model",
    "error_class",
    "stop_reason",
];

#[pymethods]
impl NodeEvent {
    #[new]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (node_id, status, kind, name, cost_usd, tokens_in, tokens_out, depth, elapsed_ms, chain_id, model, error_class, stop_reason))]
    fn new(
        node_id: String,
        status: String,
        kind: String,
        name: String,
        cost_usd: f64,
        tokens_in: Option<u64>,
        tokens_out: Option<u64>,
        depth: u32,
        elapsed_ms: Option<f64>,
        chain_id: String,
        model: Option<String>,
        error_class: Option<String>,
        stop_reason: Option<String>,
    ) -> Self {
        NodeEvent {
            node_id,
            status,
            kind,
            name,
            cost_usd,
            tokens_in,
            tokens_out,
            depth,
            elapsed_ms,
            chain_id,
            model,
            error_class,
            stop_reason,
        }
    }

    #[classattr]
    fn __match_args__(py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::new(py, FIELDS)?.unbind())
    }

    fn __repr__(slf: &Bound<'_, Self>) -> PyResult<String> {
        let mut parts = Vec::with_capacity(FIELDS.len());
        for f in FIELDS {
            parts.push(format!("{f}={}", slf.getattr(f)?.repr()?));
        }
        Ok(format!("NodeEvent({})", parts.join(", ")))
    }
}

impl NodeEvent {
    pub fn from_core(e: events::NodeEvent, chain_id: &str) -> Self {
        NodeEvent {
            node_id: id_string(e.id),
            status: e.status.as_str().to_owned(),
            kind: e.kind.as_str().to_owned(),
            name: e.name,
            cost_usd: e.cost_usd,
            tokens_in: e.tokens_in,
            tokens_out: e.tokens_out,
            depth: e.depth,
            elapsed_ms: e.elapsed_ms,
            chain_id: chain_id.to_owned(),
            model: e.model,
            error_class: e.error_class,
            stop_reason: e.stop_reason,
        }
    }
}
