//! The package's one exception root and its generic families, defined once here so that the native
//! families (`DagError`, built from the core's registry) and the Python ones (`CallRefused`, `StoreError`,
//! `BillingError`, ...) all derive from it. `chainwarden.errors` re-exports them and documents the whole
//! hierarchy (docs/errors.md).
//!
//! They are written in Python and run once at import: they need real multiple inheritance with the
//! built-in exceptions (`except ValueError` keeps working) and a keyword argument (`argument=`), which a
//! `#[pyclass]` cannot give an exception. Every bad argument the bindings find is raised through
//! [`invalid_argument`] / [`invalid_argument_type`], naming the argument.

use chainwarden_core::codes::{Class, Code, FAMILIES};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyMappingProxy, PyType};

const SOURCE: &std::ffi::CStr = cr#"
class ChainwardenError(Exception):
    """The root of every exception chainwarden raises (docs/errors.md)."""


class InvalidArgument(ChainwardenError, ValueError):
    def __init__(self, message="", *, argument=None):
        super().__init__(message)
        self.argument = argument


class InvalidArgumentType(ChainwardenError, TypeError):
    """An argument has the wrong type; `argument` names it (None: no single argument)."""

    def __init__(self, message="", *, argument=None):
        super().__init__(message)
        self.argument = argument


class NotFound(ChainwardenError, KeyError):
    pass


class InvalidState(ChainwardenError, RuntimeError):
    pass
"#;

pub struct Classes {
    pub root: Py<PyType>,
    pub invalid_argument: Py<PyType>,
    pub invalid_argument_type: Py<PyType>,
    pub not_found: Py<PyType>,
    pub invalid_state: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

const NAMES: [&str; 5] = [
    "ChainwardenError",
    "InvalidArgument",
    "InvalidArgumentType",
    "NotFound",
    "InvalidState",
];

fn build(py: Python<'_>) -> PyResult<Classes> {
    let ns = PyDict::new(py);
    ns.set_item("__name__", "chainwarden._core")?;
    py.run(SOURCE, Some(&ns), None)?;
    let get = |name: &str| -> PyResult<Py<PyType>> {
        let cls = ns.get_item(name)?.expect("defined by SOURCE");
        // The families that registry rows name are documented in the registry (docs/design.md §28).
        if let Some(class) = Class::ALL.iter().find(|c| c.name() == name) {
            cls.setattr("__doc__", class.doc())?;
        }
        Ok(cls.cast_into::<PyType>()?.unbind())
    };
    Ok(Classes {
        root: get(NAMES[0])?,
        invalid_argument: get(NAMES[1])?,
        invalid_argument_type: get(NAMES[2])?,
        not_found: get(NAMES[3])?,
        invalid_state: get(NAMES[4])?,
    })
}

pub fn classes(py: Python<'_>) -> &Classes {
    CLASSES.get_or_init(py, || build(py).expect("chainwarden exception classes"))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let c = classes(py);
    for (name, cls) in NAMES.iter().zip([
        &c.root,
        &c.invalid_argument,
        &c.invalid_argument_type,
        &c.not_found,
        &c.invalid_state,
    ]) {
        m.add(*name, cls.bind(py))?;
    }
    // The core's registry, read-only: every code -> the name of its class in `chainwarden.errors`.
    let codes = PyDict::new(py);
    for &code in Code::ALL {
        codes.set_item(code.as_str(), code.class().name())?;
    }
    for &(class, code) in FAMILIES {
        codes.set_item(code, class.name())?;
    }
    m.add("ERROR_CODES", PyMappingProxy::new(py, codes.as_mapping()))?;
    Ok(())
}

/// The class a registry row is raised as. The store's classes are the Python layer's (no native code raises
/// them), so they fall back to the root.
pub fn class_of(py: Python<'_>, class: Class) -> Bound<'_, PyType> {
    let c = classes(py);
    let cls = match class {
        Class::NotFound => &c.not_found,
        Class::InvalidArgument => &c.invalid_argument,
        Class::InvalidState => &c.invalid_state,
        _ => match crate::dag::errors::class_of(py, class) {
            Some(cls) => return cls.clone(),
            None => &c.root,
        },
    };
    cls.bind(py).clone()
}

/// An instance of `cls(message, argument=argument)`, or the error building it raised.
fn with_argument(
    py: Python<'_>,
    cls: &Py<PyType>,
    argument: Option<&str>,
    message: String,
) -> PyErr {
    let kwargs = PyDict::new(py);
    let built = kwargs
        .set_item("argument", argument)
        .and_then(|()| cls.bind(py).call((message,), Some(&kwargs)));
    match built {
        Ok(inst) => PyErr::from_value(inst),
        Err(e) => e,
    }
}

/// `InvalidArgument` (a `ValueError`): `argument` has the right type but a bad value.
pub fn invalid_argument(
    py: Python<'_>,
    argument: Option<&str>,
    message: impl Into<String>,
) -> PyErr {
    with_argument(py, &classes(py).invalid_argument, argument, message.into())
}

/// `InvalidArgumentType` (a `TypeError`): `argument` has the wrong type.
pub fn invalid_argument_type(
    py: Python<'_>,
    argument: Option<&str>,
    message: impl Into<String>,
) -> PyErr {
    with_argument(
        py,
        &classes(py).invalid_argument_type,
        argument,
        message.into(),
    )
}

#[cfg(feature = "bench-floor")]
/// `NotFound` (a `KeyError`) carrying `key`, so `str(err)` reads like a built-in `KeyError`.
pub fn not_found(py: Python<'_>, key: String) -> PyErr {
    PyErr::from_type(classes(py).not_found.bind(py).clone(), (key,))
}

/// `InvalidState` (a `RuntimeError`).
pub fn invalid_state(py: Python<'_>, message: String) -> PyErr {
    PyErr::from_type(classes(py).invalid_state.bind(py).clone(), (message,))
}
