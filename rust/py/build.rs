//! The interpreter the extension is built for, as cfgs (`Py_3_14`, `Py_GIL_DISABLED`, ...): the fast
//! argument readers (`src/fast_entry.rs`) read a compact ASCII `str` in place where CPython's layout of
//! one is public API (before 3.14), and call `PyUnicode_AsUTF8AndSize` elsewhere.
fn main() {
    pyo3_build_config::use_pyo3_cfgs();
}
