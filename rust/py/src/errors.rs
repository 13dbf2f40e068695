//! The bindings' one error type: a core error of any engine, or an error Python already raised. Every binding
//! returns `Result<T>` and uses `?`; the conversion to a Python exception happens once, here
//! (docs/design.md §28).

use chainwarden_core::containment::ContainmentError;
use chainwarden_core::dag::DagError;
use chainwarden_core::recorder::RecorderError;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::types::{PyAnyMethods, PyString};
use pyo3::{PyErr, Python};

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
            Error::Recorder(e) => recorder(e),
            Error::Containment(e) => containment(e),
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

/// The recorder keeps the built-in exception types the reference raises (docs/recorder.md).
fn recorder(e: RecorderError) -> PyErr {
    match e {
        RecorderError::NodeNotFound(id) => {
            PyKeyError::new_err(format!("Node not found: {}", py_repr(&id)))
        }
        RecorderError::ParentNotFound(id) => {
            PyKeyError::new_err(format!("Parent node not found: {}", py_repr(&id)))
        }
        RecorderError::RootExists(_) => PyRuntimeError::new_err(e.to_string()),
        RecorderError::InvalidNumber { .. }
        | RecorderError::InvalidMetadata(_)
        | RecorderError::InvalidSnapshot(_)
        | RecorderError::InvalidArgument { .. } => PyValueError::new_err(e.to_string()),
        // A batch's row raises what the same call alone would, its message naming the row.
        RecorderError::Row { index, error } => match *error {
            RecorderError::ParentNotFound(id) | RecorderError::NodeNotFound(id) => {
                PyKeyError::new_err(format!(
                    "rows[{index}].parent: Parent node not found: {}",
                    py_repr(&id)
                ))
            }
            inner => {
                let message = RecorderError::Row {
                    index,
                    error: Box::new(inner.clone()),
                }
                .to_string();
                let err = recorder(inner);
                Python::attach(|py| {
                    let ty = err.get_type(py);
                    PyErr::from_type(ty, message)
                })
            }
        },
    }
}

/// Containment raises what the recorder would: `KeyError` for a call that is not open, `ValueError` for a
/// bad number (docs/containment.md).
fn containment(e: ContainmentError) -> PyErr {
    match e {
        ContainmentError::NotOpen(id) => {
            PyKeyError::new_err(format!("Node not found: {}", py_repr(&id)))
        }
        ContainmentError::InvalidNumber { .. } => PyValueError::new_err(e.to_string()),
        ContainmentError::Graph(e) => recorder(e),
    }
}
