//! The DagError family, built once (the first time it is needed) from the core's registry
//! (`chainwarden_core::codes`) under the package's root `ChainwardenError`, with real multiple inheritance
//! (LookupError; `InvalidArgument`, a ValueError), which `create_exception!` cannot express.
//! `DAG_ERROR_CODES` maps every DAG code to its class, so no code is written twice (docs/design.md §28).

use chainwarden_core::codes::{Class, DagCode};
use chainwarden_core::dag::DagError;
use pyo3::exceptions::PyLookupError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMappingProxy, PyTuple, PyType};

use crate::exceptions;

/// The family's subclasses, one per class the DAG's rows name.
const KINDS: [Class; 4] = [
    Class::DagNotFoundError,
    Class::DagInvalidArgumentError,
    Class::DagEdgeError,
    Class::DagPreconditionError,
];

struct Classes {
    base: Py<PyType>,
    /// One class per entry of `KINDS`, in that order.
    kinds: Vec<Py<PyType>>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn make<'py>(
    py: Python<'py>,
    class: Class,
    bases: Vec<Bound<'py, PyType>>,
) -> PyResult<Py<PyType>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "chainwarden._core")?;
    ns.set_item("__doc__", class.doc())?;
    if let Some(code) = class.class_code() {
        ns.set_item("code", code)?;
    }
    let ty = py.get_type::<PyType>();
    let cls = ty.call1((class.name(), PyTuple::new(py, bases)?, ns))?;
    Ok(cls.cast_into::<PyType>()?.unbind())
}

/// The class a family also derives from, so `except LookupError` / `except ValueError` (and
/// `except chainwarden.errors.InvalidArgument`) work.
fn second_base(py: Python<'_>, class: Class) -> Option<Bound<'_, PyType>> {
    match class {
        Class::DagNotFoundError => Some(py.get_type::<PyLookupError>()),
        Class::DagInvalidArgumentError => {
            Some(exceptions::classes(py).invalid_argument.bind(py).clone())
        }
        _ => None,
    }
}

fn build(py: Python<'_>) -> PyResult<Classes> {
    let root = exceptions::classes(py).root.bind(py).clone();
    let base = make(py, Class::DagError, vec![root])?;
    let kinds = KINDS
        .iter()
        .map(|&class| {
            let bases = std::iter::once(base.bind(py).clone())
                .chain(second_base(py, class))
                .collect();
            make(py, class, bases)
        })
        .collect::<PyResult<_>>()?;
    Ok(Classes { base, kinds })
}

fn classes(py: Python<'_>) -> &Classes {
    CLASSES.get_or_init(py, || build(py).expect("DagError classes"))
}

/// The family's class named `class`, or None for a class outside the family.
pub fn class_of(py: Python<'_>, class: Class) -> Option<&Bound<'_, PyType>> {
    if class == Class::DagError {
        return Some(classes(py).base.bind(py));
    }
    let at = KINDS.iter().position(|&k| k == class)?;
    Some(classes(py).kinds[at].bind(py))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    for class in std::iter::once(Class::DagError).chain(KINDS) {
        m.add(class.name(), class_of(py, class))?;
    }
    let codes = PyDict::new(py);
    for &code in DagCode::ALL {
        codes.set_item(code.as_str(), class_of(py, code.class()))?;
    }
    // Read-only: the registry is the core's, not something callers edit.
    m.add(
        "DAG_ERROR_CODES",
        PyMappingProxy::new(py, codes.as_mapping()),
    )?;
    Ok(())
}

pub fn to_py(py: Python<'_>, err: DagError) -> PyErr {
    crate::errors::raise(py, err.code.into(), err.message, None)
}

/// A `DagInvalidArgumentError` for a bad argument the bindings found before calling the engine.
pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, DagError::invalid(message))
}

/// [`invalid`] naming the argument (`err.argument`, as every `InvalidArgument` does).
pub fn invalid_arg(py: Python<'_>, argument: &str, message: impl Into<String>) -> PyErr {
    crate::errors::raise(
        py,
        DagCode::InvalidArgument.into(),
        message.into(),
        Some(argument),
    )
}
