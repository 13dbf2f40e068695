//! The bindings' one error type: a core error of any engine, or an error Python already raised. Every binding
//! returns `Result<T>` and uses `?`; the conversion to a Python exception happens once, here
//! (docs/design.md §28).

use chainwarden_core::containment::ContainmentError;
use chainwarden_core::dag::DagError;
use chainwarden_core::recorder::RecorderError;
use pyo3::types::{PyAnyMethods, PyString};
use pyo3::{PyErr, Python};

use crate::exceptions::{invalid_argument, invalid_state, not_found};

pub enum Error {
    Py(PyErr),
    Recorder(RecorderError),
    Containment(ContainmentError),
    Dag(DagError),
}

pub type Result<T> = std::result::Result<T, Error>;

impl From<PyErr> for Error {
    fn from(e: PyErr) -> Self {
        Error::Py(e)
    }
}

impl From<std::convert::Infallible> for Error {
    fn from(e: std::convert::Infallible) -> Self {
        match e {}
    }
}

impl From<pyo3::CastError<'_, '_>> for Error {
    fn from(e: pyo3::CastError<'_, '_>) -> Self {
        Error::Py(e.into())
    }
}

impl From<RecorderError> for Error {
    fn from(e: RecorderError) -> Self {
        Error::Recorder(e)
    }
}

impl From<ContainmentError> for Error {
    fn from(e: ContainmentError) -> Self {
        Error::Containment(e)
    }
}

impl From<DagError> for Error {
    fn from(e: DagError) -> Self {
        Error::Dag(e)
    }
}

impl From<Error> for PyErr {
    fn from(e: Error) -> Self {
        match e {
            Error::Py(e) => e,
            Error::Recorder(e) => Python::attach(|py| recorder(py, e)),
            Error::Containment(e) => Python::attach(|py| containment(py, e)),
            Error::Dag(e) => Python::attach(|py| crate::dag::errors::to_py(py, e)),
        }
    }
}

/// Python's `repr()` of an id, so messages read exactly like the reference's `{id!r}`.
fn py_repr(id: &str) -> String {
    Python::attach(|py| {
        PyString::new(py, id)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| format!("'{id}'"))
    })
}

/// The recorder keeps the built-in exception types the reference raises (docs/recorder.md), as the
/// second base of the package's own (docs/errors.md): `NotFound` is a `KeyError`, `InvalidState` a
/// `RuntimeError`, `InvalidArgument` a `ValueError`.
fn recorder(py: Python<'_>, e: RecorderError) -> PyErr {
    let code = e.code();
    let err = match e {
        RecorderError::NodeNotFound(id) => {
            not_found(py, format!("Node not found: {}", py_repr(&id)))
        }
        RecorderError::ParentNotFound(id) => {
            not_found(py, format!("Parent node not found: {}", py_repr(&id)))
        }
        RecorderError::RootExists(_) => invalid_state(py, e.to_string()),
        RecorderError::InvalidNumber { field, .. }
        | RecorderError::InvalidArgument { field, .. } => {
            invalid_argument(py, Some(field), e.to_string())
        }
        RecorderError::InvalidMetadata(_) => invalid_argument(py, Some("metadata"), e.to_string()),
        RecorderError::InvalidSnapshot(_) => invalid_argument(py, Some("snapshot"), e.to_string()),
        // A batch's row raises what the same call alone would, its message naming the row.
        RecorderError::Row { index, error } => {
            let message = RecorderError::Row {
                index,
                error: error.clone(),
            }
            .to_string();
            match *error {
                RecorderError::ParentNotFound(_) | RecorderError::NodeNotFound(_) => {
                    not_found(py, message)
                }
                inner => {
                    let alone = recorder(py, inner);
                    let err = PyErr::from_type(alone.get_type(py), message);
                    // The argument the single call would name, as the row's field (`rows[3].cost_usd`).
                    if let Ok(arg) = alone.value(py).getattr("argument") {
                        if let Ok(arg) = arg.extract::<String>() {
                            let _ = err
                                .value(py)
                                .setattr("argument", format!("rows[{index}].{arg}"));
                        }
                    }
                    err
                }
            }
        }
    };
    with_code(py, err, code)
}

/// Containment raises what the recorder would: `NotFound` (a `KeyError`) for a call that is not open,
/// `InvalidArgument` (a `ValueError`) for a bad number (docs/containment.md).
fn containment(py: Python<'_>, e: ContainmentError) -> PyErr {
    let code = e.code();
    let err = match e {
        ContainmentError::NotOpen(id) => not_found(py, format!("Node not found: {}", py_repr(&id))),
        ContainmentError::InvalidNumber { field, .. } => {
            invalid_argument(py, Some(field), e.to_string())
        }
        ContainmentError::Graph(e) => return recorder(py, e),
    };
    with_code(py, err, code)
}

/// The error carrying its registry code (`err.code`), as every `DagError` does (docs/design.md §28).
fn with_code(py: Python<'_>, err: PyErr, code: &str) -> PyErr {
    match err.value(py).setattr("code", code) {
        Ok(()) => err,
        Err(e) => e,
    }
}
