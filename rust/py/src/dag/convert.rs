//! Python objects <-> payload values. Only JSON-shaped data is accepted, so the graph never holds a
//! Python object and every payload survives the JSON round trip.

use chainwarden_core::dag::{Node, Value};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use super::errors::invalid;

const MAX_DEPTH: usize = 256;

/// Lone surrogates cannot be stored as UTF-8: report them as bad input, not as an encoding crash.
pub fn utf8(s: &Bound<'_, PyString>, what: &str) -> PyResult<String> {
    s.to_str().map(str::to_owned).map_err(|_| {
        invalid(
            s.py(),
            format!("{what} is not valid Unicode (lone surrogate)"),
        )
    })
}

pub fn to_value(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Value> {
    convert(obj, what, 0)
}

fn convert(obj: &Bound<'_, PyAny>, what: &str, depth: usize) -> PyResult<Value> {
    let py = obj.py();
    if depth > MAX_DEPTH {
        return Err(invalid(py, format!("{what} is nested too deeply")));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(utf8(s, what)?));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.cast::<PyInt>().is_ok() {
        return obj
            .extract::<i64>()
            .map(Value::Int)
            .map_err(|_| invalid(py, format!("{what}: integer out of the 64-bit range")));
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        if !v.is_finite() {
            return Err(invalid(
                py,
                format!("{what}: NaN and infinities are not JSON"),
            ));
        }
        return Ok(Value::Float(v));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut map = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(invalid(py, format!("{what}: dict keys must be strings")));
            };
            map.push((utf8(key, what)?, convert(&v, what, depth + 1)?));
        }
        return Ok(Value::Object(map));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|v| convert(&v, what, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        return t
            .iter()
            .map(|v| convert(&v, what, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    let type_name = obj.get_type().name()?.to_string();
    Err(invalid(py, format!("{what}: {type_name} is not JSON data")))
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
        Some(_) => Err(invalid(
            obj.expect("present").py(),
            format!("{what} must be a dict"),
        )),
        None => Ok(None),
    }
}

pub fn text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<String> {
    match obj.cast::<PyString>() {
        Ok(s) => utf8(s, what),
        Err(_) => Err(invalid(obj.py(), format!("{what} must be a string"))),
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
    Err(invalid(obj.py(), format!("{what} must be an int >= {min}")))
}

pub fn to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let d = PyDict::new(py);
            for (k, item) in map {
                d.set_item(k, to_py(py, item)?)?;
            }
            d.into_any()
        }
    })
}

pub fn to_py_list<'py>(py: Python<'py>, items: &[Value]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for item in items {
        list.append(to_py(py, item)?)?;
    }
    Ok(list)
}

/// One context entry, built straight from the node so payloads are not cloned on the way; the shape is the
/// one `Dag::context_entry` defines (docs/dag-rules.md §4.3).
pub fn context_entry<'py>(
    py: Python<'py>,
    node: &Node,
    full: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let payload = PyDict::new(py);
    payload.set_item(intern!(py, "input"), to_py(py, &node.input)?)?;
    payload.set_item(
        intern!(py, "output_preview"),
        to_py(py, &node.output_preview)?,
    )?;
    if full {
        payload.set_item(intern!(py, "output"), to_py(py, &node.output)?)?;
    }
    let entry = PyDict::new(py);
    entry.set_item(intern!(py, "node_id"), &*node.id)?;
    entry.set_item(
        intern!(py, "node_type"),
        PyString::intern(py, node.node_type.as_str()),
    )?;
    entry.set_item(
        intern!(py, "state"),
        PyString::intern(py, node.state.as_str()),
    )?;
    entry.set_item(intern!(py, "payload"), payload)?;
    entry.set_item(intern!(py, "metadata"), to_py(py, &node.metadata)?)?;
    Ok(entry)
}
