//! `Mutation`: the handle a `Graph.mutate()` block receives (docs/dag.md "Mutations are atomic"). It is
//! native so a call inside a block goes straight to the engine: the Python wrapper it replaces was a tenth
//! of building a chat and a sixth of a fan-out (benches/README.md "The build floor"). Usable only inside
//! its block: the block ends it, and any later call raises `DagInvalidArgumentError`.

use std::sync::atomic::{AtomicBool, Ordering};

use pyo3::prelude::*;
use pyo3::types::PyString;

use super::args::{name, Json, JsonDict, Text};
use super::engine::DagEngine;
use super::errors::invalid;
use crate::errors::Result;

#[pyclass(frozen, module = "chainwarden._core")]
pub struct Mutation {
    engine: Py<DagEngine>,
    open: AtomicBool,
}

impl Mutation {
    pub(super) fn live<'py>(&'py self, py: Python<'py>) -> PyResult<&'py DagEngine> {
        if self.open.load(Ordering::Acquire) {
            Ok(self.engine.get())
        } else {
            Err(invalid(py, "this mutation block has ended"))
        }
    }
}

#[pymethods]
impl Mutation {
    #[new]
    fn new(engine: Py<DagEngine>) -> Self {
        Mutation {
            engine,
            open: AtomicBool::new(true),
        }
    }

    /// Ends the handle (the block that owns it calls this on its way out).
    fn _end(&self) {
        self.open.store(false, Ordering::Release);
    }

    #[pyo3(signature = (node_type, state=None, *, content=None, input=None, output=None, metadata=None, node_id=None))]
    #[pyo3(
        text_signature = "($self, node_type, state='pending', *, content=None, input=None, output=None, metadata=None, node_id=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn create_node(
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
        self.live(py)?.create_node(
            py, node_type, state, content, input, output, metadata, node_id,
        )
    }

    #[pyo3(signature = (from_id, to_id, edge_type, *, metadata=None, edge_id=None))]
    fn create_edge(
        &self,
        py: Python<'_>,
        from_id: Text<name::FromId>,
        to_id: Text<name::ToId>,
        edge_type: Text<name::EdgeType>,
        metadata: Option<JsonDict<name::Metadata>>,
        edge_id: Option<Text<name::EdgeId>>,
    ) -> Result<Py<PyString>> {
        self.live(py)?
            .create_edge(py, from_id, to_id, edge_type, metadata, edge_id)
    }

    #[pyo3(signature = (from_id, node_type, *, state=None, content=None, input=None, metadata=None, node_id=None))]
    #[pyo3(
        text_signature = "($self, from_id, node_type, *, state='pending', content=None, input=None, metadata=None, node_id=None)"
    )]
    #[allow(clippy::too_many_arguments)]
    fn fork(
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
        self.live(py)?.fork(
            py, from_id, node_type, state, content, input, metadata, node_id,
        )
    }

    #[pyo3(signature = (node_id, *, new_node_id=None))]
    fn retry(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        new_node_id: Option<Text<name::NewNodeId>>,
    ) -> Result<String> {
        self.live(py)?.retry(py, node_id, new_node_id)
    }

    #[pyo3(signature = (node_id, *, new_node_id=None))]
    fn regenerate(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        new_node_id: Option<Text<name::NewNodeId>>,
    ) -> Result<String> {
        self.live(py)?.regenerate(py, node_id, new_node_id)
    }

    #[pyo3(signature = (node_id, new_input, *, new_node_id=None))]
    fn edit(
        &self,
        py: Python<'_>,
        node_id: Text<name::NodeId>,
        new_input: Json<name::NewInput>,
        new_node_id: Option<Text<name::NewNodeId>>,
    ) -> Result<String> {
        self.live(py)?.edit(py, node_id, new_input, new_node_id)
    }
}
