//! `snapshot()` encoded straight to JSON bytes, identical to `json.dumps(snapshot())`.

use super::aggregates::AggregatesView;
use super::arena::Extras;
use super::graph::{now_ms, Graph, State};
use super::node::Node;
use crate::ids::{format_id_bytes, id_len, NodeId};
use crate::json::{self, write_f64, write_i64, write_u64, Counter, Cursor, Layout, Sink};
use parking_lot::MutexGuard;

/// The snapshot's layout is Python's `json.dumps` defaults (docs/design.md §23).
fn write_str<S: Sink + ?Sized>(out: &mut S, s: &str) {
    json::write_str(out, s, Layout::Python);
}

/// The keys of one node in `snapshot()` / `snapshot_json()`, in order: the layout the bindings build and
/// `from_snapshot` reads.
pub const NODE_KEYS: [&str; 15] = [
    "node_id",
    "parent_id",
    "kind",
    "name",
    "start_ts_ms",
    "end_ts_ms",
    "status",
    "model",
    "retries_used",
    "cost_usd",
    "tokens_in",
    "tokens_out",
    "stop_reason",
    "error_class",
    "metadata",
];

fn write_id<S: Sink + ?Sized>(out: &mut S, id: NodeId) {
    if out.counts_only() {
        out.fill(b'"', id_len(id) + 2);
        return;
    }
    let mut buf = [0u8; 24];
    let id = format_id_bytes(id, &mut buf);
    if let Ok(fixed) = <&[u8; 7]>::try_from(id) {
        // Ids below a million: a fixed-size copy the compiler inlines.
        let mut quoted = [b'"'; 9];
        quoted[1..8].copy_from_slice(fixed);
        out.extend_from_slice(&quoted);
    } else {
        out.push(b'"');
        out.extend_from_slice(id);
        out.push(b'"');
    }
}

/// Costs repeat (0.0 for tools, fixed prices per call): reuse the last encoding.
#[derive(Default)]
struct FloatCache {
    bits: Option<u64>,
    text: Vec<u8>,
}

impl FloatCache {
    fn write<S: Sink + ?Sized>(&mut self, out: &mut S, v: f64) {
        if self.bits != Some(v.to_bits()) {
            self.text.clear();
            write_f64(&mut self.text, v);
            self.bits = Some(v.to_bits());
        }
        out.extend_from_slice(&self.text);
    }
}

fn write_opt_u64<S: Sink + ?Sized>(out: &mut S, v: Option<u64>) {
    match v {
        Some(v) => write_u64(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

fn write_opt_str<S: Sink + ?Sized>(out: &mut S, v: Option<&str>) {
    match v {
        Some(v) => write_str(out, v),
        None => out.extend_from_slice(b"null"),
    }
}

/// Appends the ten aggregate keys in the documented order.
pub fn write_aggregates<S: Sink + ?Sized>(out: &mut S, a: &AggregatesView) {
    out.extend_from_slice(b"{\"total_cost_usd\": ");
    write_f64(out, a.total_cost_usd);
    out.extend_from_slice(b", \"total_llm_calls\": ");
    write_u64(out, a.total_llm_calls);
    out.extend_from_slice(b", \"total_tool_calls\": ");
    write_u64(out, a.total_tool_calls);
    out.extend_from_slice(b", \"total_retries\": ");
    write_u64(out, a.total_retries);
    out.extend_from_slice(b", \"max_depth\": ");
    write_u64(out, u64::from(a.max_depth));
    out.extend_from_slice(b", \"llm_calls_per_root\": ");
    write_f64(out, a.llm_calls_per_root());
    out.extend_from_slice(b", \"tool_calls_per_root\": ");
    write_f64(out, a.tool_calls_per_root());
    out.extend_from_slice(b", \"retries_per_root\": ");
    write_f64(out, a.retries_per_root());
    out.extend_from_slice(b", \"divergence_emitted_count\": ");
    write_u64(out, a.divergence_emitted_count);
    out.extend_from_slice(b", \"total_tokens_out\": ");
    write_u64(out, a.total_tokens_out);
    out.push(b'}');
}

/// A snapshot frozen for writing: the graph lock, the aggregates and the timestamp are taken once,
/// so the sizing pass ([`SnapshotJson::byte_len`]) and the writing pass produce the same bytes and the
/// bindings can write straight into a pre-sized Python `bytes` (docs/design.md §23).
pub struct SnapshotJson<'g> {
    graph: &'g Graph,
    st: MutexGuard<'g, State>,
    aggregates: AggregatesView,
    ts_ms: i64,
    /// Names repeat across nodes: each is escaped once and reused by both passes.
    names: Vec<Option<Vec<u8>>>,
}

impl Graph {
    /// The snapshot, frozen until the returned writer is dropped (it holds the graph lock).
    pub fn snapshot_json_writer(&self) -> SnapshotJson<'_> {
        let st = self.lock();
        let names = vec![None; st.names.len()];
        SnapshotJson {
            graph: self,
            st,
            aggregates: self.aggregates(),
            ts_ms: now_ms(),
            names,
        }
    }

    pub fn snapshot_json(&self) -> Vec<u8> {
        let mut w = self.snapshot_json_writer();
        let mut out = Vec::with_capacity(w.byte_len());
        w.write(&mut out);
        out
    }
}

impl SnapshotJson<'_> {
    /// The exact length of the text [`SnapshotJson::write`] produces.
    pub fn byte_len(&mut self) -> usize {
        let mut n = Counter::default();
        self.write(&mut n);
        n.0
    }

    /// Writes the snapshot into `buf`; false (with `buf` partly written) unless it fits exactly.
    pub fn write_into(&mut self, buf: &mut [u8]) -> bool {
        self.write_into_uninit(Cursor::new(buf))
    }

    /// As [`SnapshotJson::write_into`] for a buffer that starts uninitialised: every byte is
    /// initialised when it returns true.
    pub fn write_into_uninit(&mut self, mut cursor: Cursor<'_>) -> bool {
        self.write(&mut cursor);
        cursor.finish()
    }

    pub fn write<S: Sink + ?Sized>(&mut self, out: &mut S) {
        let st = &*self.st;
        let escaped = &mut self.names;
        let mut sym = |out: &mut S, s: u32| {
            let slot = &mut escaped[s as usize];
            let bytes = slot.get_or_insert_with(|| {
                let mut b = Vec::new();
                write_str(&mut b, st.names.resolve(s));
                b
            });
            out.extend_from_slice(bytes);
        };
        out.extend_from_slice(b"{\"chain_id\": ");
        write_str(out, self.graph.chain_id());
        out.extend_from_slice(b", \"root_id\": ");
        match st.root {
            Some(r) => write_id(out, r),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b", \"nodes\": {");
        let mut costs = FloatCache::default();
        for (i, n) in st.arena.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b", ");
            }
            write_id(out, n.id);
            out.extend_from_slice(b": ");
            write_node(out, n, st.arena.extras(n), &mut costs, &mut sym);
        }
        out.extend_from_slice(b"}, \"aggregates\": ");
        write_aggregates(out, &self.aggregates);
        out.extend_from_slice(b", \"snapshot_ts_ms\": ");
        write_i64(out, self.ts_ms);
        out.push(b'}');
    }
}

fn write_node<S: Sink + ?Sized>(
    out: &mut S,
    n: &Node,
    extras: Option<&Extras>,
    costs: &mut FloatCache,
    sym: &mut impl FnMut(&mut S, u32),
) {
    out.extend_from_slice(b"{\"node_id\": ");
    write_id(out, n.id);
    out.extend_from_slice(b", \"parent_id\": ");
    match n.parent_id() {
        Some(p) => write_id(out, p),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b", \"kind\": \"");
    out.extend_from_slice(n.kind.as_str().as_bytes());
    out.extend_from_slice(b"\", \"name\": ");
    sym(out, n.name);
    out.extend_from_slice(b", \"start_ts_ms\": ");
    write_i64(out, n.start_ms);
    out.extend_from_slice(b", \"end_ts_ms\": ");
    match n.end_ms() {
        Some(e) => write_i64(out, e),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b", \"status\": \"");
    out.extend_from_slice(n.status.as_str().as_bytes());
    out.extend_from_slice(b"\", \"model\": ");
    match n.model() {
        Some(m) => sym(out, m),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b", \"retries_used\": ");
    write_u64(out, u64::from(n.retries));
    out.extend_from_slice(b", \"cost_usd\": ");
    costs.write(out, n.cost_usd);
    out.extend_from_slice(b", \"tokens_in\": ");
    write_opt_u64(out, n.tokens_in());
    out.extend_from_slice(b", \"tokens_out\": ");
    write_opt_u64(out, n.tokens_out());
    out.extend_from_slice(b", \"stop_reason\": ");
    write_opt_str(out, extras.and_then(|e| e.stop_reason.as_deref()));
    out.extend_from_slice(b", \"error_class\": ");
    match n.error_class() {
        Some(e) => sym(out, e),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b", \"metadata\": ");
    match extras.and_then(|e| e.metadata.as_deref()) {
        Some(m) => json::write_value(out, m, Layout::Python),
        None => out.extend_from_slice(b"{}"),
    }
    out.push(b'}');
}
