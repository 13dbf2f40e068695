//! Bindings for the call-graph recorder.

mod args;
mod graph;
mod hooks;
mod node_event;
pub(crate) mod snapshot;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<graph::ExecutionGraph>()?;
    m.add_class::<node_event::NodeEvent>()?;
    Ok(())
}
