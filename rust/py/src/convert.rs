//! Argument conversion shared by the bindings: strict number extraction and metadata trees.

use chainwarden_core::value::Value;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// A Python str for `s`. ASCII text (ids, labels) is copied straight into a compact
/// string, skipping CPython's UTF-8 decoder, which dominates when tens of thousands of
/// ids are returned at once.
pub fn py_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    if !s.is_ascii() {
        return PyString::new(py, s);
    }
    // SAFETY: PyUnicode_New(len, 127) returns a compact ASCII string with room for exactly
    // `len` one-byte code points, which are filled before the object is shared.
    unsafe {
        let ptr = pyo3::ffi::PyUnicode_New(s.len() as pyo3::ffi::Py_ssize_t, 127);
        if ptr.is_null() {
            // Memory exhaustion: the regular constructor reports it.
            return PyString::new(py, s);
        }
        std::ptr::copy_nonoverlapping(s.as_ptr(), pyo3::ffi::PyUnicode_1BYTE_DATA(ptr), s.len());
        Bound::from_owned_ptr(py, ptr).cast_into_unchecked()
    }
}

/// Deep enough for any real metadata, shallow enough to stop a self-referencing dict.
const MAX_DEPTH: usize = 200;

/// A float argument; ints are accepted, bools and everything else are a TypeError.
pub fn number(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<f64> {
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(f.value());
    }
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{field} must be a number (int or float), not {}",
            obj.get_type().name()?
        )));
    }
    // An int too large for a float is a bad value, not an arithmetic fault.
    obj.extract::<f64>()
        .map_err(|_| PyValueError::new_err(format!("{field} is out of range: {obj}")))
}

/// An optional int argument; bools and floats are a TypeError, values beyond i64 a ValueError.
pub fn opt_int(obj: Option<&Bound<'_, PyAny>>, field: &str) -> PyResult<Option<i64>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(PyTypeError::new_err(format!(
            "{field} must be an int or None, not {}",
            obj.get_type().name()?
        )));
    }
    obj.extract::<i64>()
        .map(Some)
        .map_err(|_| PyValueError::new_err(format!("{field} is out of range: {obj}")))
}

/// Copies caller metadata into Rust. `None` and `{}` both mean "no metadata".
pub fn metadata(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => {
            let dict = o.cast::<PyDict>().map_err(|_| {
                PyTypeError::new_err(format!(
                    "metadata must be a dict or None, not {}",
                    o.get_type()
                        .name()
                        .map(|n| n.to_string())
                        .unwrap_or_default()
                ))
            })?;
            if dict.is_empty() {
                return Ok(None);
            }
            to_value(dict.as_any(), 0).map(Some)
        }
    }
}

fn to_value(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > MAX_DEPTH {
        return Err(PyValueError::new_err(
            "metadata is nested too deeply (or refers to itself)",
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(s.to_str()?.into()));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().map(Value::Int).map_err(|_| {
            PyValueError::new_err(format!("metadata integer does not fit in 64 bits: {obj}"))
        });
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut entries = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let key = k.cast::<PyString>().map_err(|_| {
                PyTypeError::new_err(format!("metadata keys must be str, not {}", type_name(&k)))
            })?;
            entries.push((key.to_str()?.into(), to_value(&v, depth + 1)?));
        }
        return Ok(Value::Dict(entries));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|v| to_value(&v, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::List);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|v| to_value(&v, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Tuple);
    }
    Err(PyTypeError::new_err(format!(
        "metadata values must be JSON-compatible (dict, list, tuple, str, int, float, bool, None), not {}",
        type_name(obj)
    )))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// A fresh Python object tree for `value` (callers may mutate what they get).
pub fn to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::List(items) => PyList::new(py, items_to_py(py, items)?)?.into_any(),
        Value::Tuple(items) => PyTuple::new(py, items_to_py(py, items)?)?.into_any(),
        Value::Dict(entries) => dict_to_py(py, entries)?.into_any(),
    })
}

fn items_to_py<'py>(py: Python<'py>, items: &[Value]) -> PyResult<Vec<Bound<'py, PyAny>>> {
    items.iter().map(|v| to_py(py, v)).collect()
}

pub fn dict_to_py<'py>(
    py: Python<'py>,
    entries: &[(Box<str>, Value)],
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in entries {
        d.set_item(PyString::new(py, k), to_py(py, v)?)?;
    }
    Ok(d)
}

/// Metadata as the snapshot shows it: always a (fresh) dict.
pub fn metadata_to_py<'py>(py: Python<'py>, value: Option<&Value>) -> PyResult<Bound<'py, PyDict>> {
    match value {
        Some(Value::Dict(entries)) => dict_to_py(py, entries),
        _ => Ok(PyDict::new(py)),
    }
}
