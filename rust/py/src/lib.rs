//! PyO3 bindings: argument conversion, exception mapping and module wiring only.

use pyo3::prelude::*;

mod containment;

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    containment::register(m)?;
    Ok(())
}
