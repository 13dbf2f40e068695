//! Observers and subscribers: copy-on-write lists, called after the graph lock is released.
//! A failing hook never breaks the graph nor the hooks after it (only `Exception` is
//! swallowed; KeyboardInterrupt and friends propagate).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;
use pyo3::types::PyTuple;

#[derive(Default)]
pub struct HookList {
    items: Mutex<Arc<Vec<Py<PyAny>>>>,
    // Lets the hot path skip building events when nobody listens.
    any: AtomicBool,
}

impl HookList {
    pub fn from_vec(items: Vec<Py<PyAny>>) -> Self {
        let any = AtomicBool::new(!items.is_empty());
        HookList {
            items: Mutex::new(Arc::new(items)),
            any,
        }
    }

    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    pub fn current(&self) -> Arc<Vec<Py<PyAny>>> {
        self.items.lock().clone()
    }

    /// Identity-based: adding the same object twice keeps one entry.
    pub fn add(&self, py: Python<'_>, item: &Bound<'_, PyAny>) {
        let mut guard = self.items.lock();
        if guard.iter().any(|o| o.is(item)) {
            return;
        }
        let mut next: Vec<Py<PyAny>> = guard.iter().map(|o| o.clone_ref(py)).collect();
        next.push(item.clone().unbind());
        *guard = Arc::new(next);
        self.any.store(true, Ordering::Release);
    }

    pub fn remove(&self, py: Python<'_>, item: &Bound<'_, PyAny>) {
        let mut guard = self.items.lock();
        let next: Vec<Py<PyAny>> = guard
            .iter()
            .filter(|o| !o.is(item))
            .map(|o| o.clone_ref(py))
            .collect();
        self.any.store(!next.is_empty(), Ordering::Release);
        *guard = Arc::new(next);
    }

    pub fn traverse(&self, visit: &pyo3::PyVisit<'_>) -> Result<(), pyo3::PyTraverseError> {
        if let Some(guard) = self.items.try_lock() {
            for o in guard.iter() {
                visit.call(o)?;
            }
        }
        Ok(())
    }

    pub fn clear(&self) {
        *self.items.lock() = Arc::new(Vec::new());
        self.any.store(false, Ordering::Release);
    }
}

fn swallow(py: Python<'_>, result: PyResult<Bound<'_, PyAny>>) -> PyResult<()> {
    match result {
        Ok(_) => Ok(()),
        Err(e) if e.is_instance_of::<PyException>(py) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Calls `method(*args)` on every observer that has it.
pub fn notify<'py>(
    py: Python<'py>,
    observers: &HookList,
    method: &str,
    args: impl Fn() -> PyResult<Bound<'py, PyTuple>>,
) -> PyResult<()> {
    if !observers.any() {
        return Ok(());
    }
    let list = observers.current();
    for o in list.iter() {
        let o = o.bind(py);
        let call = args().and_then(|a| o.call_method1(method, a));
        swallow(py, call)?;
    }
    Ok(())
}

pub fn fire(py: Python<'_>, subscribers: &HookList, event: &Bound<'_, PyAny>) -> PyResult<()> {
    let list = subscribers.current();
    for s in list.iter() {
        swallow(py, s.bind(py).call1((event,)))?;
    }
    Ok(())
}
