//! `with ctx.llm_call(...):` natively: the block reaches the same admission and settlement as
//! `wrap_llm_call`'s fast path, and binds its call in `CURRENT_CALL` (a block may await, so its
//! children find it by ContextVar, not by the per-thread stack of sync calls). The block is itself
//! the value it binds (`Block::bind_as_self`): a `with` statement of a planned form allocates one
//! object, the block.
//!
//! A `CallPlan` is what one form of call of a chain admits (kind, name, model, estimate), built
//! once and reused by every block of that form. When the chain has nothing to consult besides the
//! core (`ChainState.plain`, no rich options) the block is two native calls; otherwise, and
//! whenever a block fails or is refused, the Python layer's code (`containment/_blocks.py`) runs.
//! `__enter__` and `__exit__` are read straight from the interpreter's arguments (src/fast_entry.rs),
//! as a `with` statement calls them.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;
use pyo3::ffi;
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyBool;

use chainwarden_core::ids::NodeId;

use super::binding::{self, Binding};
use super::{admit, Call, CallKind, ChainCore};
use crate::errors;
use crate::exceptions::invalid_state;
use crate::fast_entry::{exactly, fast_method, Fast, FastEntry};

/// One form of contained call of a chain, as every block of that form admits it.
#[pyclass(frozen, module = "chainwarden._core")]
pub struct CallPlan {
    /// The chain's `ChainState`.
    #[pyo3(get)]
    state: Py<PyAny>,
    #[pyo3(get)]
    kind: CallKind,
    /// The call's `WrapOptions`.
    #[pyo3(get)]
    options: Py<PyAny>,
    name: String,
    model: Option<String>,
    estimate: f64,
    /// The chain's core when a block needs nothing else (the native path), else None.
    fast: Option<Py<ChainCore>>,
    /// Whether this plan already told the chain a block bound a call (`ChainState.async_used`).
    marked: AtomicBool,
}

#[pymethods]
impl CallPlan {
    /// `fast`: the chain's core when the chain is plain and the options are not rich (see the
    /// module doc), else None. `name`, `model` and `cost_estimate` are the options' own.
    #[new]
    #[pyo3(signature = (state, kind, options, name, model, cost_estimate, fast))]
    fn new(
        state: Py<PyAny>,
        kind: CallKind,
        options: Py<PyAny>,
        name: String,
        model: Option<String>,
        cost_estimate: f64,
        fast: Option<Py<ChainCore>>,
    ) -> Self {
        CallPlan {
            state,
            kind,
            options,
            name,
            model,
            estimate: cost_estimate,
            fast,
            marked: AtomicBool::new(false),
        }
    }

    /// Whether blocks of this plan take the native path.
    #[getter]
    fn native(&self) -> bool {
        self.fast.is_some()
    }
}

/// The Python layer's block functions, imported on first use.
struct Slow {
    enter: Py<PyAny>,
    exit: Py<PyAny>,
    refused: Py<PyAny>,
    decorate: Py<PyAny>,
}

static SLOW: PyOnceLock<Slow> = PyOnceLock::new();

fn slow(py: Python<'_>) -> PyResult<&Slow> {
    SLOW.get_or_try_init(py, || {
        let m = py.import("chainwarden.containment._blocks")?;
        Ok(Slow {
            enter: m.getattr("enter_block")?.unbind(),
            exit: m.getattr("exit_block")?.unbind(),
            refused: m.getattr("refused_block")?.unbind(),
            decorate: py
                .import("chainwarden.containment._decorators")?
                .getattr("decorate")?
                .unbind(),
        })
    })
}

struct Open {
    node: NodeId,
    token: Py<PyAny>,
    native: bool,
}

/// The calls a block object has open, innermost last: the first in place (a block object is
/// almost always entered once, and then costs no allocation), re-entries after it.
#[derive(Default)]
struct OpenCalls {
    first: Option<Open>,
    more: Vec<Open>,
}

impl OpenCalls {
    fn push(&mut self, open: Open) {
        if self.first.is_none() {
            self.first = Some(open);
        } else {
            self.more.push(open);
        }
    }

    fn pop(&mut self) -> Option<Open> {
        self.more.pop().or_else(|| self.first.take())
    }
}

#[derive(Default)]
struct BlockState {
    open: OpenCalls,
    /// The call this block object is bound as in `CURRENT_CALL` (its first, kept after the call
    /// closed: code that outlived the block, e.g. a task it started, still finds that call,
    /// closed, docs/design.md §30).
    bound: Option<Binding>,
}

/// What `ctx.llm_call(...)` returns: a decorator (`__call__`, see `containment/_decorators.py`),
/// and a context manager for one block. One use per `with` statement: entering admits the call
/// (or raises `CallRefused`), leaving closes it — success when the block completes, a counted
/// failure when it raises. Not a Python subclass. Tracked by the cycle collector: while a call of
/// it is open, the block is the value of `CURRENT_CALL` in a context its token refers to (a cycle,
/// which a block entered and never left in a dropped task's context would leak).
#[pyclass(frozen, module = "chainwarden._core")]
pub struct Block {
    ctx: Py<PyAny>,
    plan: Py<CallPlan>,
    /// The calls this object has open (a block object may be re-entered), and what it is bound as.
    state: Mutex<BlockState>,
}

impl Block {
    /// Makes this block the value bound for its call (`binding::Current::bind_block`), unless it
    /// is bound already (entered again, or entered before): then the caller binds a
    /// `CallBinding`, and whoever holds this block's first binding keeps seeing that call.
    pub(super) fn bind_as_self(&self, binding: Binding) -> Result<(), Binding> {
        let mut state = self.state.lock();
        if state.bound.is_some() {
            return Err(binding);
        }
        state.bound = Some(binding);
        Ok(())
    }

    /// What this block is bound as, seen through `f` (`binding::read`).
    pub(super) fn read_bound<R>(&self, f: impl FnOnce(&Binding) -> R) -> Option<R> {
        self.state.lock().bound.as_ref().map(f)
    }

    /// Admits this block's call (or raises `CallRefused`) and binds it in `CURRENT_CALL`.
    fn enter(slf: &Bound<'_, Self>) -> errors::Result<()> {
        let py = slf.py();
        let this = slf.get();
        let plan_obj = this.plan.bind(py);
        let plan = plan_obj.get();
        let (node, token) = match &plan.fast {
            Some(core) => {
                let core = core.bind(py);
                // Read once: the enclosing call is found in it, and the block binds over it.
                let current = binding::Current::read(py)?;
                let call = Call {
                    parent_hint: current.enclosing(core.as_ptr()),
                    kind: plan.kind,
                    name: &plan.name,
                    model: plan.model.as_deref(),
                    cost_estimate: plan.estimate,
                };
                let node = match admit(core, &call, false)? {
                    Ok(node) => node,
                    Err(r) => {
                        // Raises the refusal (`CallRefused`), after recording the stop as a wrap does.
                        slow(py)?
                            .refused
                            .bind(py)
                            .call1((plan_obj, r.cause, r.node))?;
                        return Err(
                            invalid_state(py, "a refused block was not raised".to_owned()).into(),
                        );
                    }
                };
                // Read first: a swap is a locked instruction on every block, a load is not.
                if !plan.marked.load(Ordering::Relaxed)
                    && !plan.marked.swap(true, Ordering::Relaxed)
                {
                    plan.state
                        .bind(py)
                        .setattr(intern!(py, "async_used"), PyBool::new(py, true))?;
                }
                (node, current.bind_block(slf, core.as_any(), node)?)
            }
            None => {
                let node: NodeId = slow(py)?.enter.bind(py).call1((plan_obj,))?.extract()?;
                let core = plan.state.bind(py).getattr(intern!(py, "core"))?;
                let current = binding::Current::read(py)?;
                (node, current.bind_block(slf, &core, node)?)
            }
        };
        this.state.lock().open.push(Open {
            node,
            token,
            native: plan.fast.is_some(),
        });
        Ok(())
    }

    /// Leaves the innermost open call of this block: `exc` is what the block raised, or None.
    fn exit(slf: &Bound<'_, Self>, exc: &Bound<'_, PyAny>) -> errors::Result<bool> {
        let py = slf.py();
        let this = slf.get();
        let open = this.state.lock().open.pop();
        let open = open.ok_or_else(|| {
            invalid_state(
                py,
                "a contained block was left without being entered".to_owned(),
            )
        })?;
        // Owned objects are held as `Bound` here: dropped at once under a fast entry (src/fast_entry.rs).
        let token = open.token.into_bound(py);
        binding::reset(&token)?;
        let plan_obj = this.plan.bind(py);
        let plan = plan_obj.get();
        if exc.is_none() {
            if let Some(core) = plan.fast.as_ref().filter(|_| open.native) {
                // A block has no result: it is charged what it reported, else its estimate.
                core.get()
                    .settle_call(open.node, !plan.name.is_empty(), plan.estimate)?;
                return Ok(false);
            }
        }
        slow(py)?.exit.bind(py).call1((plan_obj, open.node, exc))?;
        Ok(false)
    }
}

#[pymethods]
impl Block {
    /// `ctx`: the `ExecutionContext` the block belongs to.
    #[new]
    pub(crate) fn new(ctx: Py<PyAny>, plan: Py<CallPlan>) -> Self {
        Block {
            ctx,
            plan,
            state: Mutex::new(BlockState::default()),
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.ctx)?;
        visit.call(&self.plan)?;
        let Some(state) = self.state.try_lock() else {
            return Ok(());
        };
        let open = state.open.first.iter().chain(&state.open.more);
        for o in open {
            visit.call(&o.token)?;
        }
        match &state.bound {
            Some(b) => b.visit(&visit),
            None => Ok(()),
        }
    }

    #[getter]
    fn _ctx(&self, py: Python<'_>) -> Py<PyAny> {
        self.ctx.clone_ref(py)
    }

    #[getter]
    fn _plan(&self, py: Python<'_>) -> Py<CallPlan> {
        self.plan.clone_ref(py)
    }

    /// Decorates `fn`: each call of it is a contained call with this block's options.
    fn __call__(slf: &Bound<'_, Self>, r#fn: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        slow(slf.py())?.decorate.call1(slf.py(), (slf, r#fn))
    }

    /// Enters the block: admits its call, or raises `CallRefused`.
    fn __enter__(slf: &Bound<'_, Self>) -> errors::Result<()> {
        Self::enter(slf)
    }

    /// Leaves the block: its call succeeds, or fails with the exception it raised (never suppressed).
    #[pyo3(signature = (exc_type, exc, tb))]
    fn __exit__(
        slf: &Bound<'_, Self>,
        exc_type: &Bound<'_, PyAny>,
        exc: &Bound<'_, PyAny>,
        tb: &Bound<'_, PyAny>,
    ) -> errors::Result<bool> {
        let _ = (exc_type, tb);
        Self::exit(slf, exc)
    }
}

static ENTER: FastEntry = FastEntry::new();
static EXIT: FastEntry = FastEntry::new();

fast_method!(enter, ENTER, fast_enter);
fast_method!(exit, EXIT, fast_exit);

/// `__enter__()` read straight from CPython's arguments (src/fast_entry.rs): what a `with` statement
/// calls, without PyO3's argument handling; any other call goes to the method above.
unsafe fn fast_enter<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Fast<'py> {
    // SAFETY: CPython's arguments, unchanged, and `self` an instance of the class the method descriptor
    // belongs to (it checks before calling).
    unsafe {
        if exactly(args, nargsf, kwnames, 0).is_none() {
            return Ok(None);
        }
        let slf = Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<Block>();
        Block::enter(&slf)?;
        Ok(Some(py.None().into_bound(py)))
    }
}

/// `__exit__(exc_type, exc, tb)` by position, as a `with` statement calls it, read as `fast_enter`.
unsafe fn fast_exit<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Fast<'py> {
    // SAFETY: as `fast_enter`.
    unsafe {
        let Some(&[_, exc, _]) = exactly(args, nargsf, kwnames, 3) else {
            return Ok(None);
        };
        let slf = Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<Block>();
        let suppressed = Block::exit(&slf, &Bound::from_borrowed_ptr(py, exc))?;
        Ok(Some(PyBool::new(py, suppressed).to_owned().into_any()))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallPlan>()?;
    m.add_class::<Block>()?;
    let ty = m.py().get_type::<Block>();
    ENTER.install(m.py(), &ty, c"__enter__", enter)?;
    EXIT.install(m.py(), &ty, c"__exit__", exit)
}
