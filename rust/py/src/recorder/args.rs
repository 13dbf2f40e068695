//! Typed arguments of `ExecutionGraph.record_call` / `record_calls` (`crate::args`): a wrong type is
//! a `TypeError` and a bad value a `ValueError` naming the argument — a row's field as
//! `rows[3].cost_usd` — the built-in types the recorder raises everywhere (docs/recorder.md "Errors").

use chainwarden_core::ids::{parse_id, NodeId};
use chainwarden_core::recorder::{FinishedCall, Kind, RecorderError, Status};
use chainwarden_core::value::Value;
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyMapping, PyString};

use crate::args::typed_arg;
use crate::convert::{int, named_metadata, number, str_arg, type_name};
use crate::errors;
use crate::exceptions::{invalid_argument, invalid_argument_type};

pub mod name {
    crate::args::arg_names! {
        CostUsd = "cost_usd", EndedAt = "ended_at", Kind = "kind", StartedAt = "started_at",
        Status = "status", TokensIn = "tokens_in", TokensOut = "tokens_out",
    }
}

/// A word of the core's vocabulary `T` (an enum of `chainwarden.vocab` or the plain word), else a
/// `ValueError` naming the argument and every accepted word.
pub(crate) fn word<T>(
    obj: &Bound<'_, PyAny>,
    what: &str,
    parse: fn(&str) -> Result<T, chainwarden_core::vocab::Unknown>,
    expected: &[&str],
) -> PyResult<T> {
    parse(str_arg(obj, what)?.to_str()?).map_err(|u| {
        let expected: Vec<String> = expected.iter().map(|t| format!("'{t}'")).collect();
        invalid_argument(
            obj.py(),
            Some(what),
            format!(
                "{what} must be one of {}; got {:?}",
                expected.join(", "),
                u.got
            ),
        )
    })
}

fn kind(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Kind> {
    word(obj, what, Kind::parse, Kind::TEXTS)
}

/// A recorded call has finished: `created` and `running` are refused by the core, which says why.
fn status(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Status> {
    word(obj, what, Status::parse, Status::TEXTS)
}

fn text(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<PyBackedStr> {
    PyBackedStr::try_from(str_arg(obj, what)?.clone()).map_err(|_| {
        invalid_argument(
            obj.py(),
            Some(what),
            format!("{what} is not valid Unicode (lone surrogate)"),
        )
    })
}

typed_arg! {
    /// A node kind (`llm`, `tool`, ...).
    KindArg(Kind) => |o, w| kind(o, w)
}

typed_arg! {
    /// A status word; the core accepts only the terminal ones here.
    StatusArg(Status) => |o, w| status(o, w)
}

typed_arg! {
    /// An `int` or `float` (not a `bool`).
    Number(f64) => |o, w| number(o, w)
}

typed_arg! {
    /// An `int` (not a `bool`); `None` is taken by `Option<Int<_>>`.
    Int(i64) => |o, w| int(o, w)
}

/// `status`'s default.
pub fn success() -> StatusArg<name::Status> {
    StatusArg(Status::Success, std::marker::PhantomData)
}

/// A parent given as text: an id this graph could not have made is simply not found.
pub fn parent_id(text: &str) -> Result<NodeId, RecorderError> {
    parse_id(text).ok_or_else(|| RecorderError::ParentNotFound(text.to_owned()))
}

/// One row of `record_calls`, converted; its texts are borrowed from the caller's `str`s.
pub struct Row {
    parent: PyBackedStr,
    kind: Kind,
    name: PyBackedStr,
    model: Option<PyBackedStr>,
    pub status: Status,
    pub cost_usd: f64,
    tokens_in: Option<i64>,
    tokens_out: Option<i64>,
    started_at: Option<i64>,
    ended_at: Option<i64>,
    pub error_class: Option<PyBackedStr>,
    stop_reason: Option<PyBackedStr>,
    metadata: Option<Value>,
}

/// `record_call`'s arguments in its signature's order: a row's fields (what an unknown field's
/// error lists) and the fast entry's slots (`super::fast_call`).
pub(super) const FIELDS: [&str; 13] = [
    "parent",
    "kind",
    "name",
    "cost_usd",
    "tokens_in",
    "tokens_out",
    "model",
    "status",
    "started_at",
    "ended_at",
    "metadata",
    "error_class",
    "stop_reason",
];

static FIELD_NAMES: PyOnceLock<[Py<PyString>; FIELDS.len()]> = PyOnceLock::new();

/// [`FIELDS`] as interned strings: a keyword or dict key written in the source is the same object,
/// found by its address.
pub(super) fn field_names(py: Python<'_>) -> &[Py<PyString>; FIELDS.len()] {
    FIELD_NAMES.get_or_init(py, || FIELDS.map(|k| PyString::intern(py, k).unbind()))
}

static KIND_NAMES: PyOnceLock<[Py<PyString>; Kind::ALL.len()]> = PyOnceLock::new();

/// The kind a `str` object names when it is one of [`Kind::TEXTS`] interned (a literal in the
/// source, a dict key): found by its address, without reading its text.
pub(super) fn interned_kind(py: Python<'_>, o: *mut pyo3::ffi::PyObject) -> Option<Kind> {
    let names = KIND_NAMES.get_or_init(py, || {
        Kind::ALL.map(|k| PyString::intern(py, k.as_str()).unbind())
    });
    names
        .iter()
        .position(|n| n.as_ptr() == o)
        .map(|i| Kind::ALL[i])
}

#[derive(Default)]
struct Fields<'py> {
    values: [Option<Bound<'py, PyAny>>; FIELDS.len()],
}

impl<'py> Fields<'py> {
    fn set(
        &mut self,
        at: usize,
        key: &Bound<'py, PyAny>,
        value: Bound<'py, PyAny>,
    ) -> PyResult<()> {
        let names = field_names(key.py());
        if let Some(i) = names.iter().position(|n| n.as_ptr() == key.as_ptr()) {
            self.values[i] = Some(value);
            return Ok(());
        }
        let k = key.cast::<PyString>().map_err(|_| {
            invalid_argument_type(
                key.py(),
                Some("rows"),
                format!("rows[{at}] keys must be str, not {}", type_name(key)),
            )
        })?;
        let k = k.to_str()?;
        match FIELDS.iter().position(|f| *f == k) {
            Some(i) => {
                self.values[i] = Some(value);
                Ok(())
            }
            None => Err(invalid_argument_type(
                key.py(),
                Some("rows"),
                format!(
                    "rows[{at}] has an unknown field {}; the fields are record_call's arguments: {}",
                    key.repr()?,
                    FIELDS.join(", ")
                ),
            )),
        }
    }

    /// A plain `dict` row's fields, each value taken by its key's address when the key is one of
    /// [`FIELDS`] interned (a key written in the source), by [`Fields::set`] otherwise. The
    /// values are taken (new references) under the dict's critical section, then converted.
    fn read_dict(&mut self, at: usize, d: &Bound<'py, PyDict>) -> PyResult<()> {
        let py = d.py();
        let names = field_names(py);
        let mut others = Vec::new();
        pyo3::sync::critical_section::with_critical_section(d, || {
            let (mut pos, mut key, mut value) = (0, std::ptr::null_mut(), std::ptr::null_mut());
            // Keys usually come in the signature's order: each search starts after the last match.
            let mut next = 0;
            // SAFETY: `d` is a dict, held locked (free-threaded) or under the GIL while it is read;
            // the key and value are borrowed from it and taken as new references before the
            // section ends.
            unsafe {
                while pyo3::ffi::PyDict_Next(d.as_ptr(), &mut pos, &mut key, &mut value) != 0 {
                    let value = Bound::from_borrowed_ptr(py, value);
                    match (next..names.len())
                        .chain(0..next)
                        .find(|&j| names[j].as_ptr() == key)
                    {
                        Some(j) => {
                            self.values[j] = Some(value);
                            next = j + 1;
                        }
                        None => others.push((Bound::from_borrowed_ptr(py, key), value)),
                    }
                }
            }
        });
        for (k, v) in others {
            self.set(at, &k, v)?;
        }
        Ok(())
    }

    /// A required field, or an optional one (absent or `None`), converted by `f`.
    /// The message names the field `rows[at].field`, written only on error: a batch converts
    /// thousands of fields that are fine.
    fn get<T>(
        &self,
        at: usize,
        i: usize,
        required: bool,
        f: impl Fn(&Bound<'py, PyAny>, &str) -> PyResult<T>,
    ) -> PyResult<Option<T>> {
        match &self.values[i] {
            Some(v) if required || !v.is_none() => {
                f(v, FIELDS[i]).map(Some).map_err(|e| in_row(v.py(), e, at))
            }
            Some(_) => Ok(None),
            None if required => Err(Python::attach(|py| {
                invalid_argument_type(
                    py,
                    Some("rows"),
                    format!("rows[{at}] is missing the required field '{}'", FIELDS[i]),
                )
            })),
            None => Ok(None),
        }
    }
}

/// `err` (raised for a field) with its message naming the row: `rows[3].cost_usd must be ...`.
fn in_row(py: Python<'_>, err: PyErr, index: usize) -> PyErr {
    let message = err
        .value(py)
        .str()
        .map(|m| m.to_string())
        .unwrap_or_default();
    let row_err = PyErr::from_type(err.get_type(py), format!("rows[{index}].{message}"));
    // The field the error names, as the row's field (`rows[3].cost_usd`).
    if let Ok(arg) = err.value(py).getattr("argument") {
        if let Ok(arg) = arg.extract::<String>() {
            let _ = row_err
                .value(py)
                .setattr("argument", format!("rows[{index}].{arg}"));
        }
    }
    row_err
}

/// The value of a field `Fields::get` was asked for as required (it raised otherwise).
fn required<T>(v: Option<T>) -> T {
    v.expect("a required field is present or an error was raised")
}

impl Row {
    /// Converts `rows[index]`, a mapping of `record_call`'s arguments.
    fn from_py(obj: &Bound<'_, PyAny>, index: usize) -> PyResult<Row> {
        let at = index;
        let mut fields = Fields::default();
        if let Ok(d) = obj.cast_exact::<PyDict>() {
            fields.read_dict(at, d)?;
        } else if let Ok(d) = obj.cast::<PyDict>() {
            for (k, v) in d.iter() {
                fields.set(at, &k, v)?;
            }
        } else if let Ok(m) = obj.cast::<PyMapping>() {
            for item in m.items()?.iter() {
                let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
                fields.set(at, &k, v)?;
            }
        } else {
            return Err(invalid_argument_type(
                obj.py(),
                Some("rows"),
                format!(
                    "rows[{at}] must be a mapping of record_call's arguments (a dict), not {}",
                    type_name(obj)
                ),
            ));
        }
        Ok(Row {
            parent: required(fields.get(at, 0, true, text)?),
            kind: required(fields.get(at, 1, true, |o, w| {
                interned_kind(o.py(), o.as_ptr()).map_or_else(|| kind(o, w), Ok)
            })?),
            name: required(fields.get(at, 2, true, text)?),
            cost_usd: required(fields.get(at, 3, true, number)?),
            tokens_in: fields.get(at, 4, false, int)?,
            tokens_out: fields.get(at, 5, false, int)?,
            model: fields.get(at, 6, false, text)?,
            // Absent means `success`, as `record_call`'s default; `None` is refused there too.
            status: match fields.values[7] {
                Some(_) => required(fields.get(at, 7, true, status)?),
                None => Status::Success,
            },
            started_at: fields.get(at, 8, false, int)?,
            ended_at: fields.get(at, 9, false, int)?,
            metadata: fields.get(at, 10, false, named_metadata)?.flatten(),
            error_class: fields.get(at, 11, false, text)?,
            stop_reason: fields.get(at, 12, false, text)?,
        })
    }

    /// The call for the core; the metadata moves out of the row.
    pub fn call(&mut self, index: usize) -> errors::Result<FinishedCall<'_>> {
        let parent = parent_id(&self.parent).map_err(|e| e.in_row(index))?;
        Ok(FinishedCall {
            parent,
            kind: self.kind,
            name: &self.name,
            model: self.model.as_deref(),
            status: self.status,
            cost_usd: self.cost_usd,
            tokens_in: self.tokens_in,
            tokens_out: self.tokens_out,
            started_ms: self.started_at,
            ended_ms: self.ended_at,
            error_class: self.error_class.as_deref(),
            stop_reason: self.stop_reason.as_deref(),
            metadata: self.metadata.take(),
        })
    }
}

/// `record_calls`'s `rows`: any iterable of mappings but a `str`, `bytes` or a single mapping.
pub fn rows(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Row>> {
    let not_rows = || {
        invalid_argument_type(
            obj.py(),
            Some("rows"),
            format!(
                "rows must be an iterable of mappings (dicts of record_call's arguments), not {}",
                type_name(obj)
            ),
        )
    };
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyDict>()
    {
        return Err(not_rows());
    }
    let iter = obj.try_iter().map_err(|_| not_rows())?;
    let mut out = Vec::with_capacity(obj.len().unwrap_or(0));
    for (i, row) in iter.enumerate() {
        out.push(Row::from_py(&row?, i)?);
    }
    Ok(out)
}
