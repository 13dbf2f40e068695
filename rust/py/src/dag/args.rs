//! Building the engine's argument structs from Python call arguments.

use chainwarden_core::dag::{FinishPayload, NodeSpec};
use pyo3::prelude::*;
use pyo3::types::PyList;

use super::convert::{optional_dict, optional_text, optional_value};

pub fn node_spec(
    content: Option<&Bound<'_, PyAny>>,
    input: Option<&Bound<'_, PyAny>>,
    output: Option<&Bound<'_, PyAny>>,
    metadata: Option<&Bound<'_, PyAny>>,
    node_id: Option<&Bound<'_, PyAny>>,
) -> PyResult<NodeSpec> {
    Ok(NodeSpec {
        content: optional_value(content, "content")?,
        input: optional_dict(input, "input")?,
        output: optional_dict(output, "output")?,
        metadata: optional_dict(metadata, "metadata")?,
        node_id: optional_text(node_id, "node_id")?,
    })
}

pub fn strings<'py>(py: Python<'py>, items: Vec<String>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, items)
}

pub fn finish_payload(
    content: Option<&Bound<'_, PyAny>>,
    output: Option<&Bound<'_, PyAny>>,
    metadata: Option<&Bound<'_, PyAny>>,
) -> PyResult<FinishPayload> {
    Ok(FinishPayload {
        content: optional_value(content, "content")?,
        output: optional_dict(output, "output")?,
        metadata: optional_dict(metadata, "metadata")?,
    })
}
