//! The DagError family, built once at import with real multiple inheritance (LookupError / ValueError),
//! which `create_exception!` cannot express.

use chainwarden_core::dag::{DagError, ErrorKind};
use pyo3::exceptions::{PyException, PyLookupError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyTuple, PyType};

struct Classes {
    base: Py<PyType>,
    not_found: Py<PyType>,
    invalid: Py<PyType>,
    edge: Py<PyType>,
    precondition: Py<PyType>,
}

static CLASSES: PyOnceLock<Classes> = PyOnceLock::new();

fn make<'py>(
    py: Python<'py>,
    name: &str,
    bases: Vec<Bound<'py, PyType>>,
    doc: &str,
    code: Option<&str>,
) -> PyResult<Py<PyType>> {
    let ns = PyDict::new(py);
    ns.set_item("__module__", "chainwarden._core")?;
    ns.set_item("__doc__", doc)?;
    if let Some(code) = code {
        ns.set_item("code", code)?;
    }
    let ty = py.get_type::<PyType>();
    let cls = ty.call1((name, PyTuple::new(py, bases)?, ns))?;
    Ok(cls.cast_into::<PyType>()?.unbind())
}

fn build(py: Python<'_>) -> PyResult<Classes> {
    let base = make(
        py,
        "DagError",
        vec![py.get_type::<PyException>()],
        "A DAG operation failed; `.code` names what went wrong (e.g. `dag.edge.cycle`).",
        Some("dag.error"),
    )?;
    let b = || base.bind(py).clone();
    Ok(Classes {
        not_found: make(
            py,
            "DagNotFoundError",
            vec![b(), py.get_type::<PyLookupError>()],
            "An unknown id, or an inactive node where an active one is required.",
            None,
        )?,
        invalid: make(
            py,
            "DagInvalidArgumentError",
            vec![b(), py.get_type::<PyValueError>()],
            "An argument has the wrong type or value.",
            None,
        )?,
        edge: make(
            py,
            "DagEdgeError",
            vec![b()],
            "An edge would break the graph's structure.",
            None,
        )?,
        precondition: make(
            py,
            "DagPreconditionError",
            vec![b()],
            "A mutation's documented precondition does not hold.",
            None,
        )?,
        base,
    })
}

fn classes(py: Python<'_>) -> &Classes {
    CLASSES.get_or_init(py, || build(py).expect("DagError classes"))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let c = classes(m.py());
    m.add("DagError", c.base.bind(m.py()))?;
    m.add("DagNotFoundError", c.not_found.bind(m.py()))?;
    m.add("DagInvalidArgumentError", c.invalid.bind(m.py()))?;
    m.add("DagEdgeError", c.edge.bind(m.py()))?;
    m.add("DagPreconditionError", c.precondition.bind(m.py()))?;
    Ok(())
}

pub fn to_py(py: Python<'_>, err: DagError) -> PyErr {
    let c = classes(py);
    let cls = match err.kind {
        ErrorKind::NotFound => &c.not_found,
        ErrorKind::InvalidArgument => &c.invalid,
        ErrorKind::Edge => &c.edge,
        ErrorKind::Precondition => &c.precondition,
    };
    let built = cls.bind(py).call1((err.message,)).and_then(|inst| {
        inst.setattr("code", err.code)?;
        Ok(inst)
    });
    match built {
        Ok(inst) => PyErr::from_value(inst),
        Err(e) => e,
    }
}

pub fn invalid(py: Python<'_>, message: impl Into<String>) -> PyErr {
    to_py(py, DagError::invalid(message))
}

pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, DagError> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
