//! The shapes of a change as a store sees it, named rather than positional: where a change starts
//! (`DagMark`), what a committed `mutate()` block did (`DagCommit`) and the rows it wrote (`DagDelta`)
//! (docs/dag.md "Stores and workers").

use chainwarden_core::dag::{Commit, Delta, Mark};
use pyo3::prelude::*;
use pyo3::types::PyList;

/// Where a change starts: the lengths of the event log, the node arena and the edge arena.
#[pyclass(frozen, eq, get_all, module = "chainwarden._core")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct DagMark {
    events: usize,
    nodes: usize,
    edges: usize,
}

#[pymethods]
impl DagMark {
    fn __repr__(&self) -> String {
        format!(
            "DagMark(events={}, nodes={}, edges={})",
            self.events, self.nodes, self.edges
        )
    }
}

impl From<Mark> for DagMark {
    fn from(m: Mark) -> Self {
        DagMark {
            events: m.events,
            nodes: m.nodes,
            edges: m.edges,
        }
    }
}

impl From<&DagMark> for Mark {
    fn from(m: &DagMark) -> Self {
        Mark {
            events: m.events,
            nodes: m.nodes,
            edges: m.edges,
        }
    }
}

/// What a committed block did: where it started (`dag_delta(engine, commit.start)` renders its rows, only
/// when a store asks) and the ids of the agent messages its leaf repair added.
#[pyclass(frozen, get_all, module = "chainwarden._core")]
pub struct DagCommit {
    start: DagMark,
    repaired: Py<PyList>,
}

impl DagCommit {
    pub fn new(py: Python<'_>, c: Commit) -> PyResult<Self> {
        Ok(DagCommit {
            start: c.start.into(),
            repaired: PyList::new(py, c.repaired)?.unbind(),
        })
    }
}

#[pymethods]
impl DagCommit {
    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "DagCommit(start={}, repaired={})",
            self.start.__repr__(),
            self.repaired.bind(py).len()
        )
    }
}

/// The rows a change wrote, each list in arena (creation) order: nodes and edges as
/// `(position, id, record JSON)`, events as `(position, record JSON)`.
#[pyclass(frozen, get_all, module = "chainwarden._core")]
pub struct DagDelta {
    nodes: Py<PyList>,
    edges: Py<PyList>,
    events: Py<PyList>,
}

impl DagDelta {
    pub fn new(py: Python<'_>, d: Delta) -> PyResult<Self> {
        Ok(DagDelta {
            nodes: PyList::new(py, d.nodes)?.unbind(),
            edges: PyList::new(py, d.edges)?.unbind(),
            events: PyList::new(py, d.events)?.unbind(),
        })
    }
}

#[pymethods]
impl DagDelta {
    /// True when the change wrote no row.
    fn __bool__(&self, py: Python<'_>) -> bool {
        !(self.nodes.bind(py).is_empty()
            && self.edges.bind(py).is_empty()
            && self.events.bind(py).is_empty())
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!(
            "DagDelta(nodes={}, edges={}, events={})",
            self.nodes.bind(py).len(),
            self.edges.bind(py).len(),
            self.events.bind(py).len()
        )
    }
}
