//! `CURRENT_CALL`: which async call or `with` block the running code is inside, of every chain.
//!
//! One ContextVar holds the innermost binding — a `CallBinding`, or a `with` block bound as itself
//! (no object allocated per block); each binding links to the one it was set over (`outer`), so a chain finds its own innermost call by walking the links (`enclosing`) and a call
//! sets and resets one variable, not one per chain. A ContextVar follows the code into the tasks it
//! starts and into `asyncio.to_thread` workers (both copy the context), which the per-thread stack
//! of sync calls cannot (docs/containment.md "Decorators").

use std::ffi::CStr;
use std::ptr;

use pyo3::ffi;
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use chainwarden_core::ids::NodeId;

use super::block::Block;

/// Where an async call or block is bound, as the code it runs sees it: the fields of a
/// `CallBinding`, and of a `Block` bound as itself (`block::Block::bind_as_self`).
pub(super) struct Binding {
    /// The chain core (or the shared-budget gate around it) the call belongs to.
    pub(super) core: Py<PyAny>,
    pub(super) node: NodeId,
    /// Where it was bound: sync calls opened on that thread after it (deeper in the stack) are
    /// nested inside it, so they take `report_cost`.
    pub(super) thread: u64,
    pub(super) sync_depth: usize,
    /// The value this one was set over: the enclosing async call or block, of any chain (a
    /// `CallBinding` or a `Block`).
    pub(super) outer: Option<Py<PyAny>>,
}

impl Binding {
    /// Call `node` of `core`, bound on this thread over `outer`.
    pub(super) fn here(core: &Bound<'_, PyAny>, node: NodeId, outer: Option<Py<PyAny>>) -> Self {
        Binding {
            core: core.clone().unbind(),
            node,
            thread: thread_ident(),
            sync_depth: super::sync_depth(),
            outer,
        }
    }

    pub(super) fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.core)?;
        visit.call(&self.outer)
    }
}

/// An async call or block, as seen from the code it runs (a block bound as itself is the other
/// kind of value of `CURRENT_CALL`).
#[pyclass(frozen, module = "chainwarden._core")]
pub struct CallBinding(Binding);

#[pymethods]
impl CallBinding {
    #[new]
    fn new(
        core: Py<PyAny>,
        node: NodeId,
        thread: u64,
        sync_depth: usize,
        outer: Option<Py<PyAny>>,
    ) -> Self {
        CallBinding(Binding {
            core,
            node,
            thread,
            sync_depth,
            outer,
        })
    }

    #[getter]
    fn core(&self, py: Python<'_>) -> Py<PyAny> {
        self.0.core.clone_ref(py)
    }

    #[getter]
    fn node(&self) -> NodeId {
        self.0.node
    }

    #[getter]
    fn thread(&self) -> u64 {
        self.0.thread
    }

    #[getter]
    fn sync_depth(&self) -> usize {
        self.0.sync_depth
    }

    #[getter]
    fn outer(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.0.outer.as_ref().map(|o| o.clone_ref(py))
    }
}

/// What value `value` of `CURRENT_CALL` binds, seen through `f`: the one reader of both kinds
/// of value (None for anything else, e.g. the default None).
pub(super) fn read<R>(value: &Bound<'_, PyAny>, f: impl FnOnce(&Binding) -> R) -> Option<R> {
    if let Ok(b) = value.cast::<CallBinding>() {
        return Some(f(&b.get().0));
    }
    value.cast::<Block>().ok()?.get().read_bound(f)
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

/// The innermost binding in the current context (a `CallBinding` or a `Block`), if any.
pub fn current(py: Python<'_>) -> PyResult<Option<Bound<'_, PyAny>>> {
    let value = get_var(py, var(py)?)?;
    Ok((!value.is_none()).then_some(value))
}

/// The innermost wrapped call this code runs in, of any chain, as `report_cost` charges it: the
/// innermost of the bindings (`CURRENT_CALL`) and this thread's stack of sync calls. A binding
/// wins when there is no sync call, or when it was bound on this thread at or above the
/// innermost sync call's depth.
pub struct Innermost<'py> {
    pub core: Bound<'py, PyAny>,
    pub node: NodeId,
    /// The binding it was found in (None: this thread's innermost sync call).
    pub binding: Option<Bound<'py, PyAny>>,
}

pub fn innermost(py: Python<'_>) -> PyResult<Option<Innermost<'_>>> {
    let (depth, sync) = super::innermost_sync(py);
    if let Some(value) = current(py)? {
        let thread = thread_ident();
        let found = read(&value, |b| {
            (sync.is_none() || (b.thread == thread && depth <= b.sync_depth))
                .then(|| (b.core.clone_ref(py), b.node))
        })
        .flatten();
        if let Some((core, node)) = found {
            return Ok(Some(Innermost {
                core: core.into_bound(py),
                node,
                binding: Some(value),
            }));
        }
    }
    Ok(sync.map(|(core, node)| Innermost {
        core: core.into_any(),
        node,
        binding: None,
    }))
}

/// The node of the innermost open async call or block of `core` in this context: a call of
/// another chain in between is skipped (a wrap nested in another context's wrap must not adopt
/// that context's node).
pub fn enclosing(py: Python<'_>, core: *mut ffi::PyObject) -> PyResult<Option<NodeId>> {
    Ok(enclosing_in(current(py)?, core))
}

/// `enclosing`, from the innermost binding `bound` (read once by a caller that binds over it).
fn enclosing_in(bound: Option<Bound<'_, PyAny>>, core: *mut ffi::PyObject) -> Option<NodeId> {
    let mut bound = bound?;
    loop {
        let py = bound.py();
        let (node, outer) = read(&bound, |b| {
            if b.core.as_ptr() == core {
                (Some(b.node), None)
            } else {
                (None, b.outer.as_ref().map(|o| o.clone_ref(py)))
            }
        })?;
        if node.is_some() {
            return node;
        }
        bound = outer?.into_bound(py);
    }
}

/// The innermost binding of this context, to find the enclosing call in and bind over.
pub struct Current<'py>(Option<Bound<'py, PyAny>>);

impl<'py> Current<'py> {
    pub fn read(py: Python<'py>) -> PyResult<Self> {
        current(py).map(Current)
    }

    /// As `enclosing`.
    pub fn enclosing(&self, core: *mut ffi::PyObject) -> Option<NodeId> {
        enclosing_in(self.0.clone(), core)
    }

    /// Binds call `node` of `core` over this binding, as `block` itself when `block` takes it
    /// (`Block::bind_as_self`: no object allocated), else as a new `CallBinding`; returns the
    /// ContextVar's token.
    pub fn bind_block(
        self,
        block: &Bound<'py, Block>,
        core: &Bound<'py, PyAny>,
        node: NodeId,
    ) -> PyResult<Py<PyAny>> {
        let py = core.py();
        let binding = Binding::here(core, node, self.0.map(Bound::unbind));
        match block.get().bind_as_self(binding) {
            Ok(()) => Ok(set_var(py, var(py)?, block.as_any())?.unbind()),
            Err(binding) => set_binding(py, binding),
        }
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
    set_binding(
        py,
        Binding::here(core, node, current(py)?.map(Bound::unbind)),
    )
}

fn set_binding(py: Python<'_>, binding: Binding) -> PyResult<Py<PyAny>> {
    let binding = Bound::new(py, CallBinding(binding))?;
    Ok(set_var(py, var(py)?, binding.as_any())?.unbind())
}

/// Restores the binding `token` replaced (`ValueError` from another context, `RuntimeError` reused).
pub fn reset(token: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = token.py();
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
