//! `ctx.llm_call(...)` / `ctx.tool_call(...)` natively: `CallForms` is the native base of
//! `ExecutionContext`, so the common form `ctx.llm_call(name, cost)` is a method call that runs no
//! Python frame — it finds the form's plan (`block::CallPlan`) in the context's table and returns a
//! new `Block` (docs/containment.md "Decorators"). Every other form (a decorated function, a timeout,
//! a plan not made yet, a wrong argument) runs the Python layer's `llm_call` / `tool_call`
//! (`containment/_decorators.py`), which validates, plans and fills the table.

use pyo3::gc::{PyTraverseError, PyVisit};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyFloat, PyString, PyTuple};

use super::block::{Block, CallPlan};
use super::CallKind;

/// The default cost estimate, as the key of the plans table.
static ZERO: PyOnceLock<Py<PyFloat>> = PyOnceLock::new();

/// The Python layer's `llm_call(ctx, ...)` and `tool_call(ctx, ...)`, imported on first use.
static SLOW: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

/// The part of an `ExecutionContext` its call forms need: the plans of its blocks, per kind.
#[pyclass(subclass, frozen, module = "chainwarden._core")]
pub struct CallForms {
    /// name -> cost estimate -> `CallPlan` (`_blocks.plan_named` fills them).
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
                let block = Block::new(slf.clone().into_any().unbind(), plan);
                return Ok(Bound::new(py, block)?.into_any().unbind());
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

    /// The plan of `(name, cost)` when both have their exact types (0.0 and False hash alike)
    /// and the form was planned already.
    fn planned(
        slf: &Bound<'_, Self>,
        kind: CallKind,
        args: &Bound<'_, PyTuple>,
    ) -> PyResult<Option<Py<CallPlan>>> {
        let py = slf.py();
        let zero = || {
            ZERO.get_or_init(py, || PyFloat::new(py, 0.0).unbind())
                .bind(py)
                .clone()
                .into_any()
        };
        let (name, cost) = match args.len() {
            0 => (intern!(py, "").clone().into_any(), zero()),
            1 => (args.get_item(0)?, zero()),
            2 => (args.get_item(0)?, args.get_item(1)?),
            _ => return Ok(None),
        };
        if !name.is_exact_instance_of::<PyString>() || !cost.is_exact_instance_of::<PyFloat>() {
            return Ok(None);
        }
        let this = slf.get();
        let plans = match kind {
            CallKind::Llm => &this.llm_plans,
            _ => &this.tool_plans,
        };
        let Some(costs) = plans.bind(py).get_item(&name)? else {
            return Ok(None);
        };
        let Some(plan) = costs.cast::<PyDict>()?.get_item(&cost)? else {
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

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<CallForms>()
}
