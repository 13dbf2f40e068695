//! The bindings' one Python <-> [`Value`] converter (both engines, one [`Rules`] each) and strict
//! number extraction.

use chainwarden_core::value::{Key, Value};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

use crate::exceptions::{invalid_argument, invalid_argument_type};

/// A Python str for `s`. ASCII text (ids, labels) is copied straight into a compact
/// string, skipping CPython's UTF-8 decoder, which dominates when tens of thousands of
/// ids are returned at once.
pub fn py_str<'py>(py: Python<'py>, s: &str) -> Bound<'py, PyString> {
    // A UUID (what nearly every id is) as a fixed-size block: no length-driven scan or copy call,
    // once for each node and edge a build creates (docs/dag.md "Ids and indexes").
    if let Ok(uuid) = <&[u8; UUID_LEN]>::try_from(s.as_bytes()) {
        if uuid.is_ascii() {
            return ascii_str(py, uuid);
        }
    }
    if !s.is_ascii() {
        return PyString::new(py, s);
    }
    py_ascii(py, s.as_bytes())
}

const UUID_LEN: usize = 36;

/// A Python str for ASCII `bytes` (a node id as the core formats it, `ids::format_id_bytes`).
pub fn py_ascii<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
    ascii_str(py, bytes)
}

/// [`py_ascii`], inlined where the length is a constant so the copy is a few fixed moves.
#[inline(always)]
fn ascii_str<'py>(py: Python<'py>, bytes: &[u8]) -> Bound<'py, PyString> {
    debug_assert!(bytes.is_ascii());
    // SAFETY: PyUnicode_New(len, 127) returns a compact ASCII string with room for exactly
    // `len` one-byte code points, which are filled before the object is shared.
    unsafe {
        let ptr = pyo3::ffi::PyUnicode_New(bytes.len() as pyo3::ffi::Py_ssize_t, 127);
        if ptr.is_null() {
            // Memory exhaustion: the regular constructor reports it.
            return PyString::new(py, std::str::from_utf8(bytes).unwrap_or_default());
        }
        std::ptr::copy_nonoverlapping(
            bytes.as_ptr(),
            pyo3::ffi::PyUnicode_1BYTE_DATA(ptr),
            bytes.len(),
        );
        Bound::from_owned_ptr(py, ptr).cast_into_unchecked()
    }
}

/// A float argument; ints are accepted, bools and everything else are a TypeError.
pub fn number(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<f64> {
    if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(f.value());
    }
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(invalid_argument_type(
            obj.py(),
            Some(field),
            format!(
                "{field} must be a number (int or float), not {}",
                obj.get_type().name()?
            ),
        ));
    }
    // An int beyond the float range is the caller's bad value, named as such.
    obj.extract::<f64>().map_err(|_| {
        invalid_argument(
            obj.py(),
            Some(field),
            format!("{field} is out of range: an int beyond the float range"),
        )
    })
}

/// An optional int argument; bools and floats are a TypeError, values beyond i64 a ValueError.
pub fn opt_int(obj: Option<&Bound<'_, PyAny>>, field: &str) -> PyResult<Option<i64>> {
    match obj.filter(|o| !o.is_none()) {
        Some(obj) => int(obj, field).map(Some),
        None => Ok(None),
    }
}

/// An int argument that is not a `bool`, within 64 bits (`None` is the caller's to allow).
pub fn int(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<i64> {
    if obj.is_instance_of::<PyBool>() || !obj.is_instance_of::<PyInt>() {
        return Err(invalid_argument_type(
            obj.py(),
            Some(field),
            format!("{field} must be an int or None, not {}", type_name(obj)),
        ));
    }
    obj.extract::<i64>().map_err(|_| {
        invalid_argument(
            obj.py(),
            Some(field),
            format!("{field} is out of range: {obj}"),
        )
    })
}

/// A `str` argument, or the TypeError naming it.
pub fn str_arg<'a, 'py>(
    obj: &'a Bound<'py, PyAny>,
    field: &str,
) -> PyResult<&'a Bound<'py, PyString>> {
    obj.cast::<PyString>().map_err(|_| {
        invalid_argument_type(
            obj.py(),
            Some(field),
            format!("{field} must be a str, not {}", type_name(obj)),
        )
    })
}

/// How strict one engine's conversion is (docs/design.md §23). One converter serves both engines; what
/// differs between them is data, so the two can never drift apart in code.
pub struct Rules {
    /// NaN and infinities are refused here (the DAG), or let through for the engine to name their
    /// path afterwards (the call graph: `Value::non_finite_path`).
    pub finite_only: bool,
    /// Tuples come back as tuples (call-graph metadata is returned as given) or become arrays (DAG
    /// payloads survive a JSON round trip unchanged).
    pub keep_tuples: bool,
    /// The exception for a value of the wrong type, given the argument's name and the message.
    pub type_error: fn(Python<'_>, &str, String) -> PyErr,
    /// The exception for a value of the right type but a bad value (range, depth, encoding), given the
    /// argument's name and the message.
    pub value_error: fn(Python<'_>, &str, String) -> PyErr,
}

/// The call graph's metadata: built-in `TypeError` / `ValueError` like the reference; tuples kept.
pub const RECORDER: Rules = Rules {
    finite_only: false,
    keep_tuples: true,
    type_error: |py, what, msg| invalid_argument_type(py, Some(what), msg),
    value_error: |py, what, msg| invalid_argument(py, Some(what), msg),
};

/// Deep enough for any real payload, shallow enough to stop a self-referencing dict.
pub const MAX_DEPTH: usize = 256;

/// Copies caller metadata into Rust. `None` and `{}` both mean "no metadata".
pub fn metadata(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Value>> {
    match obj {
        None => Ok(None),
        Some(o) => named_metadata(o, "metadata"),
    }
}

/// As [`metadata`], for an argument called `what` (a row's `rows[3].metadata`).
pub fn named_metadata(o: &Bound<'_, PyAny>, what: &str) -> PyResult<Option<Value>> {
    if o.is_none() {
        return Ok(None);
    }
    let dict = o.cast::<PyDict>().map_err(|_| {
        invalid_argument_type(
            o.py(),
            Some(what),
            format!("{what} must be a dict or None, not {}", type_name(o)),
        )
    })?;
    if dict.is_empty() {
        return Ok(None);
    }
    to_value(dict.as_any(), what, &RECORDER).map(Some)
}

/// Lone surrogates cannot be stored as UTF-8: bad input under `rules`, not an encoding crash.
pub fn utf8(s: &Bound<'_, PyString>, what: &str, rules: &Rules) -> PyResult<String> {
    utf8_str(s, what, rules).map(str::to_owned)
}

/// As [`utf8`], borrowed (a dict key becomes an inline `Key` without a `String` in between).
fn utf8_str<'a>(s: &'a Bound<'_, PyString>, what: &str, rules: &Rules) -> PyResult<&'a str> {
    s.to_str().map_err(|_| {
        (rules.value_error)(
            s.py(),
            what,
            format!("{what} is not valid Unicode (lone surrogate)"),
        )
    })
}

/// A JSON-shaped Python object as a [`Value`], checked against `rules`; `what` names the argument.
pub fn to_value(obj: &Bound<'_, PyAny>, what: &str, rules: &Rules) -> PyResult<Value> {
    convert(obj, what, rules, 0)
}

fn convert(obj: &Bound<'_, PyAny>, what: &str, rules: &Rules, depth: usize) -> PyResult<Value> {
    let py = obj.py();
    if depth > MAX_DEPTH {
        return Err((rules.value_error)(
            py,
            what,
            format!("{what} is nested too deeply (or refers to itself)"),
        ));
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(utf8(s, what, rules)?));
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        return obj.extract::<i64>().map(Value::Int).map_err(|_| {
            (rules.value_error)(py, what, format!("{what}: integer out of the 64-bit range"))
        });
    }
    if let Ok(f) = obj.cast::<PyFloat>() {
        let v = f.value();
        if rules.finite_only && !v.is_finite() {
            return Err((rules.value_error)(
                py,
                what,
                format!("{what}: NaN and infinities are not JSON"),
            ));
        }
        return Ok(Value::Float(v));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut entries = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err((rules.type_error)(
                    py,
                    what,
                    format!("{what}: dict keys must be str, not {}", type_name(&k)),
                ));
            };
            entries.push((
                utf8_str(key, what, rules)?.into(),
                convert(&v, what, rules, depth + 1)?,
            ));
        }
        return Ok(Value::Object(entries));
    }
    if let Ok(l) = obj.cast::<PyList>() {
        return l
            .iter()
            .map(|v| convert(&v, what, rules, depth + 1))
            .collect::<PyResult<_>>()
            .map(Value::Array);
    }
    if let Ok(t) = obj.cast::<PyTuple>() {
        let items = t
            .iter()
            .map(|v| convert(&v, what, rules, depth + 1))
            .collect::<PyResult<_>>()?;
        return Ok(if rules.keep_tuples {
            Value::Tuple(items)
        } else {
            Value::Array(items)
        });
    }
    Err((rules.type_error)(
        py,
        what,
        format!(
            "{what}: {} is not JSON data (dict, list, tuple, str, int, float, bool, None)",
            type_name(obj)
        ),
    ))
}

pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
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
        Value::Array(items) => to_py_list(py, items)?.into_any(),
        Value::Tuple(items) => PyTuple::new(py, items_to_py(py, items)?)?.into_any(),
        Value::Object(entries) => dict_to_py(py, entries)?.into_any(),
    })
}

fn items_to_py<'py>(py: Python<'py>, items: &[Value]) -> PyResult<Vec<Bound<'py, PyAny>>> {
    items.iter().map(|v| to_py(py, v)).collect()
}

pub fn to_py_list<'py>(py: Python<'py>, items: &[Value]) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, items_to_py(py, items)?)
}

pub fn dict_to_py<'py>(py: Python<'py>, entries: &[(Key, Value)]) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in entries {
        d.set_item(PyString::new(py, k), to_py(py, v)?)?;
    }
    Ok(d)
}

/// Metadata as the snapshot shows it: always a (fresh) dict.
pub fn metadata_to_py<'py>(py: Python<'py>, value: Option<&Value>) -> PyResult<Bound<'py, PyDict>> {
    match value {
        Some(Value::Object(entries)) => dict_to_py(py, entries),
        _ => Ok(PyDict::new(py)),
    }
}
