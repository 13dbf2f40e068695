//! PyO3 bindings: argument conversion, exception mapping and module wiring only.

mod dag;

use pyo3::prelude::*;

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    dag::register(m)?;
    Ok(())
}
