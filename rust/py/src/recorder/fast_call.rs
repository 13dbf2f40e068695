//! `ExecutionGraph.record_call`'s entry point (docs/recorder.md "Recording finished calls"). A call
//! as code writes it — `parent`, `kind` and `name` by position, keywords spelled in the source, and
//! values of the plain types (`str`, `float`, `int`, `None`, `dict`) — is read straight from
//! CPython's vectorcall arguments. Every other call (a keyword built at run time, a `str` or `int`
//! subclass, a wrong type, a missing argument) goes to the general entry PyO3 generates from
//! `record_call`'s signature, which converts what it can and raises the typed error naming the
//! argument. Both end in [`ExecutionGraph::record`], so they record the same node; the fast one
//! only skips the general keyword matching and conversion, most of a call's cost.

use std::ptr;

use chainwarden_core::ids::{parse_id, NodeId};
use chainwarden_core::recorder::{FinishedCall, Kind, Status};
use parking_lot::Mutex;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyString;

use super::args::{field_names, interned_kind, FIELDS};
use super::graph::ExecutionGraph;
use crate::fast_entry::{fast_method, opt_text, required_text, text, FastEntry};

static ENTRY: FastEntry = FastEntry::new();

/// Puts the fast entry in place of PyO3's `record_call` on the class, which keeps the general
/// one (and its documentation and text signature) to fall back on.
pub fn install(py: Python<'_>) -> PyResult<()> {
    field_names(py);
    ENTRY.install(
        py,
        &py.get_type::<ExecutionGraph>(),
        c"record_call",
        record_call,
    )
}

/// Each argument's value (null when absent), by its position in [`FIELDS`].
type Slots = [*mut ffi::PyObject; FIELDS.len()];

fast_method!(record_call, ENTRY, fast);

/// An exact `int` within 64 bits.
unsafe fn int(o: *mut ffi::PyObject) -> Option<i64> {
    unsafe {
        if ffi::PyLong_CheckExact(o) == 0 {
            return None;
        }
        let mut overflow = 0;
        let v = ffi::PyLong_AsLongLongAndOverflow(o, &mut overflow);
        // -1 with an error set cannot happen for an exact int.
        (overflow == 0).then_some(v)
    }
}

/// An optional int argument, as [`opt_text`].
unsafe fn opt_int(o: *mut ffi::PyObject) -> Option<Option<i64>> {
    if o.is_null() || o == unsafe { ffi::Py_None() } {
        return Some(None);
    }
    unsafe { int(o) }.map(Some)
}

/// An exact `float`, or an exact `int` within 64 bits.
unsafe fn number(o: *mut ffi::PyObject) -> Option<f64> {
    unsafe {
        if ffi::PyFloat_CheckExact(o) != 0 {
            return Some(ffi::PyFloat_AS_DOUBLE(o));
        }
        int(o).map(|v| v as f64)
    }
}

/// Records the call if every argument is of a plain type (`Ok(None)` otherwise).
unsafe fn fast<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> PyResult<Option<Bound<'py, PyString>>> {
    let names = field_names(py);
    // SAFETY: CPython passes `nargs` positional arguments then one value per name in `kwnames`,
    // all borrowed for the duration of the call.
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize);
        if nargs > 3 {
            return Ok(None);
        }
        let mut slots: Slots = [ptr::null_mut(); FIELDS.len()];
        slots[..nargs as usize].copy_from_slice(std::slice::from_raw_parts(args, nargs as usize));
        if !kwnames.is_null() {
            // Keywords are usually written in the signature's order: each search starts after
            // the last match.
            let mut next = nargs as usize;
            for i in 0..ffi::PyTuple_GET_SIZE(kwnames) {
                let key = ffi::PyTuple_GET_ITEM(kwnames, i);
                let Some(at) = (next..names.len())
                    .chain(0..next)
                    .find(|&j| names[j].as_ptr() == key)
                else {
                    return Ok(None);
                };
                next = at + 1;
                if !slots[at].is_null() {
                    // Given twice (by position and keyword).
                    return Ok(None);
                }
                slots[at] = *args.offset(nargs + i);
            }
        }
        // CPython's method descriptor checked that `self` is an `ExecutionGraph` (or a subclass).
        let graph = Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<ExecutionGraph>();
        let [parent, kind, name, cost_usd, tokens_in, tokens_out, model, status, started_at, ended_at, metadata, error_class, stop_reason] =
            slots;
        let Some(name) = required_text(name) else {
            return Ok(None);
        };
        if parent.is_null() || ffi::PyUnicode_CheckExact(parent) == 0 {
            return Ok(None);
        }
        if kind.is_null() {
            return Ok(None);
        }
        let Some(kind) =
            interned_kind(py, kind).or_else(|| text(kind).and_then(|k| Kind::parse(k).ok()))
        else {
            return Ok(None);
        };
        let (Some(cost_usd), Some(tokens_in), Some(tokens_out)) = (
            required_number(cost_usd),
            opt_int(tokens_in),
            opt_int(tokens_out),
        ) else {
            return Ok(None);
        };
        let status = if status.is_null() {
            Some(Status::Success)
        } else {
            text(status).and_then(|s| Status::parse(s).ok())
        };
        let (Some(status), Some(started_at), Some(ended_at)) =
            (status, opt_int(started_at), opt_int(ended_at))
        else {
            return Ok(None);
        };
        let (Some(model), Some(error_class), Some(stop_reason)) = (
            opt_text(model),
            opt_text(error_class),
            opt_text(stop_reason),
        ) else {
            return Ok(None);
        };
        // A parent this graph could not have made: the general entry says it is not found.
        let Some(parent) = parent_id(parent) else {
            return Ok(None);
        };
        // Converted last, as the general entry does: its errors are the same.
        let metadata = if metadata.is_null() {
            None
        } else {
            crate::convert::metadata(Some(&Bound::from_borrowed_ptr(py, metadata)))?
        };
        let mut call = FinishedCall {
            parent,
            kind,
            name,
            model,
            status,
            cost_usd,
            tokens_in,
            tokens_out,
            started_ms: started_at,
            ended_ms: ended_at,
            error_class,
            stop_reason,
            metadata,
        };
        Ok(Some(
            graph.get().record(py, &mut call).map_err(PyErr::from)?,
        ))
    }
}

/// The last parent read and its id (null: none yet). Calls recorded in a loop pass the same
/// parent `str` object each time; the one held here keeps a reference, so while it is held its
/// address stands for its text (a `str` never changes), and the text is neither read nor parsed.
struct LastParent {
    text: *mut ffi::PyObject,
    id: NodeId,
}

// SAFETY: the pointer is only read or replaced under the mutex, attached to the interpreter.
unsafe impl Send for LastParent {}

static LAST_PARENT: Mutex<LastParent> = Mutex::new(LastParent {
    text: ptr::null_mut(),
    id: 0,
});

/// The id an exact `str` parent names (`None`: not a well-formed id, or not valid UTF-8).
///
/// # Safety
/// `o` is a live exact `str`, borrowed; the thread is attached.
unsafe fn parent_id(o: *mut ffi::PyObject) -> Option<NodeId> {
    unsafe {
        // Another thread reading its own parent: read this one without the cache.
        let Some(mut last) = LAST_PARENT.try_lock() else {
            return text(o).and_then(parse_id);
        };
        if last.text == o {
            return Some(last.id);
        }
        let id = text(o).and_then(parse_id)?;
        ffi::Py_INCREF(o);
        let old = std::mem::replace(&mut *last, LastParent { text: o, id });
        drop(last);
        // Released after the lock: freeing a `str` runs no Python code, but nothing is held.
        if !old.text.is_null() {
            ffi::Py_DECREF(old.text);
        }
        Some(id)
    }
}

/// `cost_usd` is required: a missing one goes to the general entry, which says so.
unsafe fn required_number(o: *mut ffi::PyObject) -> Option<f64> {
    if o.is_null() {
        return None;
    }
    unsafe { number(o) }
}
