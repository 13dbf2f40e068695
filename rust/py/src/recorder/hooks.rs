//! Observers and subscribers: copy-on-write lists, called after the graph lock is released.
//! A failing hook never breaks the graph nor the hooks after it: its `Exception` is logged at
//! WARNING on `chainwarden.recorder` with the hook's name (docs/design.md §22); KeyboardInterrupt
//! and friends propagate.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyAttributeError, PyException};

use crate::exceptions::invalid_argument_type;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyString, PyTuple};

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

/// The observer methods the graph calls; an observer needs at least one (the reference calls
/// only the methods an observer has).
pub const OBSERVER_METHODS: [&str; 4] = [
    "on_node_start",
    "on_node_complete",
    "on_node_failed",
    "on_decision",
];

/// `TypeError` naming `what` unless `observer` has at least one callable observer method.
pub fn check_observer(observer: &Bound<'_, PyAny>, what: &str) -> PyResult<()> {
    for method in OBSERVER_METHODS {
        if let Ok(m) = observer.getattr(method) {
            if m.is_callable() {
                return Ok(());
            }
        }
    }
    Err(invalid_argument_type(
        observer.py(),
        Some(what),
        format!(
            "{what} must provide at least one of {}(); got {}",
            OBSERVER_METHODS.join("(), "),
            observer.get_type().name()?
        ),
    ))
}

/// The constructor's `observers` argument: None or an iterable (not a string) of observers.
pub fn observer_list(observers: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Py<PyAny>>> {
    let Some(obj) = observers.filter(|o| !o.is_none()) else {
        return Ok(Vec::new());
    };
    let not_a_list = || -> PyResult<PyErr> {
        Ok(invalid_argument_type(
            obj.py(),
            Some("observers"),
            format!(
                "observers must be a list of observers or None; got {}",
                obj.get_type().name()?
            ),
        ))
    };
    // A string or a mapping iterates, but over characters or keys: never what was meant.
    if obj.is_instance_of::<PyString>()
        || obj.is_instance_of::<PyBytes>()
        || obj.is_instance_of::<PyDict>()
    {
        return Err(not_a_list()?);
    }
    let Ok(iter) = obj.try_iter() else {
        return Err(not_a_list()?);
    };
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        let item = item?;
        check_observer(&item, &format!("observers[{i}]"))?;
        out.push(item.unbind());
    }
    Ok(out)
}

static LOGGER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

/// Logs a hook's exception at WARNING on `chainwarden.recorder` (docs/design.md §22); the error
/// is consumed. Anything but `Exception` (KeyboardInterrupt and friends) is handed back.
fn log_failure(py: Python<'_>, hook: &str, err: PyErr) -> PyResult<()> {
    if !err.is_instance_of::<PyException>(py) {
        return Err(err);
    }
    let logger = LOGGER.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("logging")?
            .call_method1("getLogger", ("chainwarden.recorder",))?
            .unbind())
    });
    if let Ok(logger) = logger {
        let exc = err.into_value(py);
        let kwargs = PyDict::new(py);
        let logged = kwargs.set_item("exc_info", &exc).and_then(|()| {
            logger
                .bind(py)
                .call_method("warning", ("%s raised %r", hook, &exc), Some(&kwargs))
        });
        // A logging failure must not become the graph's failure either.
        if let Err(e) = logged {
            if !e.is_instance_of::<PyException>(py) {
                return Err(e);
            }
        }
    }
    Ok(())
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .qualname()
        .map_or_else(|_| "?".to_owned(), |n| n.to_string())
}

/// Calls `method(*args)` on every observer that has it; a failure is logged and the next
/// observer still runs.
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
        // An observer may implement only some of the methods: a missing one is not a failure.
        let bound = match o.getattr(method) {
            Ok(m) => m,
            Err(e) if e.is_instance_of::<PyAttributeError>(py) => continue,
            Err(e) => {
                log_failure(py, &format!("observer {}.{method}", type_name(o)), e)?;
                continue;
            }
        };
        if let Err(e) = args().and_then(|a| bound.call1(a)) {
            log_failure(py, &format!("observer {}.{method}", type_name(o)), e)?;
        }
    }
    Ok(())
}

pub fn fire(py: Python<'_>, subscribers: &HookList, event: &Bound<'_, PyAny>) -> PyResult<()> {
    let list = subscribers.current();
    for s in list.iter() {
        let s = s.bind(py);
        if let Err(e) = s.call1((event,)) {
            let name = s
                .getattr("__qualname__")
                .and_then(|n| n.extract::<String>())
                .unwrap_or_else(|_| type_name(s));
            log_failure(py, &format!("subscriber {name}"), e)?;
        }
    }
    Ok(())
}
