//! Core errors to the Python exception types the reference API raises.

use chainwarden_core::recorder::RecorderError;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::types::{PyAnyMethods, PyString};
use pyo3::{PyErr, Python};

/// Python's `repr()` of an id, so messages read exactly like the reference's `{id!r}`.
fn py_repr(id: &str) -> String {
    Python::attach(|py| {
        PyString::new(py, id)
            .repr()
            .map(|r| r.to_string())
            .unwrap_or_else(|_| format!("'{id}'"))
    })
}

pub fn recorder_err(e: RecorderError) -> PyErr {
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
        | RecorderError::InvalidSnapshot(_) => PyValueError::new_err(e.to_string()),
    }
}
