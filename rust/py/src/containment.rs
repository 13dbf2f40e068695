//! `ChainCore`: the native state behind `chainwarden.containment.ExecutionContext` — limits,
//! counters, node records and the chain's call graph, fused.
//!
//! The Python layer makes one call to admit a wrap and create its node (`begin_sync` for a sync
//! call, nested on this thread's stack; `begin` for the others), which returns the node or raises
//! `CallNotAdmitted` (the cause and the refused node), and one to close both (`settle` /
//! `succeed` / `fail`); nodes travel as ints so the hot path formats no ids. Everything else
//! serves snapshots and cancellation. `ctx.llm_call(...)` is native (`forms`); its blocks reach
//! the same admission natively (`block`) and bind their call in `CURRENT_CALL` (`binding`);
//! `current_context()` reads those bindings natively (`current`).

mod binding;
mod block;
mod current;
mod forms;

use chainwarden_core::containment::{
    kinds, Contained, Failure, GraphEnd, Limits, Reported, Status, Stop, MAX_RECORDS,
};
use chainwarden_core::ids::{id_string, NodeId};
use chainwarden_core::recorder::Kind;
use std::ffi::CStr;
use std::os::raw::c_int;

use pyo3::ffi;
use pyo3::intern;
use pyo3::sync::PyOnceLock;
use std::cell::RefCell;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyFunction, PyList, PyType};

use crate::errors;
use crate::exceptions::{self, invalid_argument, invalid_argument_type};

/// One finished contained call, as `ChainCore.records` returns it (`NodeRecord` is built from it).
#[pyclass(frozen, get_all, module = "chainwarden._core")]
pub struct CallRecord {
    node_id: String,
    parent_id: Option<String>,
    kind: &'static str,
    operation_name: String,
    /// Unix seconds.
    start_s: f64,
    end_s: Option<f64>,
    status: &'static str,
    cost_usd: f64,
    retries_used: u32,
    error_message: Option<String>,
    tokens_in: Option<u64>,
    tokens_out: Option<u64>,
    model: Option<String>,
    error_class: Option<String>,
    stop_reason: Option<String>,
}

/// The kind of a contained call (the graph's `system` kind is only its root).
#[pyclass(eq, eq_int, frozen, from_py_object, module = "chainwarden._core")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    #[pyo3(name = "LLM")]
    Llm,
    #[pyo3(name = "TOOL")]
    Tool,
    #[pyo3(name = "MEMORY_READ")]
    MemoryRead,
    #[pyo3(name = "MEMORY_WRITE")]
    MemoryWrite,
}

impl From<CallKind> for Kind {
    fn from(k: CallKind) -> Kind {
        match k {
            CallKind::Llm => Kind::Llm,
            CallKind::Tool => Kind::Tool,
            CallKind::MemoryRead => Kind::MemoryRead,
            CallKind::MemoryWrite => Kind::MemoryWrite,
        }
    }
}

#[pymethods]
impl CallKind {
    /// The node's kind string ("llm", "tool", "memory_read", "memory_write").
    #[getter]
    fn value(&self) -> &'static str {
        Kind::from(*self).as_str()
    }

    /// Whether the pipeline's per-call hooks see calls of this kind (memory calls skip them).
    #[getter]
    fn consults_pipeline(&self) -> bool {
        kinds::consults_pipeline((*self).into())
    }

    /// Whether this is an LLM call (`before_charge` and pricing by token usage apply).
    #[getter]
    fn is_llm(&self) -> bool {
        kinds::is_llm((*self).into())
    }
}

/// The status of a finished contained call (`NodeRecord.status` is its `value`).
#[pyclass(eq, eq_int, frozen, from_py_object, module = "chainwarden._core")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum CallStatus {
    #[pyo3(name = "OK")]
    Ok,
    #[pyo3(name = "HALTED")]
    Halted,
    #[pyo3(name = "ABORTED")]
    Aborted,
    #[pyo3(name = "TIMEOUT")]
    Timeout,
    #[pyo3(name = "ERROR")]
    Error,
}

impl From<CallStatus> for Status {
    fn from(s: CallStatus) -> Status {
        match s {
            CallStatus::Ok => Status::Ok,
            CallStatus::Halted => Status::Halted,
            CallStatus::Aborted => Status::Aborted,
            CallStatus::Timeout => Status::Timeout,
            CallStatus::Error => Status::Error,
        }
    }
}

impl From<Status> for CallStatus {
    fn from(s: Status) -> CallStatus {
        match s {
            Status::Ok => CallStatus::Ok,
            Status::Halted => CallStatus::Halted,
            Status::Aborted => CallStatus::Aborted,
            Status::Timeout => CallStatus::Timeout,
            Status::Error => CallStatus::Error,
        }
    }
}

#[pymethods]
impl CallStatus {
    /// The record's status string ("ok", "halted", ...).
    #[getter]
    fn value(&self) -> &'static str {
        Status::from(*self).as_str()
    }
}

/// Why the core refused a call or cancelled the chain, in the order the checks run.
#[pyclass(eq, eq_int, frozen, from_py_object, module = "chainwarden._core")]
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    #[pyo3(name = "ABORTED")]
    Aborted,
    #[pyo3(name = "BUDGET")]
    Budget,
    #[pyo3(name = "STEPS")]
    Steps,
    #[pyo3(name = "RETRIES")]
    Retries,
    #[pyo3(name = "TIMEOUT")]
    Timeout,
    /// The call's cost estimate does not fit under the ceiling (reported as budget_exceeded).
    #[pyo3(name = "ESTIMATE")]
    Estimate,
}

impl From<Stop> for StopCause {
    fn from(s: Stop) -> StopCause {
        match s {
            Stop::Aborted => StopCause::Aborted,
            Stop::Budget => StopCause::Budget,
            Stop::Steps => StopCause::Steps,
            Stop::Retries => StopCause::Retries,
            Stop::Timeout => StopCause::Timeout,
            Stop::Estimate => StopCause::Estimate,
        }
    }
}

impl From<StopCause> for Stop {
    fn from(s: StopCause) -> Stop {
        match s {
            StopCause::Aborted => Stop::Aborted,
            StopCause::Budget => Stop::Budget,
            StopCause::Steps => Stop::Steps,
            StopCause::Retries => Stop::Retries,
            StopCause::Timeout => Stop::Timeout,
            StopCause::Estimate => Stop::Estimate,
        }
    }
}

#[pymethods]
impl StopCause {
    /// The docs/design.md §5 stop reason.
    #[getter]
    fn reason(&self) -> &'static str {
        Stop::from(*self).reason()
    }

    /// The status of a call refused, or cancelled while running, for this cause.
    #[getter]
    fn status(&self) -> CallStatus {
        Stop::from(*self).status().into()
    }
}

/// A chain's counters at one instant (`ChainCore.counters()`).
#[pyclass(frozen, get_all, module = "chainwarden._core")]
pub struct Counters {
    /// Successful calls.
    step_count: u64,
    /// Cost charged so far (USD).
    cost_usd: f64,
    /// Units of the retry budget consumed.
    retries_used: u64,
    aborted: bool,
    abort_reason: Option<String>,
    /// Since the chain started.
    elapsed_ms: f64,
    /// Finished calls kept (`records`).
    record_count: usize,
}

/// How `ChainCore.fail` closed a call.
#[pyclass(frozen, module = "chainwarden._core")]
pub struct ClosedCall {
    /// The stop reason the retry budget imposes (`provider_error`, `retry_budget_exceeded`), or None.
    #[pyo3(get)]
    stop: Option<&'static str>,
    /// What the call reported before it ended, charged to the chain (0.0 when nothing).
    #[pyo3(get)]
    charged_usd: f64,
}

#[pyclass(frozen, module = "chainwarden._core")]
pub struct ChainCore {
    inner: Contained,
    /// Whether an admitted call is running at once (nothing to consult first), else once `dispatch`ed.
    dispatch: bool,
}

thread_local! {
    /// The sync calls open on this thread, innermost last: what `report_cost` charges when no
    /// deeper async binding exists (docs/design.md §20). A sync callable runs on the thread that
    /// wrapped it, so a thread-local stack is exact and far cheaper than a ContextVar per call.
    static SYNC_CALLS: RefCell<Vec<(Py<ChainCore>, NodeId)>> = const { RefCell::new(Vec::new()) };
}

thread_local! {
    /// The code object of the last plain function found to be sync, held strongly so that its
    /// address cannot be taken by another code object while it is cached: wrapping the same
    /// function again costs a pointer comparison.
    static LAST_SYNC_CODE: RefCell<Option<Py<PyAny>>> = const { RefCell::new(None) };
}

/// What `ChainCore.begin` raises for a refused call; internal to the containment layer, which turns
/// it into the wrap's decision or a `CallRefused`.
const NOT_ADMITTED: &CStr = cr#"
class CallNotAdmitted(ChainwardenError):
    """The chain refused a call: `cause` (a `StopCause`) says why; `node` is the refused call's node,
    recorded halted with the stop reason (its events name that node's span)."""

    def __init__(self, cause, node):
        super().__init__(cause, node)
        self.cause = cause
        self.node = node
"#;

static NOT_ADMITTED_CLASS: PyOnceLock<Py<PyType>> = PyOnceLock::new();

fn not_admitted_class(py: Python<'_>) -> PyResult<&Py<PyType>> {
    NOT_ADMITTED_CLASS.get_or_try_init(py, || {
        let ns = PyDict::new(py);
        ns.set_item("__name__", "chainwarden._core")?;
        ns.set_item("ChainwardenError", exceptions::classes(py).root.bind(py))?;
        py.run(NOT_ADMITTED, Some(&ns), None)?;
        let cls = ns
            .get_item("CallNotAdmitted")?
            .expect("defined by NOT_ADMITTED");
        Ok(cls.cast_into::<PyType>()?.unbind())
    })
}

/// `CallNotAdmitted(cause, node)`.
pub(crate) fn not_admitted(py: Python<'_>, cause: StopCause, node: NodeId) -> PyErr {
    match not_admitted_class(py) {
        Ok(cls) => PyErr::from_type(cls.bind(py).clone(), (cause, node)),
        Err(e) => e,
    }
}

static INSPECT: PyOnceLock<(Py<PyAny>, Py<PyAny>)> = PyOnceLock::new();

const ASYNC_FLAGS: c_int = ffi::CO_COROUTINE | ffi::CO_ASYNC_GENERATOR;

fn not_sync(f: &Bound<'_, PyAny>) -> PyErr {
    let name = f
        .getattr(intern!(f.py(), "__qualname__"))
        .map_or_else(|_| f.get_type().to_string(), |n| n.to_string());
    invalid_argument_type(
        f.py(),
        Some("fn"),
        format!(
            "fn is a coroutine function ({name}); use wrap_llm_call_async / wrap_tool_call_async"
        ),
    )
}

/// docs/design.md §21: a sync wrap refuses what it cannot run — a non-callable, a coroutine or
/// async generator function — with `TypeError` before anything is counted.
fn check_sync_callable(py: Python<'_>, f: &Bound<'_, PyAny>) -> PyResult<()> {
    if let Ok(func) = f.cast::<PyFunction>() {
        // SAFETY: `func` is a function object; the code object is borrowed from it.
        let code = unsafe { ffi::PyFunction_GetCode(func.as_ptr()) };
        let cached = LAST_SYNC_CODE.with_borrow(|c| c.as_ref().is_some_and(|p| p.as_ptr() == code));
        if cached {
            return Ok(());
        }
        // SAFETY: `code` is a valid borrowed reference while `func` lives.
        let code = unsafe { Bound::from_borrowed_ptr(py, code) };
        let flags: c_int = code.getattr(intern!(py, "co_flags"))?.extract()?;
        if flags & ASYNC_FLAGS != 0 {
            return Err(not_sync(f));
        }
        let previous = LAST_SYNC_CODE.with_borrow_mut(|c| c.replace(code.unbind()));
        drop(previous);
        return Ok(());
    }
    if !f.is_callable() {
        return Err(invalid_argument_type(
            py,
            Some("fn"),
            format!("fn must be callable, got {}", f.get_type().name()?),
        ));
    }
    // Bound methods, partials, objects with `__call__`: rarer, checked the thorough way.
    let (is_coroutine, is_async_gen) = INSPECT.get_or_try_init(py, || -> PyResult<_> {
        let inspect = py.import("inspect")?;
        Ok((
            inspect.getattr("iscoroutinefunction")?.unbind(),
            inspect.getattr("isasyncgenfunction")?.unbind(),
        ))
    })?;
    if is_coroutine.call1(py, (f,))?.is_truthy(py)?
        || is_async_gen.call1(py, (f,))?.is_truthy(py)?
    {
        return Err(not_sync(f));
    }
    Ok(())
}

fn pop_sync_call(core: &ChainCore, node: NodeId) {
    let popped = SYNC_CALLS.with_borrow_mut(|open| {
        let i = open
            .iter()
            .rposition(|(c, n)| *n == node && std::ptr::eq(c.get(), core))?;
        Some(open.remove(i))
    });
    drop(popped);
}

/// (depth, innermost) of the sync calls open on this thread: `innermost` is (core, node).
#[pyfunction]
pub fn open_sync_calls(py: Python<'_>) -> (usize, Option<(Py<ChainCore>, NodeId)>) {
    SYNC_CALLS.with_borrow(|open| {
        let top = open.last().map(|(c, n)| (c.clone_ref(py), *n));
        (open.len(), top)
    })
}

fn tokens(v: Option<u64>) -> Option<i64> {
    v.map(|t| i64::try_from(t).unwrap_or(i64::MAX))
}

/// One call to admit, as `ChainCore.begin` and a `with` block (`block`) describe it.
pub(crate) struct Call<'a> {
    pub parent_hint: Option<NodeId>,
    pub kind: CallKind,
    pub name: &'a str,
    pub model: Option<&'a str>,
    pub cost_estimate: f64,
}

/// A call the chain refused: why, and its node (recorded halted).
pub(crate) struct Refused {
    pub cause: StopCause,
    pub node: NodeId,
}

/// Admits `call` (see `Contained::begin`): its node, or the refusal. With `nest`, the node joins
/// this thread's stack of open sync calls.
pub(crate) fn admit(
    slf: &Bound<'_, ChainCore>,
    call: &Call<'_>,
    nest: bool,
) -> errors::Result<Result<NodeId, Refused>> {
    let core = slf.get();
    let begun = core.inner.begin(
        call.parent_hint,
        call.kind.into(),
        call.name,
        call.model,
        call.cost_estimate,
        core.dispatch,
        nest,
    )?;
    Ok(match begun {
        Ok(node) => {
            if nest {
                SYNC_CALLS.with_borrow_mut(|open| open.push((slf.clone().unbind(), node)));
            }
            Ok(node)
        }
        Err(refused) => Err(Refused {
            cause: StopCause::from(refused.stop),
            node: refused.node,
        }),
    })
}

/// `admit` of the call `(name, model, cost_estimate)`, raising `CallNotAdmitted` for a refusal.
fn admit_or_raise(
    slf: &Bound<'_, ChainCore>,
    parent_hint: Option<NodeId>,
    kind: CallKind,
    (name, model, cost_estimate): (&str, Option<&str>, f64),
    nest: bool,
) -> errors::Result<NodeId> {
    let call = Call {
        parent_hint,
        kind,
        name,
        model,
        cost_estimate,
    };
    match admit(slf, &call, nest)? {
        Ok(node) => Ok(node),
        Err(r) => Err(not_admitted(slf.py(), r.cause, r.node).into()),
    }
}

/// How many sync calls are open on this thread (a binding's `sync_depth`).
pub(crate) fn sync_depth() -> usize {
    SYNC_CALLS.with_borrow(Vec::len)
}

impl ChainCore {
    /// Settles a completed call at what it reported, else its estimate (`settle`, for natives).
    pub(crate) fn settle_call(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
    ) -> errors::Result<()> {
        pop_sync_call(self, node);
        Ok(self
            .inner
            .succeed(node, named, cost_estimate, None)
            .map(|_| ())?)
    }
}

#[pymethods]
impl ChainCore {
    #[new]
    /// `root_metadata`: a dict kept on the chain's root node (its context and agent identity), or None.
    /// `dispatch`: whether an admitted call runs at once; False when gates are consulted first (the
    /// call is then `dispatch`ed once they allow it).
    #[pyo3(signature = (max_cost_usd, max_steps, max_retries_total, timeout_ms, chain_id, max_nodes=0, root_metadata=None, *, dispatch=true))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        max_cost_usd: f64,
        max_steps: u64,
        max_retries_total: u64,
        timeout_ms: u64,
        chain_id: &str,
        max_nodes: usize,
        root_metadata: Option<&Bound<'_, PyAny>>,
        dispatch: bool,
    ) -> errors::Result<Self> {
        if !max_cost_usd.is_finite() || max_cost_usd < 0.0 {
            return Err(invalid_argument(
                py,
                Some("max_cost_usd"),
                format!("max_cost_usd must be finite and >= 0, got {max_cost_usd}"),
            )
            .into());
        }
        let limits = Limits {
            max_cost_usd,
            max_steps,
            max_retries_total,
            timeout_ms,
        };
        let root_metadata = crate::convert::metadata(root_metadata)?;
        let inner = Contained::new(limits, chain_id, max_nodes, root_metadata)?;
        Ok(ChainCore { inner, dispatch })
    }

    #[getter]
    fn root_id(&self) -> String {
        id_string(self.inner.root())
    }

    /// The id of node `node` as the graph spells it (`n000042`).
    fn node_name(&self, node: NodeId) -> String {
        id_string(node)
    }

    /// Admits a sync call and returns its node, open on this thread's stack until it is closed (the
    /// parent of sync calls nested in it). `fn` is the callable the wrap runs: one that cannot run
    /// synchronously raises `TypeError` first, with nothing counted. A refused call raises
    /// `CallNotAdmitted` (its node exists already, halted, and is recorded). See `Contained::begin`
    /// for `parent_hint`.
    fn begin_sync(
        slf: &Bound<'_, Self>,
        r#fn: &Bound<'_, PyAny>,
        parent_hint: Option<NodeId>,
        kind: CallKind,
        name: &str,
        model: Option<&str>,
        cost_estimate: f64,
    ) -> errors::Result<NodeId> {
        check_sync_callable(slf.py(), r#fn)?;
        admit_or_raise(slf, parent_hint, kind, (name, model, cost_estimate), true)
    }

    /// As `begin_sync` for a call that is not nested on this thread's stack (an async call, a block
    /// or a held call: their children find them by `CURRENT_CALL`).
    fn begin(
        slf: &Bound<'_, Self>,
        parent_hint: Option<NodeId>,
        kind: CallKind,
        name: &str,
        model: Option<&str>,
        cost_estimate: f64,
    ) -> errors::Result<NodeId> {
        admit_or_raise(slf, parent_hint, kind, (name, model, cost_estimate), false)
    }

    /// Whether `node` is a call of this chain that has not ended yet.
    fn is_open(&self, node: NodeId) -> bool {
        self.inner.is_open(node)
    }

    /// Sets `metadata[key] = True` on the node of call `node` (KeyError-like error when the node
    /// no longer exists).
    fn flag(&self, node: NodeId, key: &str) -> errors::Result<()> {
        Ok(self.inner.flag(node, key)?)
    }

    fn dispatch(&self, node: NodeId) -> errors::Result<()> {
        Ok(self.inner.dispatch(node)?)
    }

    /// Adds usage the open call `node` reports about itself (ValueError on a bad value,
    /// KeyError when the call is not open).
    #[pyo3(signature = (node, cost_usd, tokens_in=None, tokens_out=None))]
    fn report(
        &self,
        node: NodeId,
        cost_usd: f64,
        tokens_in: Option<i64>,
        tokens_out: Option<i64>,
    ) -> errors::Result<()> {
        Ok(self.inner.report(node, cost_usd, tokens_in, tokens_out)?)
    }

    /// Removes and returns what the open call `node` reported: (cost_usd, tokens_in,
    /// tokens_out), or None.
    fn take_report(&self, node: NodeId) -> Option<(f64, Option<i64>, Option<i64>)> {
        self.inner
            .take_report(node)
            .map(|r| (r.cost_usd, tokens(r.tokens_in), tokens(r.tokens_out)))
    }

    /// The fast path's `succeed`: settles a completed call at what it reported, else its
    /// estimate (three positional arguments: no optional-argument parsing per call).
    fn settle(&self, node: NodeId, named: bool, cost_estimate: f64) -> errors::Result<()> {
        self.settle_call(node, named, cost_estimate)
    }

    /// Settles a completed call (docs/design.md §20) and returns the cost charged: `actual_cost`
    /// when given, else what the call reported, else `cost_estimate`.
    #[pyo3(signature = (node, named, cost_estimate, actual_cost=None, tokens_in=None, tokens_out=None))]
    fn succeed(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
        actual_cost: Option<f64>,
        tokens_in: Option<i64>,
        tokens_out: Option<i64>,
    ) -> errors::Result<f64> {
        let as_u64 = |t: Option<i64>| t.map(|v| u64::try_from(v).unwrap_or(0));
        let actual = actual_cost.map(|cost_usd| Reported {
            cost_usd,
            tokens_in: as_u64(tokens_in),
            tokens_out: as_u64(tokens_out),
        });
        pop_sync_call(self, node);
        Ok(self.inner.succeed(node, named, cost_estimate, actual)?)
    }

    /// Closes a failed or stopped call admitted with `cost_estimate`, charging what it reported
    /// before it ended (docs/design.md §30). Returns a `ClosedCall`: the stop reason the retry
    /// budget imposes (docs/design.md §34) and the cost charged.
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (node, named, cost_estimate, retry, status, error_class, halt_reason=None, error_message=None))]
    fn fail(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
        retry: bool,
        status: CallStatus,
        error_class: &str,
        halt_reason: Option<&str>,
        error_message: Option<&str>,
    ) -> errors::Result<ClosedCall> {
        let failure = Failure {
            cost_estimate,
            retry,
            status: status.into(),
            end: halt_reason.map_or(GraphEnd::Fail(error_class), GraphEnd::Halt),
            message: error_message,
        };
        pop_sync_call(self, node);
        let closed = self.inner.fail(node, named, failure)?;
        Ok(ClosedCall {
            stop: closed.stop,
            charged_usd: closed.charged_usd,
        })
    }

    /// Ends the chain's root node (see `Contained::close_root`).
    #[pyo3(signature = (stop_reason=None, error_class=None))]
    fn close_root(
        &self,
        stop_reason: Option<&str>,
        error_class: Option<&str>,
    ) -> errors::Result<()> {
        Ok(self.inner.close_root(stop_reason, error_class)?)
    }

    /// Adds the keys of `metadata` (a dict) to the node of call `node` (captured content).
    fn annotate(&self, node: NodeId, metadata: &Bound<'_, PyAny>) -> errors::Result<()> {
        let value = crate::convert::metadata(Some(metadata))?;
        if let Some(value) = value {
            self.inner.annotate(node, value)?;
        }
        Ok(())
    }

    /// The chain's figures for the limit behind a stop reason (see `Chain::describe`).
    #[pyo3(signature = (reason, estimate=None))]
    fn describe_stop(&self, reason: &str, estimate: Option<f64>) -> String {
        self.inner.chain().describe(reason, estimate)
    }

    fn abort(&self, reason: &str) -> bool {
        self.inner.chain().abort(reason)
    }

    fn cancel(&self, cause: StopCause) -> bool {
        self.inner.chain().cancel(cause.into())
    }

    #[getter]
    fn cancel_cause(&self) -> Option<StopCause> {
        self.inner.chain().cancel_cause().map(StopCause::from)
    }

    #[getter]
    fn aborted(&self) -> bool {
        self.inner.chain().is_aborted()
    }

    #[getter]
    fn in_flight(&self) -> u64 {
        self.inner.chain().in_flight()
    }

    #[getter]
    fn reserved_usd(&self) -> f64 {
        self.inner.chain().reserved_usd()
    }

    /// Adds a child chain's cost. Returns (new total, whether this pushed the chain to its
    /// ceiling and made the budget its cancellation cause).
    fn add_cost(&self, cost_usd: f64) -> errors::Result<(f64, bool)> {
        Ok(self.inner.chain().add_cost(cost_usd)?)
    }

    /// The chain's counters, read together under one lock.
    fn counters(&self) -> Counters {
        let c = self.inner.counters();
        Counters {
            step_count: c.steps,
            cost_usd: c.cost_usd,
            retries_used: c.retries,
            aborted: c.aborted,
            abort_reason: c.abort_reason,
            elapsed_ms: c.elapsed_ms,
            record_count: c.records,
        }
    }

    /// Finished calls `start..stop` in completion order.
    fn records(&self, start: usize, stop: usize) -> Vec<CallRecord> {
        let seconds = |ms: i64| ms as f64 / 1000.0;
        self.inner
            .records(start, stop)
            .into_iter()
            .map(|r| CallRecord {
                node_id: id_string(r.node),
                parent_id: r.parent.map(id_string),
                kind: r.kind.as_str(),
                operation_name: r.name,
                start_s: seconds(r.start_ms),
                end_s: r.end_ms.map(seconds),
                status: r.status.as_str(),
                cost_usd: r.cost_usd,
                retries_used: r.retries,
                error_message: r.error_message.map(String::from),
                tokens_in: r.tokens_in,
                tokens_out: r.tokens_out,
                model: r.model.map(String::from),
                error_class: r.error_class.map(String::from),
                stop_reason: r.stop_reason.map(String::from),
            })
            .collect()
    }

    /// The graph's aggregate counters (docs/design.md §3 key order), read without the graph lock.
    fn aggregates<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::recorder::snapshot::aggregates(py, &self.inner.aggregates())
    }

    /// The whole graph as JSON, in the format of `ExecutionGraph.snapshot_json()`.
    fn graph_snapshot_json<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        crate::recorder::snapshot::snapshot_json_bytes(py, self.inner.graph())
    }

    fn drain_divergence<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        // The call graph's own builder: one shape of event dict everywhere.
        let graph = self.inner.graph();
        crate::recorder::snapshot::divergence_events(
            py,
            graph.chain_id(),
            graph.drain_divergence_events(),
        )
    }

    fn __len__(&self) -> usize {
        self.inner.counters().records
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<ChainCore>()?;
    m.add("CallNotAdmitted", not_admitted_class(m.py())?.bind(m.py()))?;
    m.add_class::<ClosedCall>()?;
    m.add_class::<Counters>()?;
    binding::register(m)?;
    block::register(m)?;
    forms::register(m)?;
    current::register(m)?;
    m.add_class::<CallRecord>()?;
    m.add_class::<CallKind>()?;
    m.add_class::<CallStatus>()?;
    m.add_class::<StopCause>()?;
    m.add_function(wrap_pyfunction!(open_sync_calls, m)?)?;
    // The stop reasons are exported with the other vocabularies (`VOCABULARIES["stop_reason"]`).
    m.add("MAX_RECORDS", MAX_RECORDS)
}
