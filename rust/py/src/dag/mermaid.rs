//! `mermaid_label`: the core's one rule for user text inside a Mermaid label (docs/design.md §25), for the
//! exporters written in Python (the call tree of a saved run), so both exports escape the same way.

use pyo3::prelude::*;

use super::args::{name, Count, Text};

/// `text` as the inside of a quoted Mermaid label: whitespace collapsed to one line, cut to
/// `max_label_chars` code points, every character Mermaid or HTML could read as syntax an entity code.
#[pyfunction]
#[pyo3(signature = (text, *, max_label_chars))]
fn mermaid_label(text: Text<name::Text>, max_label_chars: Count<name::MaxLabelChars, 3>) -> String {
    chainwarden_core::dag::mermaid_label(&text.0, max_label_chars.0)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(mermaid_label, m)?)
}
