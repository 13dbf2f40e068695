//! A method's fast entry: CPython's `METH_FASTCALL | METH_KEYWORDS` function put on a class in place of
//! the one PyO3 generates, which it keeps to fall back on. The fast entry reads a call as code usually
//! writes it (exact `str` values, keywords spelled in the source) straight from CPython's arguments and
//! hands every other call, unchanged, to PyO3's entry, which converts what it can and raises the typed
//! error naming the argument: the two differ only in cost.

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::sync::OnceLock;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

/// One method's two entries: PyO3's (the general one) and the definition of the fast one.
pub struct FastEntry {
    general: PyOnceLock<Py<PyAny>>,
    def: OnceLock<MethodDef>,
}

struct MethodDef(ffi::PyMethodDef);
// SAFETY: the definition is written once, before it is shared, and only read afterwards; its pointers are
// to static C strings.
unsafe impl Send for MethodDef {}
unsafe impl Sync for MethodDef {}

/// What a fast entry returns: the call's result, or `None` to hand the call to the general entry.
pub type Fast<'py> = PyResult<Option<Bound<'py, PyAny>>>;

impl FastEntry {
    pub const fn new() -> Self {
        FastEntry {
            general: PyOnceLock::new(),
            def: OnceLock::new(),
        }
    }

    /// Puts `meth` on `ty` as `name`, keeping PyO3's method (its documentation and text signature too).
    pub fn install(
        &'static self,
        py: Python<'_>,
        ty: &Bound<'_, PyType>,
        name: &'static CStr,
        meth: ffi::PyCFunctionFastWithKeywords,
    ) -> PyResult<()> {
        let general = ty.getattr(name.to_str().expect("an ASCII method name"))?;
        // SAFETY: PyO3's method descriptor, whose `d_method` is its static definition.
        let doc = unsafe {
            if ffi::Py_TYPE(general.as_ptr()) != ptr::addr_of_mut!(ffi::PyMethodDescr_Type) {
                return Ok(());
            }
            let descr = general.as_ptr() as *mut ffi::PyMethodDescrObject;
            (*(*descr).d_method).ml_doc
        };
        self.general.get_or_init(py, || general.unbind());
        let def = self.def.get_or_init(|| {
            MethodDef(ffi::PyMethodDef {
                ml_name: name.as_ptr(),
                ml_meth: ffi::PyMethodDefPointer {
                    PyCFunctionFastWithKeywords: meth,
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
        ty.setattr(name.to_str().expect("an ASCII method name"), fast)
    }

    /// Runs `fast`; the general entry takes the call when it returns `None`. A panic becomes PyO3's
    /// `PanicException`, as in a PyO3 method.
    ///
    /// `fast` runs without PyO3's count of attached calls (which costs two thread-local accesses a
    /// call): a `Py` it drops is released later, from PyO3's pool of deferred decrefs, not at once.
    /// Owned objects it lets go of are held as `Bound`, which releases them on drop.
    ///
    /// # Safety
    /// The arguments are CPython's to this method, unchanged.
    pub unsafe fn call<'py>(
        &self,
        py: Python<'py>,
        slf: *mut ffi::PyObject,
        args: *const *mut ffi::PyObject,
        nargsf: ffi::Py_ssize_t,
        kwnames: *mut ffi::PyObject,
        fast: impl FnOnce() -> Fast<'py>,
    ) -> *mut ffi::PyObject {
        let out = match catch_unwind(AssertUnwindSafe(fast)) {
            Ok(out) => out,
            Err(payload) => Err(pyo3::panic::PanicException::new_err(panic_message(
                &payload,
            ))),
        };
        match out {
            Ok(Some(result)) => result.into_ptr(),
            // SAFETY: the arguments are CPython's, unchanged.
            Ok(None) => unsafe { self.general(py, slf, args, nargsf, kwnames) },
            Err(e) => {
                e.restore(py);
                ptr::null_mut()
            }
        }
    }

    /// The call through PyO3's entry, `self` first.
    unsafe fn general(
        &self,
        py: Python<'_>,
        slf: *mut ffi::PyObject,
        args: *const *mut ffi::PyObject,
        nargsf: ffi::Py_ssize_t,
        kwnames: *mut ffi::PyObject,
    ) -> *mut ffi::PyObject {
        let Some(general) = self.general.get(py) else {
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
}

/// Defines `$name`, the `extern "C"` function CPython calls for a fast entry: it runs `$fast` (same
/// arguments, returning a `PyResult<Option<Bound<_>>>`) through [`FastEntry::call`] of `$entry`.
macro_rules! fast_method {
    ($name:ident, $entry:expr, $fast:path) => {
        unsafe extern "C" fn $name(
            slf: *mut pyo3::ffi::PyObject,
            args: *const *mut pyo3::ffi::PyObject,
            nargsf: pyo3::ffi::Py_ssize_t,
            kwnames: *mut pyo3::ffi::PyObject,
        ) -> *mut pyo3::ffi::PyObject {
            // SAFETY: CPython calls a method with the thread attached, its arguments borrowed for the
            // call.
            unsafe {
                let py = pyo3::Python::assume_attached();
                $entry.call(py, slf, args, nargsf, kwnames, || {
                    Ok($fast(py, slf, args, nargsf, kwnames)?.map(pyo3::Bound::into_any))
                })
            }
        }
    };
}
pub(crate) use fast_method;

fn panic_message(payload: &Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic in a native method".into())
}

/// The positional arguments of a call that passes exactly `n` of them and no keyword, else `None`.
///
/// # Safety
/// The arguments are CPython's to a fast entry, unchanged.
#[inline]
pub unsafe fn exactly<'a>(
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
    n: usize,
) -> Option<&'a [*mut ffi::PyObject]> {
    // SAFETY: CPython passes `nargs` positional arguments, borrowed for the call (`args` may be null
    // when there are none).
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize) as usize;
        let no_keywords = kwnames.is_null() || ffi::PyTuple_GET_SIZE(kwnames) == 0;
        match (nargs == n && no_keywords, n) {
            (false, _) => None,
            (true, 0) => Some(&[]),
            (true, _) => Some(std::slice::from_raw_parts(args, n)),
        }
    }
}

/// A text argument when it is an exact `str` (not a subclass, valid UTF-8).
///
/// # Safety
/// `o` is a live object, borrowed for `'a`.
#[inline]
pub unsafe fn text<'a>(o: *mut ffi::PyObject) -> Option<&'a str> {
    unsafe {
        if ffi::PyUnicode_CheckExact(o) == 0 {
            return None;
        }
        // A compact ASCII str (every id, type and label) is its own UTF-8, read in place: no call, about a
        // thirtieth of a build's node + edge (docs/dag.md "Ids and indexes"). Its layout is public API
        // before 3.14, outside the limited API (`build.rs`).
        #[cfg(not(any(Py_3_14, Py_LIMITED_API, PyPy, GraalPy)))]
        if ffi::PyUnicode_IS_COMPACT_ASCII(o) != 0 {
            let bytes = std::slice::from_raw_parts(
                ffi::PyUnicode_1BYTE_DATA(o) as *const u8,
                ffi::PyUnicode_GET_LENGTH(o) as usize,
            );
            return Some(std::str::from_utf8_unchecked(bytes));
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
///
/// # Safety
/// As [`text`]; `o` may be null.
#[inline]
pub unsafe fn required_text<'a>(o: *mut ffi::PyObject) -> Option<&'a str> {
    if o.is_null() {
        return None;
    }
    unsafe { text(o) }
}

/// An optional text argument: `Some(None)` for `None` (or absent), `None` when not an exact `str`.
///
/// # Safety
/// As [`required_text`].
#[inline]
pub unsafe fn opt_text<'a>(o: *mut ffi::PyObject) -> Option<Option<&'a str>> {
    if o.is_null() || o == unsafe { ffi::Py_None() } {
        return Some(None);
    }
    unsafe { text(o) }.map(Some)
}
