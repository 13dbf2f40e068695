//! Python dicts for `snapshot()`, `node()`, `aggregates()` and divergence events.
//! Keys and repeated labels are created once and shared; everything mutable is fresh.

use std::mem::MaybeUninit;

use chainwarden_core::ids::{format_id_bytes, NodeId};
use chainwarden_core::json::Cursor;
use chainwarden_core::recorder::divergence::DivergenceEvent;
use chainwarden_core::recorder::graph::{now_ms, Graph, State};
use chainwarden_core::recorder::node::Node;
use chainwarden_core::recorder::snapshot_json::NODE_KEYS;
use chainwarden_core::recorder::{AggregatesView, Kind, Status};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBytes, PyDict, PyFloat, PyList, PyString};

use crate::convert::{metadata_to_py, py_ascii};
use crate::exceptions::invalid_state;

struct Keys {
    node: [Py<PyString>; 15],
    /// Every node key mapped to None: copying it gives a dict already sized and keyed.
    template: Py<PyDict>,
    kinds: [Py<PyString>; 5],
    statuses: [Py<PyString>; 5],
}

static KEYS: PyOnceLock<Keys> = PyOnceLock::new();

fn keys(py: Python<'_>) -> &Keys {
    KEYS.get_or_init(py, || {
        let node = NODE_KEYS.map(|k| PyString::intern(py, k).unbind());
        let template = PyDict::new(py);
        for k in &node {
            template
                .set_item(k.bind(py), py.None())
                .expect("str keys always insert");
        }
        Keys {
            node,
            template: template.unbind(),
            kinds: Kind::ALL.map(|k| PyString::intern(py, k.as_str()).unbind()),
            statuses: Status::ALL.map(|s| PyString::intern(py, s.as_str()).unbind()),
        }
    })
}

pub fn id_str(py: Python<'_>, id: NodeId) -> Bound<'_, PyString> {
    py_ascii(py, format_id_bytes(id, &mut [0; 24]))
}

/// Per-call cache of label strings, indexed by interned symbol.
struct Labels<'py, 'a> {
    py: Python<'py>,
    st: &'a State,
    cache: Vec<Option<Bound<'py, PyString>>>,
    last_parent: Option<(NodeId, Bound<'py, PyString>)>,
    /// Timestamps and costs repeat from node to node (calls in the same millisecond, the
    /// same price); immutable numbers can be shared instead of allocated again.
    last_ms: Option<(i64, Bound<'py, PyAny>)>,
    last_cost: Option<(u64, Bound<'py, PyAny>)>,
}

impl<'py> Labels<'py, '_> {
    fn get(&mut self, sym: u32) -> Bound<'py, PyString> {
        let py = self.py;
        let st = self.st;
        self.cache[sym as usize]
            .get_or_insert_with(|| PyString::new(py, st.names.resolve(sym)))
            .clone()
    }

    fn millis(&mut self, ms: i64) -> Bound<'py, PyAny> {
        match &self.last_ms {
            Some((last, obj)) if *last == ms => obj.clone(),
            _ => {
                let obj = ms
                    .into_pyobject(self.py)
                    .expect("int conversion cannot fail")
                    .into_any();
                self.last_ms = Some((ms, obj.clone()));
                obj
            }
        }
    }

    fn cost(&mut self, cost: f64) -> Bound<'py, PyAny> {
        match &self.last_cost {
            Some((bits, obj)) if *bits == cost.to_bits() => obj.clone(),
            _ => {
                let obj = PyFloat::new(self.py, cost).into_any();
                self.last_cost = Some((cost.to_bits(), obj.clone()));
                obj
            }
        }
    }

    /// Siblings share a parent, so the last parent id string is reused.
    fn parent(&mut self, id: NodeId) -> Bound<'py, PyString> {
        match &self.last_parent {
            Some((last, s)) if *last == id => s.clone(),
            _ => {
                let s = id_str(self.py, id);
                self.last_parent = Some((id, s.clone()));
                s
            }
        }
    }
}

/// Stores `value` (a new reference, or null after a failed constructor) under `key`.
fn put(d: &Bound<'_, PyDict>, key: &Py<PyString>, value: *mut ffi::PyObject) -> PyResult<()> {
    let py = d.py();
    if value.is_null() {
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `d` and `key` are live objects; `value` is an owned, non-null reference that
    // PyDict_SetItem borrows (it takes its own reference), so we release ours afterwards.
    let rc = unsafe {
        let rc = ffi::PyDict_SetItem(d.as_ptr(), key.as_ptr(), value);
        ffi::Py_DECREF(value);
        rc
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(PyErr::fetch(py))
    }
}

fn put_obj(d: &Bound<'_, PyDict>, key: &Py<PyString>, value: &Bound<'_, PyAny>) -> PyResult<()> {
    put(d, key, value.clone().into_ptr())
}

/// A field projected to a comparable word, to tell whether it differs from the previous node.
type Field = fn(&Node) -> u64;

const NO: u64 = u64::MAX;

fn opt(v: Option<u64>) -> u64 {
    v.unwrap_or(NO)
}

/// The dict for `n`. Neighbouring nodes usually share most values (same parent, kind, name,
/// status, price, millisecond), so the previous node's dict is copied and only what differs
/// is written: a dict insert is the dominant cost here. All shared values are immutable;
/// `metadata` is always a fresh dict.
fn node_dict<'py>(
    py: Python<'py>,
    n: &Node,
    id: &Bound<'py, PyString>,
    prev: Option<(&Node, &Bound<'py, PyDict>)>,
    labels: &mut Labels<'py, '_>,
) -> PyResult<Bound<'py, PyDict>> {
    let keys = keys(py);
    let k = &keys.node;
    let (d, prev) = match prev {
        Some((node, dict)) => (dict.copy()?, Some(node)),
        // Every value the template holds is None, so None fields need no write.
        None => (keys.template.bind(py).copy()?, None),
    };
    let changed = |f: Field| prev.is_none_or(|p| f(p) != f(n));
    let none = py.None().into_bound(py);
    put_obj(&d, &k[0], id.as_any())?;
    if changed(|n| n.parent) {
        match n.parent_id() {
            Some(p) => put_obj(&d, &k[1], labels.parent(p).as_any())?,
            None => put_obj(&d, &k[1], &none)?,
        }
    }
    if changed(|n| n.kind as u64) {
        put_obj(&d, &k[2], keys.kinds[n.kind as usize].bind(py))?;
    }
    if changed(|n| u64::from(n.name)) {
        put_obj(&d, &k[3], labels.get(n.name).as_any())?;
    }
    if changed(|n| n.start_ms as u64) {
        put_obj(&d, &k[4], &labels.millis(n.start_ms))?;
    }
    if changed(|n| opt(n.end_ms().map(|e| e as u64))) {
        match n.end_ms() {
            Some(e) => put_obj(&d, &k[5], &labels.millis(e))?,
            None => put_obj(&d, &k[5], &none)?,
        }
    }
    if changed(|n| n.status as u64) {
        put_obj(&d, &k[6], keys.statuses[n.status as usize].bind(py))?;
    }
    if changed(|n| opt(n.model().map(u64::from))) {
        match n.model() {
            Some(m) => put_obj(&d, &k[7], labels.get(m).as_any())?,
            None => put_obj(&d, &k[7], &none)?,
        }
    }
    if changed(|n| u64::from(n.retries)) {
        // SAFETY: a plain value constructor; null is handled by `put`.
        put(&d, &k[8], unsafe {
            ffi::PyLong_FromUnsignedLongLong(u64::from(n.retries))
        })?;
    }
    if changed(|n| n.cost_usd.to_bits()) {
        put_obj(&d, &k[9], &labels.cost(n.cost_usd))?;
    }
    for (key, get) in [
        (&k[10], Node::tokens_in as fn(&Node) -> Option<u64>),
        (&k[11], Node::tokens_out),
    ] {
        if prev.is_none_or(|p| get(p) != get(n)) {
            match get(n) {
                // SAFETY: as above.
                Some(t) => put(&d, key, unsafe { ffi::PyLong_FromUnsignedLongLong(t) })?,
                None => put_obj(&d, key, &none)?,
            }
        }
    }
    let arena = &labels.st.arena;
    let reason = arena.stop_reason(n);
    if prev.is_none_or(|p| arena.stop_reason(p) != reason) {
        match reason {
            Some(r) => put_obj(&d, &k[12], PyString::new(py, r).as_any())?,
            None => put_obj(&d, &k[12], &none)?,
        }
    }
    if changed(|n| opt(n.error_class().map(u64::from))) {
        match n.error_class() {
            Some(e) => put_obj(&d, &k[13], labels.get(e).as_any())?,
            None => put_obj(&d, &k[13], &none)?,
        }
    }
    let metadata = metadata_to_py(py, labels.st.arena.metadata(n))?;
    put_obj(&d, &k[14], metadata.as_any())?;
    // SAFETY: both pointers are live dicts. Inserting the metadata dict marked `d` as a
    // possible cycle member; when metadata holds no containers (the common case) neither
    // can be part of a cycle, so `d` is untracked as CPython's own collector would do on
    // its next pass. Inserting a container later re-tracks it.
    unsafe {
        if ffi::PyObject_GC_IsTracked(metadata.as_ptr()) == 0 {
            ffi::PyObject_GC_UnTrack(d.as_ptr().cast());
        }
    }
    Ok(d)
}

/// Pauses the cyclic collector while a large acyclic tree is built: every dict allocation
/// would otherwise count towards a collection that can find nothing to free.
pub(crate) struct GcPause(bool);

impl GcPause {
    pub(crate) fn new() -> Self {
        // SAFETY: called with the interpreter attached; the previous state is restored on drop.
        GcPause(unsafe { pyo3::ffi::PyGC_Disable() } != 0)
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: as above.
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

pub fn snapshot<'py>(py: Python<'py>, graph: &Graph) -> PyResult<Bound<'py, PyDict>> {
    let _gc = GcPause::new();
    let st = graph.lock();
    let nodes = PyDict::new(py);
    let mut labels = Labels {
        py,
        st: &st,
        cache: vec![None; st.names.len()],
        last_parent: None,
        last_ms: None,
        last_cost: None,
    };
    let mut prev: Option<(&Node, Bound<'py, PyDict>)> = None;
    for n in st.arena.iter() {
        let id = id_str(py, n.id);
        let d = node_dict(py, n, &id, prev.as_ref().map(|(p, d)| (*p, d)), &mut labels)?;
        nodes.set_item(id, &d)?;
        prev = Some((n, d));
    }
    let root = st.root;
    drop(labels);
    drop(st);
    let out = PyDict::new(py);
    out.set_item("chain_id", graph.chain_id())?;
    out.set_item("root_id", root.map(|r| id_str(py, r)))?;
    out.set_item("nodes", nodes)?;
    out.set_item("aggregates", aggregates(py, &graph.aggregates())?)?;
    out.set_item("snapshot_ts_ms", now_ms())?;
    Ok(out)
}

pub fn node<'py>(
    py: Python<'py>,
    graph: &Graph,
    id: Option<NodeId>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    let st = graph.lock();
    let Some(n) = id.and_then(|id| st.arena.get(id)) else {
        return Ok(None);
    };
    let mut labels = Labels {
        py,
        st: &st,
        cache: vec![None; st.names.len()],
        last_parent: None,
        last_ms: None,
        last_cost: None,
    };
    node_dict(py, n, &id_str(py, n.id), None, &mut labels).map(Some)
}

pub fn aggregates<'py>(py: Python<'py>, a: &AggregatesView) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("total_cost_usd", a.total_cost_usd)?;
    d.set_item("total_llm_calls", a.total_llm_calls)?;
    d.set_item("total_tool_calls", a.total_tool_calls)?;
    d.set_item("total_retries", a.total_retries)?;
    d.set_item("max_depth", a.max_depth)?;
    d.set_item("llm_calls_per_root", a.llm_calls_per_root())?;
    d.set_item("tool_calls_per_root", a.tool_calls_per_root())?;
    d.set_item("retries_per_root", a.retries_per_root())?;
    d.set_item("divergence_emitted_count", a.divergence_emitted_count)?;
    d.set_item("total_tokens_out", a.total_tokens_out)?;
    Ok(d)
}

fn rate_event(
    d: &Bound<'_, PyDict>,
    event_type: &str,
    rate_key: &str,
    rate: f64,
    threshold: f64,
    node: NodeId,
) -> PyResult<()> {
    d.set_item("event_type", event_type)?;
    d.set_item("severity", "warn")?;
    d.set_item(rate_key, rate)?;
    d.set_item("threshold", threshold)?;
    d.set_item("node_id", id_str(d.py(), node))
}

pub fn divergence_events<'py>(
    py: Python<'py>,
    chain_id: &str,
    events: Vec<(DivergenceEvent, Option<String>)>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (e, name) in events {
        let d = PyDict::new(py);
        match e {
            DivergenceEvent::Pattern {
                mode,
                kind,
                repeat_count,
                ..
            } => {
                d.set_item("event_type", "divergence_suspected")?;
                d.set_item("severity", "warn")?;
                d.set_item("detection_mode", mode.as_str())?;
                d.set_item(
                    "signature",
                    PyList::new(py, [kind.as_str(), name.as_deref().unwrap_or("")])?,
                )?;
                d.set_item("repeat_count", repeat_count)?;
            }
            DivergenceEvent::CostRate {
                cost_rate: rate,
                threshold,
                node,
            } => {
                rate_event(&d, "COST_RATE_EXCEEDED", "cost_rate", rate, threshold, node)?;
            }
            DivergenceEvent::TokenVelocity {
                token_velocity: rate,
                threshold,
                node,
            } => {
                rate_event(
                    &d,
                    "TOKEN_VELOCITY_EXCEEDED",
                    "token_velocity",
                    rate,
                    threshold,
                    node,
                )?;
            }
        }
        d.set_item("chain_id", chain_id)?;
        out.append(d)?;
    }
    Ok(out)
}

/// `snapshot_json()` written straight into a Python `bytes` of the exact size: one counting pass,
/// one writing pass, no intermediate `Vec` and no copy (docs/design.md §23).
pub fn snapshot_json_bytes<'py>(py: Python<'py>, graph: &Graph) -> PyResult<Bound<'py, PyBytes>> {
    let mut w = graph.snapshot_json_writer();
    let len = w.byte_len();
    let size = ffi::Py_ssize_t::try_from(len).map_err(|_| {
        invalid_state(
            py,
            "snapshot_json: the snapshot is too large for bytes".to_owned(),
        )
    })?;
    // An uninitialised bytes object (PyBytes::new_with zeroes it first: 14% of a 30 MB snapshot),
    // filled by the cursor; it reaches Python only once every byte is written.
    // SAFETY: a null source asks CPython for `size` uninitialised bytes; the pointer is owned here.
    let bytes = unsafe {
        Bound::from_owned_ptr_or_err(py, ffi::PyBytes_FromStringAndSize(std::ptr::null(), size))?
            .cast_into_unchecked::<PyBytes>()
    };
    // SAFETY: the object is a fresh bytes of exactly `len` bytes that nothing else references yet.
    let buf = unsafe {
        std::slice::from_raw_parts_mut(
            ffi::PyBytes_AsString(bytes.as_ptr()).cast::<MaybeUninit<u8>>(),
            len,
        )
    };
    if w.write_into_uninit(Cursor::uninit(buf)) {
        Ok(bytes)
    } else {
        // Unreachable while the writer holds the lock and its frozen aggregates; kept as a clean
        // error rather than a panic.
        Err(invalid_state(
            py,
            "snapshot_json: the snapshot changed while it was written".to_owned(),
        ))
    }
}
