//! `Mutation.create_node` / `create_edge`'s fast entries (`fast_entry.rs`): a build calls them once a node
//! and once an edge, and PyO3's argument matching and conversion were a fifth of that call
//! (benches/README.md "The build floor"). Read fast: `create_node(node_type, state, content=...)` with
//! exact `str` values (`state` and `content` may be `None` or left out) and `create_edge(from_id, to_id,
//! edge_type)` by position; every other call goes to PyO3's entry. Both end in the same `DagEngine` call.

use chainwarden_core::dag::{NodeSpec, Value};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyString;

use super::mutation::Mutation;
use crate::fast_entry::{fast_method, opt_text, required_text, text, Fast, FastEntry};

static CREATE_NODE: FastEntry = FastEntry::new();
static CREATE_EDGE: FastEntry = FastEntry::new();
/// `content` interned: a keyword written in the source is this object, found by its address.
static CONTENT: PyOnceLock<Py<PyString>> = PyOnceLock::new();

pub fn install(py: Python<'_>) -> PyResult<()> {
    let ty = py.get_type::<Mutation>();
    CONTENT.get_or_init(py, || PyString::intern(py, "content").unbind());
    CREATE_NODE.install(py, &ty, c"create_node", create_node)?;
    CREATE_EDGE.install(py, &ty, c"create_edge", create_edge)
}

fast_method!(create_node, CREATE_NODE, fast_node);
fast_method!(create_edge, CREATE_EDGE, fast_edge);

/// `create_node(node_type[, state][, content=...])` of exact `str`s (`None` for `state` / `content`).
unsafe fn fast_node<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Fast<'py> {
    // SAFETY: CPython passes `nargs` positional arguments then one value per name in `kwnames`.
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize);
        if !(1..=2).contains(&nargs) {
            return Ok(None);
        }
        let Some(node_type) = required_text(*args) else {
            return Ok(None);
        };
        let state = if nargs == 2 {
            *args.add(1)
        } else {
            std::ptr::null_mut()
        };
        let Some(state) = opt_text(state) else {
            return Ok(None);
        };
        let mut content = None;
        if !kwnames.is_null() && ffi::PyTuple_GET_SIZE(kwnames) > 0 {
            let key = ffi::PyTuple_GET_ITEM(kwnames, 0);
            let named = CONTENT.get(py).map(|c| c.as_ptr());
            if ffi::PyTuple_GET_SIZE(kwnames) != 1 || named != Some(key) {
                return Ok(None);
            }
            let value = *args.add(nargs as usize);
            if value != ffi::Py_None() {
                let Some(s) = text(value) else {
                    return Ok(None);
                };
                content = Some(Value::Str(s.to_owned()));
            }
        }
        let spec = NodeSpec {
            content,
            ..NodeSpec::default()
        };
        // CPython's method descriptor checked that `self` is a `Mutation`.
        let m = Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<Mutation>();
        let engine = m.get().live(py)?;
        let id = engine.create_node_from(py, node_type, state, spec)?;
        Ok(Some(id.into_bound(py).into_any()))
    }
}

/// `create_edge(from_id, to_id, edge_type)` of exact `str`s, by position.
unsafe fn fast_edge<'py>(
    py: Python<'py>,
    slf: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargsf: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> Fast<'py> {
    // SAFETY: as `fast_node`.
    unsafe {
        let nargs = ffi::PyVectorcall_NARGS(nargsf as usize);
        if nargs != 3 || !(kwnames.is_null() || ffi::PyTuple_GET_SIZE(kwnames) == 0) {
            return Ok(None);
        }
        let (Some(from_id), Some(to_id), Some(edge_type)) = (
            required_text(*args),
            required_text(*args.add(1)),
            required_text(*args.add(2)),
        ) else {
            return Ok(None);
        };
        let m = Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<Mutation>();
        let engine = m.get().live(py)?;
        let id = engine.create_edge_from(py, from_id, to_id, edge_type, None, None)?;
        Ok(Some(id.into_bound(py).into_any()))
    }
}
