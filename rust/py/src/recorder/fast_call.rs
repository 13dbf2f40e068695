//! `ExecutionGraph.record_call`'s entry point (docs/recorder.md "Recording finished calls"). A call
//! as code writes it — `parent`, `kind` and `name` by position, keywords spelled in the source, and
//! values of the plain types (`str`, `float`, `int`, `None`, `dict`) — is read straight from
//! CPython's vectorcall arguments. Every other call (a keyword built at run time, a `str` or `int`
//! subclass, a wrong type, a missing argument) goes to the general entry PyO3 generates from
//! `record_call`'s signature, which converts what it can and raises the typed error naming the
//! argument. Both end in [`ExecutionGraph::record`], so they record the same node; the fast one
//! only skips the general keyword matching and conversion, most of a call's cost.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::OnceLock;

use chainwarden_core::ids::parse_id;
use chainwarden_core::recorder::{FinishedCall, Kind, Status};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use super::args::{field_names, interned_kind, FIELDS};
use super::graph::ExecutionGraph;

/// The general entry, PyO3's method descriptor.
static GENERAL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
/// The method definition of the fast entry (CPython keeps a pointer to it for good).
static DEF: OnceLock<MethodDef> = OnceLock::new();

struct MethodDef(ffi::PyMethodDef);
// SAFETY: the definition is written once, before it is shared, and only read afterwards; its
// pointers are to static C strings.
unsafe impl Send for MethodDef {}
unsafe impl Sync for MethodDef {}

/// Puts the fast entry in place of PyO3's `record_call` on the class, which keeps the general
/// one (and its documentation and text signature) to fall back on.
pub fn install(py: Python<'_>) -> PyResult<()> {
    let ty = py.get_type::<ExecutionGraph>();
    let general = ty.getattr("record_call")?;
    field_names(py);
    // SAFETY: `record_call` is PyO3's method descriptor, whose `d_method` is its static definition.
    let doc = unsafe {
        let descr = general.as_ptr() as *mut ffi::PyMethodDescrObject;
        if ffi::Py_TYPE(general.as_ptr()) != ptr::addr_of_mut!(ffi::PyMethodDescr_Type) {
            return Ok(());
        }
        (*(*descr).d_method).ml_doc
    };
    GENERAL.get_or_init(py, || general.unbind());
    let def = DEF.get_or_init(|| {
        MethodDef(ffi::PyMethodDef {
            ml_name: c"record_call".as_ptr(),
            ml_meth: ffi::PyMethodDefPointer {
                PyCFunctionFastWithKeywords: record_call,
            },
            ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
            ml_doc: doc,
        })
    });
    // SAFETY: the definition lives for the rest of the process; CPython only reads it.
    let fast = unsafe {
        let d = ptr::addr_of!(def.0) as *mut ffi::PyMethodDef;
        Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewMethod(ty.as_type_ptr(), d))?
    };
    ty.setattr("record_call", fast)
}

/// Each argument's value (null when absent), by its position in [`FIELDS`].
type Slots = [*mut ffi::PyObject; FIELDS.len()];

/// The fast entry: CPython's `METH_FASTCALL | METH_KEYWORDS` calling convention.
unsafe extern "C" fn record_call(
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls a method with the thread attached.
    let py = unsafe { Python::assume_attached() };
    let run = AssertUnwindSafe(|| unsafe { fast(py, slf, args, nargsf, kwnames) });
    let out = match catch_unwind(run) {
        Ok(out) => out,
        Err(payload) => Err(pyo3::panic::PanicException::new_err(panic_message(
            &payload,
        ))),
    };
    match out {
        Ok(Some(id)) => id.into_ptr(),
        // SAFETY: the arguments are CPython's, unchanged.
        Ok(None) => unsafe { general(py, slf, args, nargsf, kwnames) },
        Err(e) => {
            e.restore(py);
            ptr::null_mut()
        }
    }
}

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic in record_call".into())
}

/// The call through PyO3's entry, `self` first.
unsafe fn general(
    py: Python<'_>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let Some(general) = GENERAL.get(py) else {
        return ptr::null_mut();
    };
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize);
        let nkw = if kwnames.is_null() {
            0
        } else {
            ffi::PyTuple_GET_SIZE(kwnames)
        };
        let mut all = Vec::with_capacity((1 + nargs + nkw) as usize);
        all.push(slf);
        all.extend_from_slice(std::slice::from_raw_parts(args, (nargs + nkw) as usize));
        ffi::PyObject_Vectorcall(
            general.as_ptr(),
            all.as_ptr(),
            (nargs + 1) as usize,
            kwnames,
        )
    }
}

/// The call's text argument when it is an exact `str` (not a subclass, valid UTF-8).
unsafe fn text<'a>(o: *mut ffi::PyObject) -> Option<&'a str> {
    unsafe {
        if ffi::PyUnicode_CheckExact(o) == 0 {
            return None;
        }
        let mut len: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(o, &mut len);
        if data.is_null() {
            // A lone surrogate: the general entry says so.
            ffi::PyErr_Clear();
            return None;
        }
        // SAFETY: CPython's UTF-8 of the string, alive as long as the string (the caller's).
        let bytes = std::slice::from_raw_parts(data as *const u8, len as usize);
        Some(std::str::from_utf8_unchecked(bytes))
    }
}

/// A required text argument (`None` when absent or not an exact `str`).
unsafe fn required_text<'a>(o: *mut ffi::PyObject) -> Option<&'a str> {
    if o.is_null() {
        return None;
    }
    unsafe { text(o) }
}

/// An optional text argument: `Some(None)` for `None` (or absent), `None` when not an exact `str`.
unsafe fn opt_text<'a>(o: *mut ffi::PyObject) -> Option<Option<&'a str>> {
    if o.is_null() || o == unsafe { ffi::Py_None() } {
        return Some(None);
    }
    unsafe { text(o) }.map(Some)
}

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
        let (Some(parent), Some(name)) = (required_text(parent), required_text(name)) else {
            return Ok(None);
        };
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
        let Some(parent) = parse_id(parent) else {
            return Ok(None);
        };
        // Converted last, as the general entry does: its errors are the same.
        let metadata = if metadata.is_null() {
            None
        } else {
            crate::convert::metadata(Some(&Bound::from_borrowed_ptr(py, metadata)))?
        };
        let call = FinishedCall {
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
        Ok(Some(graph.get().record(py, call).map_err(PyErr::from)?))
    }
}

/// `cost_usd` is required: a missing one goes to the general entry, which says so.
unsafe fn required_number(o: *mut ffi::PyObject) -> Option<f64> {
    if o.is_null() {
        return None;
    }
    unsafe { number(o) }
}
