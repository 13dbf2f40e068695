//! PyO3 bindings: argument conversion, exception mapping and module wiring only.

use pyo3::prelude::*;

/// The module's Rust allocations (graph arenas, ids, events, values) go to mimalloc rather than the C
/// library's malloc: a build makes two small allocations a node and grows large arenas, where glibc took its
/// slow path for each and handed freed arenas back to the kernel, so the next build paid page faults again
/// (docs/dag.md "Memory"). Python objects still come from Python's own allocator. Built without transparent
/// huge pages and with local-dynamic thread-local storage (`Cargo.toml`), as a library loaded by `dlopen` must be.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
