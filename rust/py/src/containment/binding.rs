//! `CURRENT_CALL`: which async call or `with` block the running code is inside, of every chain.
//!
//! One ContextVar holds the innermost `CallBinding`; each binding links to the one it was set over
//! (`outer`), so a chain finds its own innermost call by walking the links (`enclosing`) and a call
//! sets and resets one variable, not one per chain. A ContextVar follows the code into the tasks it
//! starts and into `asyncio.to_thread` workers (both copy the context), which the per-thread stack
//! of sync calls cannot (docs/containment.md "Decorators").

use std::ffi::CStr;
use std::ptr;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use chainwarden_core::ids::NodeId;

/// An async call or block, as seen from the code it runs.
#[pyclass(frozen, get_all, module = "chainwarden._core")]
pub struct CallBinding {
    /// The chain core (or the shared-budget gate around it) the call belongs to.
    pub(super) core: Py<PyAny>,
    pub(super) node: NodeId,
    /// Where it was bound: sync calls opened on that thread after it (deeper in the stack) are
    /// nested inside it, so they take `report_cost`.
    pub(super) thread: u64,
    pub(super) sync_depth: usize,
    /// The binding this one was set over: the enclosing async call or block, of any chain.
    outer: Option<Py<CallBinding>>,
}

#[pymethods]
impl CallBinding {
    #[new]
    fn new(
        core: Py<PyAny>,
        node: NodeId,
        thread: u64,
        sync_depth: usize,
        outer: Option<Py<CallBinding>>,
    ) -> Self {
        CallBinding {
            core,
            node,
            thread,
            sync_depth,
            outer,
        }
    }
}

static VAR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn var(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    VAR.get_or_try_init(py, || new_var(py, c"chainwarden_call"))
}

/// A new ContextVar named `name`, default None.
pub fn new_var(py: Python<'_>, name: &CStr) -> PyResult<Py<PyAny>> {
    // SAFETY: a valid C string and a borrowed None; the result is a new reference or NULL.
    unsafe {
        let v = ffi::PyContextVar_New(name.as_ptr(), ffi::Py_None());
        Bound::from_owned_ptr_or_err(py, v).map(Bound::unbind)
    }
}

/// The value of ContextVar `var` in the current context (its default None when unset).
pub fn get_var<'py>(py: Python<'py>, var: &Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let mut out: *mut ffi::PyObject = ptr::null_mut();
    // SAFETY: `var` is a ContextVar; `out` receives a new reference (the default None when unset).
    let rc = unsafe { ffi::PyContextVar_Get(var.as_ptr(), ptr::null_mut(), &mut out) };
    if rc < 0 || out.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `out` is a new reference.
    Ok(unsafe { Bound::from_owned_ptr(py, out) })
}

/// Sets ContextVar `var` to `value`; returns the token that restores the value it replaced.
pub fn set_var<'py>(
    py: Python<'py>,
    var: &Py<PyAny>,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `var` is a ContextVar; the result is a new reference to a Token, or NULL.
    unsafe {
        let token = ffi::PyContextVar_Set(var.as_ptr(), value.as_ptr());
        Bound::from_owned_ptr_or_err(py, token)
    }
}

/// The innermost binding in the current context, if any.
pub fn current(py: Python<'_>) -> PyResult<Option<Bound<'_, CallBinding>>> {
    Ok(get_var(py, var(py)?)?.cast_into::<CallBinding>().ok())
}

/// The node of the innermost open async call or block of `core` in this context: a call of
/// another chain in between is skipped (a wrap nested in another context's wrap must not adopt
/// that context's node).
pub fn enclosing(py: Python<'_>, core: *mut ffi::PyObject) -> PyResult<Option<NodeId>> {
    Ok(enclosing_in(current(py)?.as_ref().map(Bound::get), core))
}

/// `enclosing`, from the innermost binding `bound` (read once by a caller that binds over it).
fn enclosing_in(mut bound: Option<&CallBinding>, core: *mut ffi::PyObject) -> Option<NodeId> {
    while let Some(b) = bound {
        if b.core.as_ptr() == core {
            return Some(b.node);
        }
        bound = b.outer.as_ref().map(Py::get);
    }
    None
}

/// The innermost binding of this context, to find the enclosing call in and bind over.
pub struct Current<'py>(Option<Bound<'py, CallBinding>>);

impl<'py> Current<'py> {
    pub fn read(py: Python<'py>) -> PyResult<Self> {
        current(py).map(Current)
    }

    /// As `enclosing`.
    pub fn enclosing(&self, core: *mut ffi::PyObject) -> Option<NodeId> {
        enclosing_in(self.0.as_ref().map(Bound::get), core)
    }

    /// As `bind`, over this binding.
    pub fn bind(self, core: &Bound<'py, PyAny>, node: NodeId) -> PyResult<Py<PyAny>> {
        bind_over(core.py(), core, node, self.0.map(Bound::unbind))
    }
}

/// This thread's ident, as `threading.get_ident()` returns it.
pub fn thread_ident() -> u64 {
    // `c_ulong` is 32 bits on Windows: the conversion is not useless there.
    #[allow(clippy::useless_conversion)]
    // SAFETY: no preconditions.
    u64::from(unsafe { ffi::PyThread_get_thread_ident() })
}

/// Binds call `node` of `core` over the current binding; returns the ContextVar's token.
pub fn bind(py: Python<'_>, core: &Bound<'_, PyAny>, node: NodeId) -> PyResult<Py<PyAny>> {
    bind_over(py, core, node, current(py)?.map(Bound::unbind))
}

fn bind_over(
    py: Python<'_>,
    core: &Bound<'_, PyAny>,
    node: NodeId,
    outer: Option<Py<CallBinding>>,
) -> PyResult<Py<PyAny>> {
    let binding = CallBinding {
        core: core.clone().unbind(),
        node,
        thread: thread_ident(),
        sync_depth: super::sync_depth(),
        outer,
    };
    let binding = Bound::new(py, binding)?;
    Ok(set_var(py, var(py)?, binding.as_any())?.unbind())
}

/// Restores the binding `token` replaced (`ValueError` from another context, `RuntimeError` reused).
pub fn reset(py: Python<'_>, token: &Py<PyAny>) -> PyResult<()> {
    // SAFETY: `token` is a Token of `var` (or any object, which the call rejects with an error).
    let rc = unsafe { ffi::PyContextVar_Reset(var(py)?.as_ptr(), token.as_ptr()) };
    if rc < 0 {
        return Err(PyErr::take(py).unwrap_or_else(|| {
            crate::exceptions::invalid_state(py, "ContextVar reset failed".to_owned())
        }));
    }
    Ok(())
}

/// Binds call `node` of `core` in `CURRENT_CALL` (its parent for later wraps and blocks, and
/// what `report_cost` charges); reset with `CURRENT_CALL.reset(token)`.
#[pyfunction]
fn bind_call(core: &Bound<'_, PyAny>, node: NodeId) -> PyResult<Py<PyAny>> {
    bind(core.py(), core, node)
}

/// The node of `core`'s innermost open async call or block in this context, if any.
#[pyfunction]
fn enclosing_call(core: &Bound<'_, PyAny>) -> PyResult<Option<NodeId>> {
    enclosing(core.py(), core.as_ptr())
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallBinding>()?;
    m.add("CURRENT_CALL", var(m.py())?.clone_ref(m.py()))?;
    m.add_function(wrap_pyfunction!(bind_call, m)?)?;
    m.add_function(wrap_pyfunction!(enclosing_call, m)?)
}
