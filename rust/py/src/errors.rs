//! Core errors to the Python exception types the reference API raises.

use chainwarden_core::recorder::RecorderError;
use pyo3::exceptions::{PyKeyError, PyRuntimeError, PyValueError};
use pyo3::PyErr;

pub fn recorder_err(e: RecorderError) -> PyErr {
    let msg = e.to_string();
    match e {
        RecorderError::NodeNotFound(_) | RecorderError::ParentNotFound(_) => {
            PyKeyError::new_err(msg)
        }
        RecorderError::RootExists(_) => PyRuntimeError::new_err(msg),
        RecorderError::InvalidNumber { .. } => PyValueError::new_err(msg),
    }
}
