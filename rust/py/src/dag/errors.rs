//! The DagError family, built once (the first time it is needed) from the core's registry under the package's
//! root `ChainwardenError`, with real multiple inheritance (LookupError; `InvalidArgument`, a ValueError),
//! which `create_exception!` cannot express. `DAG_ERROR_CODES` maps
//! every code to its class, so no code is written twice (docs/design.md §28).

use chainwarden_core::dag::{DagCode, DagError, ErrorKind, BASE_CLASS, BASE_CODE, BASE_DOC};
use pyo3::exceptions::PyLookupError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMappingProxy, PyTuple, PyType};

use crate::exceptions;

struct Classes {
    base: Py<PyType>,
    /// One class per `ErrorKind`, in the order of `ErrorKind::ALL`.
    kinds: Vec<Py<PyType>>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn make<'py>(
    py: Python<'py>,
    name: &str,
    bases: Vec<Bound<'py, PyType>>,
    doc: &str,
    code: Option<&str>,
) -> PyResult<Py<PyType>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "chainwarden._core")?;
    ns.set_item("__doc__", doc)?;
    if let Some(code) = code {
        ns.set_item("code", code)?;
    }
    let ty = py.get_type::<PyType>();
    let cls = ty.call1((name, PyTuple::new(py, bases)?, ns))?;
    Ok(cls.cast_into::<PyType>()?.unbind())
}

/// The class a family also derives from, so `except LookupError` / `except ValueError` (and
/// `except chainwarden.errors.InvalidArgument`) work.
fn second_base(py: Python<'_>, kind: ErrorKind) -> Option<Bound<'_, PyType>> {
    match kind {
        ErrorKind::NotFound => Some(py.get_type::<PyLookupError>()),
        ErrorKind::InvalidArgument => {
            Some(exceptions::classes(py).invalid_argument.bind(py).clone())
        }
        ErrorKind::Edge | ErrorKind::Precondition => None,
    }
}

fn build(py: Python<'_>) -> PyResult<Classes> {
    let base = make(
        py,
        BASE_CLASS,
        vec![exceptions::classes(py).root.bind(py).clone()],
        BASE_DOC,
        Some(BASE_CODE),
    )?;
    let kinds = ErrorKind::ALL
        .iter()
        .map(|&kind| {
            let bases = std::iter::once(base.bind(py).clone())
                .chain(second_base(py, kind))
                .collect();
            let code = kind.only_code().map(DagCode::as_str);
            make(py, kind.class_name(), bases, kind.doc(), code)
        })
        .collect::<PyResult<_>>()?;
    Ok(Classes { base, kinds })
}

fn classes(py: Python<'_>) -> &Classes {
    CLASSES.get_or_init(py, || build(py).expect("DagError classes"))
}

fn class_of(py: Python<'_>, kind: ErrorKind) -> &Bound<'_, PyType> {
    let at = ErrorKind::ALL.iter().position(|&k| k == kind);
    classes(py).kinds[at.expect("every kind has a class")].bind(py)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add(BASE_CLASS, classes(py).base.bind(py))?;
    for &kind in ErrorKind::ALL {
        m.add(kind.class_name(), class_of(py, kind))?;
    }
    let codes = PyDict::new(py);
    for &code in DagCode::ALL {
        codes.set_item(code.as_str(), class_of(py, code.kind()))?;
    }
    // Read-only: the registry is the core's, not something callers edit.
    m.add(
        "DAG_ERROR_CODES",
        PyMappingProxy::new(py, codes.as_mapping()),
    )?;
    Ok(())
}

pub fn to_py(py: Python<'_>, err: DagError) -> PyErr {
    let built = class_of(py, err.kind())
        .call1((err.message,))
        .and_then(|inst| {
            inst.setattr("code", err.code.as_str())?;
            Ok(inst)
        });
    match built {
        Ok(inst) => PyErr::from_value(inst),
        Err(e) => e,
    }
}

/// A `DagInvalidArgumentError` for a bad argument the bindings found before calling the engine.
pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, DagError::invalid(message))
}

/// [`invalid`] naming the argument (`err.argument`, as every `InvalidArgument` does).
pub fn invalid_arg(py: Python<'_>, argument: &str, message: impl Into<String>) -> PyErr {
    let err = invalid(py, message);
    match err.value(py).setattr("argument", argument) {
        Ok(()) => err,
        Err(e) => e,
    }
}
