//! Bindings of the DAG engine: the `DagEngine` class and the `DagError` exception family.

mod args;
mod convert;
mod engine;
pub mod errors;
mod records;
mod store;

use pyo3::prelude::*;

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add_class::<engine::DagEngine>()?;
    store::register(m)?;
    Ok(())
}
