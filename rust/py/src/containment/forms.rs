//! `ctx.llm_call(...)` / `ctx.tool_call(...)` natively: `CallForms` is the native base of
//! `ExecutionContext`, so the common form `ctx.llm_call(name, cost)` is a method call that runs no
//! Python frame — it finds the form's plan (`block::CallPlan`) in the context's table and returns a
//! new `Block` (docs/containment.md "Decorators"). Every other form (a decorated function, a timeout,
//! a plan not made yet, a wrong argument) runs the Python layer's `llm_call` / `tool_call`
//! (`containment/_decorators.py`), which validates, plans and fills the table.

use pyo3::ffi;
use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFloat, PyString, PyTuple};

use super::block::{Block, CallPlan};
use super::CallKind;
use crate::fast_entry::{fast_method, Fast, FastEntry};

/// The Python layer's `llm_call(ctx, ...)` and `tool_call(ctx, ...)`, imported on first use.
static SLOW: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

/// The part of an `ExecutionContext` its call forms need: the plans of its blocks, per kind.
#[pyclass(subclass, frozen, module = "chainwarden._core")]
pub struct CallForms {
    /// name, or (name, cost estimate) -> `CallPlan` (`_blocks.plan_named` fills them).
    llm_plans: Py<PyDict>,
    tool_plans: Py<PyDict>,
}

impl CallForms {
    fn form(
        slf: &Bound<'_, Self>,
        kind: CallKind,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        let py = slf.py();
        if kwargs.is_none_or(|k| k.is_empty()) {
            if let Some(plan) = Self::planned(slf, kind, args)? {
                return Ok(Self::block(slf, plan)?.unbind());
            }
        }
        let (llm, tool) = SLOW.get_or_try_init(py, || -> PyResult<_> {
            let m = py.import("chainwarden.containment._decorators")?;
            Ok((
                m.getattr("llm_call")?.unbind(),
                m.getattr("tool_call")?.unbind(),
            ))
        })?;
        let slow = if kind == CallKind::Llm { llm } else { tool };
        let mut all = vec![slf.clone().into_any()];
        all.extend(args.iter());
        slow.call(py, PyTuple::new(py, all)?, kwargs)
    }

    fn block<'py>(slf: &Bound<'py, Self>, plan: Py<CallPlan>) -> PyResult<Bound<'py, PyAny>> {
        let block = Block::new(slf.clone().into_any().unbind(), plan);
        Ok(Bound::new(slf.py(), block)?.into_any())
    }

    /// The plan of the positional arguments `(name, cost)` when both have their exact types (0.0
    /// and False hash alike) and the form was planned already.
    fn planned(
        slf: &Bound<'_, Self>,
        kind: CallKind,
        args: &Bound<'_, PyTuple>,
    ) -> PyResult<Option<Py<CallPlan>>> {
        let (name, cost) = match args.len() {
            0 => (None, None),
            1 => (Some(args.get_item(0)?), None),
            2 => (Some(args.get_item(0)?), Some(args.get_item(1)?)),
            _ => return Ok(None),
        };
        Self::plan_of(slf, kind, name, cost)
    }

    /// The plan of `(name, cost)` (absent: `""`, `0.0`), as `planned`: the table's key is the name
    /// alone for an estimate of 0.0, else `(name, cost)` (`_blocks.plan_named`).
    fn plan_of(
        slf: &Bound<'_, Self>,
        kind: CallKind,
        name: Option<Bound<'_, PyAny>>,
        cost: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<CallPlan>>> {
        let py = slf.py();
        let name = name.unwrap_or_else(|| intern!(py, "").clone().into_any());
        if !name.is_exact_instance_of::<PyString>() {
            return Ok(None);
        }
        let key = match cost {
            None => name,
            Some(cost) => match cost.cast_exact::<PyFloat>() {
                Ok(c) if c.value() == 0.0 => name,
                Ok(_) => PyTuple::new(py, [name, cost])?.into_any(),
                Err(_) => return Ok(None),
            },
        };
        let this = slf.get();
        let plans = match kind {
            CallKind::Llm => &this.llm_plans,
            _ => &this.tool_plans,
        };
        let Some(plan) = plans.bind(py).get_item(&key)? else {
            return Ok(None);
        };
        Ok(Some(plan.cast_into::<CallPlan>()?.unbind()))
    }
}

#[pymethods]
impl CallForms {
    /// Takes (and ignores) the arguments of the subclass's `__init__`.
    #[new]
    #[pyo3(signature = (*args, **kwargs))]
    fn new(py: Python<'_>, args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> Self {
        let _ = (args, kwargs);
        CallForms {
            llm_plans: PyDict::new(py).unbind(),
            tool_plans: PyDict::new(py).unbind(),
        }
    }

    #[getter]
    fn _llm_plans(&self, py: Python<'_>) -> Py<PyDict> {
        self.llm_plans.clone_ref(py)
    }

    #[getter]
    fn _tool_plans(&self, py: Python<'_>) -> Py<PyDict> {
        self.tool_plans.clone_ref(py)
    }

    /// `llm_call(name="", cost=0.0, *, timeout_ms=None)`: see `ExecutionContext.llm_call`.
    #[pyo3(signature = (*args, **kwargs))]
    fn llm_call(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        Self::form(slf, CallKind::Llm, args, kwargs)
    }

    /// `tool_call(name="", cost=0.0, *, timeout_ms=None)`: see `ExecutionContext.tool_call`.
    #[pyo3(signature = (*args, **kwargs))]
    fn tool_call(
        slf: &Bound<'_, Self>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Py<PyAny>> {
        Self::form(slf, CallKind::Tool, args, kwargs)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.llm_plans)?;
        visit.call(&self.tool_plans)
    }
}

static LLM_CALL: FastEntry = FastEntry::new();
static TOOL_CALL: FastEntry = FastEntry::new();

fast_method!(llm_call, LLM_CALL, fast_form::<false>);
fast_method!(tool_call, TOOL_CALL, fast_form::<true>);

/// `ctx.llm_call(name[, cost])` (`ctx.tool_call` with `TOOL`) read straight from CPython's
/// arguments (src/fast_entry.rs): the block of a planned form without the argument tuple PyO3
/// builds for `*args`; any other call (keywords, a form not planned yet) goes to the method above.
unsafe fn fast_form<'py, const TOOL: bool>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Fast<'py> {
    // SAFETY: CPython passes `nargs` positional arguments, borrowed for the call, and `self` an
    // instance of the class the method descriptor belongs to (it checks before calling).
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize);
        if nargs > 2 || !(kwnames.is_null() || ffi::PyTuple_GET_SIZE(kwnames) == 0) {
            return Ok(None);
        }
        let kind = if TOOL { CallKind::Tool } else { CallKind::Llm };
        let arg = |i: isize| (i < nargs).then(|| Bound::from_borrowed_ptr(py, *args.offset(i)));
        let slf = Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<CallForms>();
        match CallForms::plan_of(&slf, kind, arg(0), arg(1))? {
            Some(plan) => CallForms::block(&slf, plan).map(Some),
            None => Ok(None),
        }
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallForms>()?;
    let ty = m.py().get_type::<CallForms>();
    LLM_CALL.install(m.py(), &ty, c"llm_call", llm_call)?;
    TOOL_CALL.install(m.py(), &ty, c"tool_call", tool_call)
}
