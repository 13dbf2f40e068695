//! Bulk reads (`nodes()`, `events()`, `context_for()`): Python dicts built straight from the arena under the
//! graph's lock, with the cyclic GC paused (tens of thousands of fresh dicts would otherwise trigger
//! collections that can free nothing). The shapes are the ones `chainwarden_core::dag::records` and
//! `Dag::context_entry` define (docs/dag-rules.md §4.3).

use chainwarden_core::dag::{Dag, EventRef, Node, Particulars};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};

use super::convert::to_py;
use crate::convert::py_str;
use crate::recorder::snapshot::GcPause;

/// Timestamps repeat (every event of one call shares its time): equal consecutive ones share one float.
struct Floats<'py> {
    last: Option<(f64, Bound<'py, PyFloat>)>,
}

impl<'py> Floats<'py> {
    fn get(&mut self, py: Python<'py>, v: f64) -> Bound<'py, PyFloat> {
        match &self.last {
            Some((x, f)) if x.to_bits() == v.to_bits() => f.clone(),
            _ => {
                let f = PyFloat::new(py, v);
                self.last = Some((v, f.clone()));
                f
            }
        }
    }
}

fn word<'py>(py: Python<'py>, s: &'static str) -> Bound<'py, PyString> {
    PyString::intern(py, s)
}

fn particulars<'py>(py: Python<'py>, p: &Particulars<'_>) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    match p {
        Particulars::NodeCreated { node_type, state } => {
            d.set_item(intern!(py, "node_type"), word(py, node_type.as_str()))?;
            d.set_item(intern!(py, "state"), word(py, state.as_str()))?;
        }
        Particulars::EdgeCreated {
            edge_type,
            from,
            to,
        } => {
            d.set_item(intern!(py, "edge_type"), word(py, edge_type.as_str()))?;
            d.set_item(intern!(py, "from_node_id"), py_str(py, from))?;
            d.set_item(intern!(py, "to_node_id"), py_str(py, to))?;
        }
        Particulars::StateChanged { from, to } => {
            d.set_item(intern!(py, "from"), word(py, from.as_str()))?;
            d.set_item(intern!(py, "to"), word(py, to.as_str()))?;
        }
        Particulars::LeafRepaired { leaf } => {
            d.set_item(intern!(py, "leaf_node_id"), py_str(py, leaf))?;
        }
        Particulars::Other { particulars } => return to_py(py, particulars),
    }
    Ok(d.into_any())
}

fn event<'py>(
    py: Python<'py>,
    e: EventRef<'_>,
    floats: &mut Floats<'py>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let event_type = match &e.particulars {
        Particulars::Other { .. } => PyString::new(py, e.event_type),
        _ => PyString::intern(py, e.event_type),
    };
    d.set_item(intern!(py, "event_type"), event_type)?;
    d.set_item(intern!(py, "subject_id"), py_str(py, e.subject_id))?;
    d.set_item(intern!(py, "particulars"), particulars(py, &e.particulars)?)?;
    d.set_item(intern!(py, "created_at"), floats.get(py, e.created_at))?;
    Ok(d)
}

pub fn events<'py>(py: Python<'py>, g: &Dag) -> PyResult<Bound<'py, PyList>> {
    let _gc = GcPause::new();
    let mut floats = Floats { last: None };
    let items = g
        .events()
        .map(|e| event(py, e, &mut floats))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// The node record's keys in order, all set to None: each record starts as a copy, so its 13 keys go in
/// without the dict growing three times, and writing a value replaces it in place.
fn node_template(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for key in [
        intern!(py, "node_id"),
        intern!(py, "node_type"),
        intern!(py, "state"),
        intern!(py, "input"),
        intern!(py, "output"),
        intern!(py, "output_preview"),
        intern!(py, "metadata"),
        intern!(py, "retry_of_id"),
        intern!(py, "compressed_by_id"),
        intern!(py, "compressed_at"),
        intern!(py, "started_at"),
        intern!(py, "finished_at"),
        intern!(py, "created_at"),
    ] {
        d.set_item(key, py.None())?;
    }
    Ok(d)
}

fn node<'py>(
    py: Python<'py>,
    n: &Node,
    template: &Bound<'py, PyDict>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = template.copy()?;
    d.set_item(intern!(py, "node_id"), py_str(py, &n.id))?;
    d.set_item(intern!(py, "node_type"), word(py, n.node_type.as_str()))?;
    d.set_item(intern!(py, "state"), word(py, n.state.as_str()))?;
    d.set_item(intern!(py, "input"), to_py(py, n.input())?)?;
    d.set_item(intern!(py, "output"), to_py(py, n.output())?)?;
    d.set_item(
        intern!(py, "output_preview"),
        to_py(py, &n.output_preview())?,
    )?;
    d.set_item(intern!(py, "metadata"), to_py(py, n.metadata())?)?;
    // The template holds None already: only present values are written.
    if let Some(id) = n.retry_of_id() {
        d.set_item(intern!(py, "retry_of_id"), py_str(py, id))?;
    }
    if let Some(id) = n.compressed_by_id() {
        d.set_item(intern!(py, "compressed_by_id"), py_str(py, id))?;
    }
    for (key, at) in [
        (intern!(py, "compressed_at"), n.compressed_at()),
        (intern!(py, "started_at"), n.started_at.get()),
        (intern!(py, "finished_at"), n.finished_at.get()),
    ] {
        if let Some(at) = at {
            d.set_item(key, PyFloat::new(py, at))?;
        }
    }
    d.set_item(intern!(py, "created_at"), PyFloat::new(py, n.created_at))?;
    Ok(d)
}

pub fn nodes<'py>(
    py: Python<'py>,
    g: &Dag,
    include_compressed: bool,
) -> PyResult<Bound<'py, PyList>> {
    let _gc = GcPause::new();
    let template = node_template(py)?;
    let items = g
        .node_order(include_compressed)
        .into_iter()
        .map(|i| node(py, g.node_by_index(i), &template))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}

/// One context entry built straight from the node, so payloads are not cloned on the way.
fn context_entry<'py>(py: Python<'py>, node: &Node, full: bool) -> PyResult<Bound<'py, PyDict>> {
    let payload = PyDict::new(py);
    payload.set_item(intern!(py, "input"), to_py(py, node.input())?)?;
    payload.set_item(
        intern!(py, "output_preview"),
        to_py(py, &node.output_preview())?,
    )?;
    if full {
        payload.set_item(intern!(py, "output"), to_py(py, node.output())?)?;
    }
    let entry = PyDict::new(py);
    entry.set_item(intern!(py, "node_id"), py_str(py, &node.id))?;
    entry.set_item(intern!(py, "node_type"), word(py, node.node_type.as_str()))?;
    entry.set_item(intern!(py, "state"), word(py, node.state.as_str()))?;
    entry.set_item(intern!(py, "payload"), payload)?;
    entry.set_item(intern!(py, "metadata"), to_py(py, node.metadata())?)?;
    Ok(entry)
}

pub fn context<'py>(
    py: Python<'py>,
    g: &mut Dag,
    id: &str,
    full: bool,
) -> PyResult<Bound<'py, PyList>> {
    let _gc = GcPause::new();
    let order = g.context_order(id);
    let items = order
        .into_iter()
        .map(|n| context_entry(py, g.node_by_index(n), full))
        .collect::<PyResult<Vec<_>>>()?;
    PyList::new(py, items)
}
