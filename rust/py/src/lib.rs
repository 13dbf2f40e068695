//! PyO3 bindings: argument conversion, exception mapping and module wiring only.

use pyo3::prelude::*;

mod args;
#[cfg(feature = "bench-floor")]
mod bench_floor;
mod containment;
mod convert;
mod dag;
mod errors;
mod exceptions;
mod fast_entry;
mod recorder;
mod vocab;

#[pymodule(gil_used = false)]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    exceptions::register(m)?;
    recorder::register(m)?;
    dag::register(m)?;
    #[cfg(feature = "bench-floor")]
    bench_floor::register(m)?;
    containment::register(m)?;
    vocab::register(m)?;
    Ok(())
}
