//! The core's vocabularies (`chainwarden_core::vocabularies`), exported as they are: a read-only mapping of
//! name -> words, from which `chainwarden.vocab` builds its enums (docs/errors.md "Vocabularies").

use chainwarden_core::vocabularies;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMappingProxy, PyTuple};

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let table = PyDict::new(py);
    for v in vocabularies::all() {
        table.set_item(v.name, PyTuple::new(py, v.words)?)?;
    }
    m.add("VOCABULARIES", PyMappingProxy::new(py, table.as_mapping()))
}
