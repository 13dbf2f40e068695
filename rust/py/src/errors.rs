//! The bindings' one error type: a core error of any engine, or an error Python already raised. Every binding
//! returns `Result<T>` and uses `?`; the conversion to a Python exception happens once, here
//! (docs/design.md §28).

use chainwarden_core::codes::Code;
use chainwarden_core::containment::ContainmentError;
use chainwarden_core::dag::DagError;
use chainwarden_core::recorder::RecorderError;
use pyo3::types::{PyAnyMethods, PyString};
use pyo3::{PyErr, Python};

use crate::exceptions;

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
            Error::Recorder(e) => Python::attach(|py| recorder(py, &e)),
            Error::Containment(e) => Python::attach(|py| containment(py, &e)),
            Error::Dag(e) => Python::attach(|py| crate::dag::errors::to_py(py, e)),
        }
    }
}

/// Python's `repr()` of an id, so messages read exactly like the reference's `{id!r}`.
fn py_repr(py: Python<'_>, id: &str) -> String {
    PyString::new(py, id)
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| format!("'{id}'"))
}

/// The exception of registry row `code`: the class the row names (docs/errors.md), carrying the code
/// (`err.code`) and, for a bad argument, its name (`err.argument`). Every engine error is raised here.
pub fn raise(py: Python<'_>, code: Code, message: String, argument: Option<&str>) -> PyErr {
    let built = exceptions::class_of(py, code.class())
        .call1((message,))
        .and_then(|inst| {
            inst.setattr("code", code.as_str())?;
            if let Some(argument) = argument {
                inst.setattr("argument", argument)?;
            }
            Ok(inst)
        });
    match built {
        Ok(inst) => PyErr::from_value(inst),
        Err(e) => e,
    }
}

/// The argument a recorder error names, if it names one.
fn argument(e: &RecorderError) -> Option<&'static str> {
    match e {
        RecorderError::InvalidNumber { field, .. }
        | RecorderError::InvalidArgument { field, .. } => Some(field),
        RecorderError::InvalidMetadata(_) => Some("metadata"),
        RecorderError::InvalidSnapshot(_) => Some("snapshot"),
        _ => None,
    }
}

/// The recorder's messages read like the reference's (docs/recorder.md); a batch's row raises what the same
/// call alone would, its message and argument naming the row (`rows[3].cost_usd`).
fn recorder(py: Python<'_>, e: &RecorderError) -> PyErr {
    let message = match e {
        RecorderError::NodeNotFound(id) => format!("Node not found: {}", py_repr(py, id)),
        RecorderError::ParentNotFound(id) => format!("Parent node not found: {}", py_repr(py, id)),
        _ => e.to_string(),
    };
    let argument = match e {
        RecorderError::Row { index, error } => {
            argument(error).map(|a| format!("rows[{index}].{a}"))
        }
        _ => argument(e).map(str::to_owned),
    };
    raise(py, e.code().into(), message, argument.as_deref())
}

/// Containment raises what the recorder would (docs/containment.md).
fn containment(py: Python<'_>, e: &ContainmentError) -> PyErr {
    match e {
        ContainmentError::NotOpen(id) => raise(
            py,
            e.code(),
            format!("Node not found: {}", py_repr(py, id)),
            None,
        ),
        ContainmentError::InvalidNumber { field, .. } => {
            raise(py, e.code(), e.to_string(), Some(field))
        }
        ContainmentError::Graph(e) => recorder(py, e),
    }
}
