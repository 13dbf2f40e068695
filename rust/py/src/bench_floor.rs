//! The benchmark floor: three native methods that do nothing, called like the recorder's
//! hot path, to show how much of a per-node cost is the Python→native call itself. Compiled only with
//! the `bench-floor` feature (`make bench`), so it never ships in a wheel.

use pyo3::prelude::*;
use pyo3::types::PyString;

#[pyclass(frozen, module = "chainwarden._core", name = "_BenchFloor")]
pub struct BenchFloor {
    id: Py<PyString>,
}

#[pymethods]
impl BenchFloor {
    #[new]
    fn new(py: Python<'_>) -> Self {
        BenchFloor {
            id: PyString::new(py, "n000001").unbind(),
        }
    }

    #[pyo3(signature = (parent_id, kind, name, model=None, metadata=None))]
    fn begin_node(
        &self,
        py: Python<'_>,
        parent_id: &Bound<'_, PyAny>,
        kind: &Bound<'_, PyAny>,
        name: &Bound<'_, PyAny>,
        model: Option<&Bound<'_, PyAny>>,
        metadata: Option<&Bound<'_, PyAny>>,
    ) -> Py<PyString> {
        let _ = (parent_id, kind, name, model, metadata);
        self.id.clone_ref(py)
    }

    fn mark_running(&self, node_id: &Bound<'_, PyAny>) {
        let _ = node_id;
    }

    #[pyo3(signature = (node_id, cost_usd, tokens_in=None, tokens_out=None))]
    fn mark_success(
        &self,
        node_id: &Bound<'_, PyAny>,
        cost_usd: &Bound<'_, PyAny>,
        tokens_in: Option<&Bound<'_, PyAny>>,
        tokens_out: Option<&Bound<'_, PyAny>>,
    ) {
        let _ = (node_id, cost_usd, tokens_in, tokens_out);
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BenchFloor>()
}
