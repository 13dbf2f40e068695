//! The benchmark floors, compiled only with the `bench-floor` feature (`make bench`), so they never ship
//! in a wheel. `_BenchFloor`: three native methods that do nothing, called like the recorder's hot path, to
//! show how much of a per-node cost is the Python→native call itself. `_BuildFloor`: the least a DAG build
//! call does under its contract (benches/README.md "The build floor").

use chainwarden_core::dag::IdIndex;
use chainwarden_core::ids::{uuid7_keyed_at, Id};

use crate::convert::py_str;
use crate::exceptions::not_found;
use pyo3::prelude::*;
use pyo3::types::PyString;

#[pyclass(frozen, module = "chainwarden._core", name = "_BenchFloor")]
pub struct BenchFloor {
    id: Py<PyString>,
}

#[pymethods]
impl BenchFloor {
    #[new]
    fn new(py: Python<'_>) -> Self {
        BenchFloor {
            id: PyString::new(py, "n000001").unbind(),
        }
    }

    #[pyo3(signature = (parent_id, kind, name, model=None, metadata=None))]
    fn begin_node(
        &self,
        py: Python<'_>,
        parent_id: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        model: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> Py<PyString> {
        let _ = (parent_id, kind, name, model, metadata);
        self.id.clone_ref(py)
    }

    fn mark_running(&self, node_id: &Bound<'_, PyAny>) {
        let _ = node_id;
    }

    #[pyo3(signature = (node_id, cost_usd, tokens_in=None, tokens_out=None))]
    fn mark_success(
        &self,
        node_id: &Bound<'_, PyAny>,
        cost_usd: &Bound<'_, PyAny>,
        tokens_in: Option<&Bound<'_, PyAny>>,
        tokens_out: Option<&Bound<'_, PyAny>>,
    ) {
        let _ = (node_id, cost_usd, tokens_in, tokens_out);
    }
}

/// What `Mutation.create_node` / `create_edge` cannot avoid doing under the DAG contract
/// (docs/api-dag.md): mint a UUIDv7 id, index it, return it as `str`, and find both ends of an edge by
/// their ids. No node record, no events, no undo log, no cycle check, no ready/leaf sets. The ids are kept
/// in the engine's own index (`IdIndex`: minted ids by value in creation order, docs/dag.md "Ids and
/// indexes"); an edge's ends are found through it alone, without the engine's look at the newest nodes first.
#[pyclass(module = "chainwarden._core", name = "_BuildFloor")]
#[derive(Default)]
pub struct BuildFloor {
    nodes: IdIndex,
    edges: IdIndex,
    /// The ids, by position: what the index searches while they are in order.
    node_ids: Vec<Id>,
    edge_ids: Vec<Id>,
    /// Each edge's ends, by the edge's position in `edges`.
    ends: Vec<(u32, u32)>,
}

#[pymethods]
impl BuildFloor {
    #[new]
    fn new() -> Self {
        BuildFloor::default()
    }

    #[pyo3(signature = (node_type, state=None, *, content=None, input=None, output=None, metadata=None, node_id=None))]
    #[allow(clippy::too_many_arguments)]
    fn create_node(
        &mut self,
        py: Python<'_>,
        node_type: &str,
        state: Option<&str>,
        content: Option<&Bound<'_, PyAny>>,
        input: Option<&Bound<'_, PyAny>>,
        output: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
        node_id: Option<&str>,
    ) -> Py<PyString> {
        let _ = (node_type, state, content, input, output, metadata, node_id);
        let (id, key) = uuid7_keyed_at(chainwarden_core::clock::now());
        let slot = u32::try_from(self.nodes.len()).unwrap_or(u32::MAX);
        self.nodes
            .insert_keyed(&id, Some(key), slot, &self.node_ids[..]);
        let text = py_str(py, &id).unbind();
        self.node_ids.push(id);
        text
    }

    #[pyo3(signature = (from_id, to_id, edge_type, *, metadata=None, edge_id=None))]
    fn create_edge(
        &mut self,
        py: Python<'_>,
        from_id: &str,
        to_id: &str,
        edge_type: &str,
        metadata: Option<&Bound<'_, PyAny>>,
        edge_id: Option<&str>,
    ) -> PyResult<Py<PyString>> {
        let _ = (edge_type, metadata, edge_id);
        let ids = &self.node_ids[..];
        let ends = self.nodes.get(from_id, ids).zip(self.nodes.get(to_id, ids));
        let ends = ends.ok_or_else(|| not_found(py, "unknown node".to_owned()))?;
        let (id, key) = uuid7_keyed_at(chainwarden_core::clock::now());
        let slot = u32::try_from(self.ends.len()).unwrap_or(u32::MAX);
        self.edges
            .insert_keyed(&id, Some(key), slot, &self.edge_ids[..]);
        self.ends.push(ends);
        let text = py_str(py, &id).unbind();
        self.edge_ids.push(id);
        Ok(text)
    }

    fn __len__(&self) -> usize {
        self.nodes.len()
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BenchFloor>()?;
    m.add_class::<BuildFloor>()
}
