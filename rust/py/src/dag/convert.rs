//! The DAG's arguments: payloads through the bindings' one converter under the DAG's [`Rules`], and
//! the text / count arguments. Only JSON-shaped data is accepted, so the graph never holds a Python object.

use chainwarden_core::dag::Value;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::{PyBool, PyInt, PyString};

use super::errors::invalid_arg;
use crate::convert::{self, Rules};
pub use crate::convert::{to_py, to_py_list};

/// The DAG's payloads (docs/design.md §23): finite floats only, tuples become arrays so every payload
/// survives `to_json`/`from_json` unchanged, and every refusal is a `DagInvalidArgumentError`.
pub const DAG: Rules = Rules {
    finite_only: true,
    keep_tuples: false,
    type_error: |py, what, msg| invalid_arg(py, what, msg),
    value_error: |py, what, msg| invalid_arg(py, what, msg),
};

pub fn utf8(s: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    convert::utf8(s, what, &DAG)
}

pub fn to_value(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert::to_value(obj, what, &DAG)
}

pub fn optional_value(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Value>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => to_value(o, what).map(Some),
    }
}

/// A dict argument, or None.
pub fn optional_dict(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Value>> {
    match optional_value(obj, what)? {
        Some(v @ Value::Object(_)) | Some(v @ Value::Null) => {
            Ok(Some(v).filter(|v| *v != Value::Null))
        }
        Some(_) => Err(invalid_arg(
            obj.expect("present").py(),
            what,
            format!("{what} must be a dict"),
        )),
        None => Ok(None),
    }
}

pub fn text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => utf8(s, what),
        Err(_) => Err(invalid_arg(
            obj.py(),
            what,
            format!("{what} must be a string"),
        )),
    }
}

/// As [`text`], borrowed from the `str` object (UTF-8 of an ASCII `str` is its own buffer): the build calls
/// take three or four ids and names each, and copying each into a `String` was an allocation apiece.
pub fn text_backed(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<PyBackedStr> {
    match obj.cast::<PyString>() {
        // Fails only on a lone surrogate: the same error as `text`.
        Ok(s) => PyBackedStr::try_from(s.clone()).or_else(|_| {
            utf8(s, what).and_then(|_| {
                Err(invalid_arg(
                    obj.py(),
                    what,
                    format!("{what} is not valid Unicode"),
                ))
            })
        }),
        Err(_) => Err(invalid_arg(
            obj.py(),
            what,
            format!("{what} must be a string"),
        )),
    }
}

/// A non-negative int that is not a bool (True is an int in Python, but never a count).
pub fn count(obj: &Bound<'_, PyAny>, what: &str, min: usize) -> PyResult<usize> {
    if obj.cast::<PyBool>().is_err() && obj.cast::<PyInt>().is_ok() {
        if let Ok(v) = obj.extract::<i64>() {
            if v >= min as i64 {
                return Ok(v as usize);
            }
        }
    }
    Err(invalid_arg(
        obj.py(),
        what,
        format!("{what} must be an int >= {min}"),
    ))
}
