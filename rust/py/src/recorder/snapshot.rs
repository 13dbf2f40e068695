//! Python dicts for `snapshot()`, `node()`, `aggregates()` and divergence events.
//! Keys and repeated labels are created once and shared; everything mutable is fresh.

use chainwarden_core::recorder::divergence::DivergenceEvent;
use chainwarden_core::recorder::graph::{now_ms, Graph, State};
use chainwarden_core::recorder::ids::{format_id, NodeId};
use chainwarden_core::recorder::node::Node;
use chainwarden_core::recorder::{AggregatesView, Kind, Status};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyList, PyString};

use crate::convert::metadata_to_py;

struct Keys {
    node: [Py<PyString>; 15],
    kinds: [Py<PyString>; 5],
    statuses: [Py<PyString>; 5],
}

const NODE_KEYS: [&str; 15] = [
    "node_id",
    "parent_id",
    "kind",
    "name",
    "start_ts_ms",
    "end_ts_ms",
    "status",
    "model",
    "retries_used",
    "cost_usd",
    "tokens_in",
    "tokens_out",
    "stop_reason",
    "error_class",
    "metadata",
];

static KEYS: PyOnceLock<Keys> = PyOnceLock::new();

fn keys(py: Python<'_>) -> &Keys {
    KEYS.get_or_init(py, || Keys {
        node: NODE_KEYS.map(|k| PyString::intern(py, k).unbind()),
        kinds: Kind::ALL.map(|k| PyString::intern(py, k.as_str()).unbind()),
        statuses: Status::ALL.map(|s| PyString::intern(py, s.as_str()).unbind()),
    })
}

pub fn id_str(py: Python<'_>, id: NodeId) -> Bound<'_, PyString> {
    PyString::new(py, format_id(id, &mut [0; 24]))
}

/// Per-call cache of label strings, indexed by interned symbol.
struct Labels<'py, 'a> {
    py: Python<'py>,
    st: &'a State,
    cache: Vec<Option<Bound<'py, PyString>>>,
}

impl<'py> Labels<'py, '_> {
    fn get(&mut self, sym: u32) -> Bound<'py, PyString> {
        let py = self.py;
        let st = self.st;
        self.cache[sym as usize]
            .get_or_insert_with(|| PyString::new(py, st.names.resolve(sym)))
            .clone()
    }

    fn opt(&mut self, sym: Option<u32>) -> Option<Bound<'py, PyString>> {
        sym.map(|s| self.get(s))
    }
}

fn node_dict<'py>(
    py: Python<'py>,
    n: &Node,
    labels: &mut Labels<'py, '_>,
) -> PyResult<Bound<'py, PyDict>> {
    let k = &keys(py).node;
    let d = PyDict::new(py);
    d.set_item(k[0].bind(py), id_str(py, n.id))?;
    d.set_item(k[1].bind(py), n.parent_id().map(|p| id_str(py, p)))?;
    d.set_item(k[2].bind(py), keys(py).kinds[n.kind as usize].bind(py))?;
    d.set_item(k[3].bind(py), labels.get(n.name))?;
    d.set_item(k[4].bind(py), n.start_ms)?;
    d.set_item(k[5].bind(py), n.end_ms)?;
    d.set_item(k[6].bind(py), keys(py).statuses[n.status as usize].bind(py))?;
    d.set_item(k[7].bind(py), labels.opt(n.model))?;
    d.set_item(k[8].bind(py), n.retries)?;
    d.set_item(k[9].bind(py), n.cost_usd)?;
    d.set_item(k[10].bind(py), n.tokens_in)?;
    d.set_item(k[11].bind(py), n.tokens_out)?;
    d.set_item(k[12].bind(py), n.stop_reason.as_deref())?;
    d.set_item(k[13].bind(py), labels.opt(n.error_class))?;
    d.set_item(k[14].bind(py), metadata_to_py(py, n.metadata.as_deref())?)?;
    Ok(d)
}

pub fn snapshot<'py>(py: Python<'py>, graph: &Graph) -> PyResult<Bound<'py, PyDict>> {
    let st = graph.lock();
    let nodes = PyDict::new(py);
    let mut labels = Labels {
        py,
        st: &st,
        cache: vec![None; st.names.len()],
    };
    for n in st.arena.iter() {
        let d = node_dict(py, n, &mut labels)?;
        nodes.set_item(d.get_item(keys(py).node[0].bind(py))?, d)?;
    }
    let root = st.root;
    drop(labels);
    drop(st);
    let out = PyDict::new(py);
    out.set_item("chain_id", graph.chain_id())?;
    out.set_item("root_id", root.map(|r| id_str(py, r)))?;
    out.set_item("nodes", nodes)?;
    out.set_item("aggregates", aggregates(py, &graph.aggregates())?)?;
    out.set_item("snapshot_ts_ms", now_ms())?;
    Ok(out)
}

pub fn node<'py>(
    py: Python<'py>,
    graph: &Graph,
    id: Option<NodeId>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let st = graph.lock();
    let Some(n) = id.and_then(|id| st.arena.get(id)) else {
        return Ok(None);
    };
    let mut labels = Labels {
        py,
        st: &st,
        cache: vec![None; st.names.len()],
    };
    node_dict(py, n, &mut labels).map(Some)
}

pub fn aggregates<'py>(py: Python<'py>, a: &AggregatesView) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total_cost_usd", a.total_cost_usd)?;
    d.set_item("total_llm_calls", a.total_llm_calls)?;
    d.set_item("total_tool_calls", a.total_tool_calls)?;
    d.set_item("total_retries", a.total_retries)?;
    d.set_item("max_depth", a.max_depth)?;
    d.set_item("llm_calls_per_root", a.llm_calls_per_root())?;
    d.set_item("tool_calls_per_root", a.tool_calls_per_root())?;
    d.set_item("retries_per_root", a.retries_per_root())?;
    d.set_item("divergence_emitted_count", a.divergence_emitted_count)?;
    d.set_item("total_tokens_out", a.total_tokens_out)?;
    Ok(d)
}

pub fn divergence_events<'py>(
    py: Python<'py>,
    chain_id: &str,
    events: Vec<(DivergenceEvent, Option<String>)>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (e, name) in events {
        let d = PyDict::new(py);
        match e {
            DivergenceEvent::Pattern {
                mode,
                kind,
                repeat_count,
                ..
            } => {
                d.set_item("event_type", "divergence_suspected")?;
                d.set_item("severity", "warn")?;
                d.set_item("detection_mode", mode.as_str())?;
                d.set_item(
                    "signature",
                    PyList::new(py, [kind.as_str(), name.as_deref().unwrap_or("")])?,
                )?;
                d.set_item("repeat_count", repeat_count)?;
            }
            DivergenceEvent::CostRate {
                cost_rate,
                threshold,
                node,
            } => {
                d.set_item("event_type", "COST_RATE_EXCEEDED")?;
                d.set_item("severity", "warn")?;
                d.set_item("cost_rate", cost_rate)?;
                d.set_item("threshold", threshold)?;
                d.set_item("node_id", id_str(py, node))?;
            }
            DivergenceEvent::TokenVelocity {
                token_velocity,
                threshold,
                node,
            } => {
                d.set_item("event_type", "TOKEN_VELOCITY_EXCEEDED")?;
                d.set_item("severity", "warn")?;
                d.set_item("token_velocity", token_velocity)?;
                d.set_item("threshold", threshold)?;
                d.set_item("node_id", id_str(py, node))?;
            }
        }
        d.set_item("chain_id", chain_id)?;
        out.append(d)?;
    }
    Ok(out)
}
