//! `current_context()` natively: the `ExecutionContext` the running code belongs to — the innermost
//! of the context entered with `with ctx:` (a ContextVar of `EnteredContext`s) and the context whose
//! call the code runs in (the bindings `report_cost` finds its call by: `CURRENT_CALL` for async
//! calls and blocks, this thread's stack of sync calls). `@contained` asks it on every call, so the
//! common answers take no Python frame; the owner of a call of a context not entered is the Python
//! layer's (`containment/_current.py`, docs/containment.md "The current context: `current_context()`
//! and `@contained`").

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

use chainwarden_core::ids::NodeId;

use super::binding;

/// A context entered with `with ctx:` / `async with ctx:`, over the one entered before it.
#[pyclass(frozen, get_all, module = "chainwarden._core")]
pub struct EnteredContext {
    ctx: Py<PyAny>,
    previous: Option<Py<EnteredContext>>,
    /// Where it was entered, to tell whether it is inside or outside the innermost wrapped call.
    thread: u64,
    sync_depth: usize,
    /// The binding innermost when it was entered (a `CallBinding` or a `Block`).
    call: Option<Py<PyAny>>,
}

static ENTERED: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// The Python layer's `owner(core)`, imported on first use.
static OWNER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn entered_var(py: Python<'_>) -> PyResult<&Py<PyAny>> {
    ENTERED.get_or_try_init(py, || binding::new_var(py, c"chainwarden_context"))
}

fn entered(py: Python<'_>) -> PyResult<Option<Bound<'_, EnteredContext>>> {
    Ok(binding::get_var(py, entered_var(py)?)?
        .cast_into::<EnteredContext>()
        .ok())
}

fn set_entered(py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    binding::set_var(py, entered_var(py)?, value).map(drop)
}

/// Makes `ctx` the context entered innermost (`ExecutionContext.__enter__`).
#[pyfunction]
pub fn enter_context(ctx: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = ctx.py();
    let entered = EnteredContext {
        ctx: ctx.clone().unbind(),
        previous: entered(py)?.map(Bound::unbind),
        thread: binding::thread_ident(),
        sync_depth: super::sync_depth(),
        call: binding::current(py)?.map(Bound::unbind),
    };
    set_entered(py, Bound::new(py, entered)?.as_any())
}

/// Leaves `ctx` when it is the context entered innermost. Not a token reset: an `async with` may be
/// left from a copy of the context it was entered in.
#[pyfunction]
pub fn leave_context(ctx: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = ctx.py();
    let Some(top) = entered(py)? else {
        return Ok(());
    };
    let top = top.get();
    if !top.ctx.is(ctx) {
        return Ok(());
    }
    match &top.previous {
        Some(previous) => set_entered(py, previous.bind(py).as_any()),
        None => set_entered(py, &py.None().into_bound(py)),
    }
}

/// The wrapped call the running code is inside (`current_call()`): its chain core (or the
/// shared-budget gate around it) and its node.
#[pyclass(frozen, get_all, eq, module = "chainwarden._core")]
pub struct OpenCall {
    core: Py<PyAny>,
    node: NodeId,
}

/// The same call: the same core object and node.
impl PartialEq for OpenCall {
    fn eq(&self, other: &Self) -> bool {
        self.core.is(&other.core) && self.node == other.node
    }
}

/// The innermost wrapped call the running code is inside, of any chain: what `report_cost`
/// charges. None outside any.
#[pyfunction]
pub fn current_call(py: Python<'_>) -> PyResult<Option<OpenCall>> {
    Ok(binding::innermost(py)?.map(|found| OpenCall {
        core: found.core.unbind(),
        node: found.node,
    }))
}

/// The innermost context entered with `with` / `async with` or wrapping the running call, or None.
#[pyfunction]
pub fn current_context(py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
    let entered = entered(py)?;
    let entered = entered.as_ref().map(Bound::get);
    // The innermost wrapped call, as `report_cost` finds it.
    let Some(call) = binding::innermost(py)? else {
        return Ok(entered.map(|e| e.ctx.clone_ref(py)));
    };
    if let Some(e) = entered {
        let inside = match &call.binding {
            Some(bound) => e.call.as_ref().map(Py::as_ptr) == Some(bound.as_ptr()),
            None => e.thread == binding::thread_ident() && e.sync_depth >= super::sync_depth(),
        };
        if inside {
            return Ok(Some(e.ctx.clone_ref(py)));
        }
    }
    let owner = OWNER.get_or_try_init(py, || -> PyResult<_> {
        Ok(py
            .import("chainwarden.containment._current")?
            .getattr("owner")?
            .unbind())
    })?;
    let found = owner.call1(py, (call.core,))?;
    if !found.is_none(py) {
        return Ok(Some(found));
    }
    Ok(entered.map(|e| e.ctx.clone_ref(py)))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<EnteredContext>()?;
    m.add_class::<OpenCall>()?;
    m.add_function(wrap_pyfunction!(current_call, m)?)?;
    m.add_function(wrap_pyfunction!(enter_context, m)?)?;
    m.add_function(wrap_pyfunction!(leave_context, m)?)?;
    m.add_function(wrap_pyfunction!(current_context, m)?)
}
