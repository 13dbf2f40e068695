//! Bindings of the DAG engine: the `DagEngine` and `Mutation` classes, the `DagError` exception family, and the
//! Mermaid label rule its export uses.

mod args;
mod change;
mod convert;
mod engine;
pub mod errors;
mod fast_build;
mod mermaid;
mod mutation;
mod records;
mod store;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<engine::DagEngine>()?;
    m.add_class::<mutation::Mutation>()?;
    m.add_class::<change::DagMark>()?;
    m.add_class::<change::DagCommit>()?;
    m.add_class::<change::DagDelta>()?;
    fast_build::install(m.py())?;
    store::register(m)?;
    mermaid::register(m)?;
    Ok(())
}
