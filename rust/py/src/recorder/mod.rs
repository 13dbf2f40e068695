//! Bindings for the call-graph recorder.

pub(crate) mod args;
mod fast_call;
mod graph;
mod hooks;
mod node_event;
pub(crate) mod snapshot;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<graph::ExecutionGraph>()?;
    m.add_class::<node_event::NodeEvent>()?;
    fast_call::install(m.py())?;
    Ok(())
}
