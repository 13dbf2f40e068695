//! `from_snapshot`: a graph rebuilt from what `snapshot_json()` wrote — same chain id, node
//! ids, fields and aggregates; the id counter continues after the highest id. Input is read
//! with the core's strict JSON reader and every field is checked, so a bad snapshot is a
//! clear error naming the field, never a half-built graph.

use super::snapshot_json::NODE_KEYS;

use super::aggregates::{AggregatesView, MAX_TOKENS_TOTAL};
use super::error::RecorderError;
use super::graph::{Config, Graph, State};
use super::kind::{Kind, Status};
use super::node::Node;
use crate::ids::{parse_id, NodeId};
use crate::json;
use crate::value::Value;

type Entries = [(crate::value::Key, Value)];

/// A node read from a snapshot, with its metadata and stop reason (kept beside the arena).
type LoadedNode = (Node, Option<Value>, Option<Box<str>>);

fn bad(msg: String) -> RecorderError {
    RecorderError::InvalidSnapshot(msg)
}

/// The entries of a JSON object, checked to hold exactly `keys`.
fn object<'a>(v: &'a Value, what: &str, keys: &[&str]) -> Result<&'a Entries, RecorderError> {
    let Value::Object(entries) = v else {
        return Err(bad(format!("{what} must be an object")));
    };
    if let Some((k, _)) = entries.iter().find(|(k, _)| !keys.contains(&&**k)) {
        return Err(bad(format!("{what} has an unknown key {k:?}")));
    }
    if let Some(k) = keys
        .iter()
        .find(|k| !entries.iter().any(|(e, _)| &**e == **k))
    {
        return Err(bad(format!("{what} is missing {k:?}")));
    }
    Ok(entries)
}

fn field<'a>(entries: &'a Entries, key: &str) -> &'a Value {
    // `object` checked that every expected key is present.
    entries
        .iter()
        .find(|(k, _)| &**k == key)
        .map_or(&Value::Null, |(_, v)| v)
}

struct Fields<'a> {
    entries: &'a Entries,
    what: String,
}

impl<'a> Fields<'a> {
    fn err(&self, key: &str, must: &str) -> RecorderError {
        bad(format!("{}[{key:?}] must be {must}", self.what))
    }

    fn get(&self, key: &str) -> &'a Value {
        field(self.entries, key)
    }

    fn str(&self, key: &str) -> Result<&'a str, RecorderError> {
        match self.get(key) {
            Value::Str(s) => Ok(s),
            _ => Err(self.err(key, "a string")),
        }
    }

    fn opt_str(&self, key: &str) -> Result<Option<&'a str>, RecorderError> {
        match self.get(key) {
            Value::Null => Ok(None),
            Value::Str(s) => Ok(Some(s)),
            _ => Err(self.err(key, "a string or null")),
        }
    }

    fn int(&self, key: &str, max: u64) -> Result<u64, RecorderError> {
        match self.get(key) {
            Value::Int(n) if *n >= 0 && (*n as u64) <= max => Ok(*n as u64),
            _ => Err(self.err(key, &format!("an integer from 0 to {max}"))),
        }
    }

    fn opt_int(&self, key: &str, max: u64) -> Result<Option<u64>, RecorderError> {
        match self.get(key) {
            Value::Null => Ok(None),
            _ => self.int(key, max).map(Some),
        }
    }

    fn timestamp(&self, key: &str) -> Result<Option<i64>, RecorderError> {
        match self.get(key) {
            Value::Null => Ok(None),
            Value::Int(n) => Ok(Some(*n)),
            _ => Err(self.err(key, "an integer (epoch milliseconds)")),
        }
    }

    fn amount(&self, key: &str) -> Result<f64, RecorderError> {
        let v = match self.get(key) {
            Value::Float(f) => *f,
            Value::Int(n) => *n as f64,
            _ => f64::NAN,
        };
        if v.is_finite() && v >= 0.0 {
            Ok(v)
        } else {
            Err(self.err(key, "a finite number >= 0"))
        }
    }

    fn id(&self, key: &str) -> Result<Option<NodeId>, RecorderError> {
        match self.get(key) {
            Value::Null => Ok(None),
            Value::Str(s) => parse_id(s)
                .map(Some)
                .ok_or_else(|| self.err(key, "a node id like \"n000001\"")),
            _ => Err(self.err(key, "a node id or null")),
        }
    }
}

const TOP_KEYS: [&str; 5] = [
    "chain_id",
    "root_id",
    "nodes",
    "aggregates",
    "snapshot_ts_ms",
];
const AGG_KEYS: [&str; 10] = [
    "total_cost_usd",
    "total_llm_calls",
    "total_tool_calls",
    "total_retries",
    "max_depth",
    "llm_calls_per_root",
    "tool_calls_per_root",
    "retries_per_root",
    "divergence_emitted_count",
    "total_tokens_out",
];

const I64_MAX: u64 = i64::MAX as u64;
/// New ids continue after the highest loaded one, so that one must leave room to count on.
const MAX_LOADED_ID: NodeId = I64_MAX - 1;

fn aggregates(v: &Value) -> Result<AggregatesView, RecorderError> {
    let f = Fields {
        entries: object(v, "aggregates", &AGG_KEYS)?,
        what: "aggregates".into(),
    };
    for ratio in [
        "llm_calls_per_root",
        "tool_calls_per_root",
        "retries_per_root",
    ] {
        f.amount(ratio)?;
    }
    Ok(AggregatesView {
        total_cost_usd: f.amount("total_cost_usd")?,
        total_llm_calls: f.int("total_llm_calls", I64_MAX)?,
        total_tool_calls: f.int("total_tool_calls", I64_MAX)?,
        total_retries: f.int("total_retries", I64_MAX)?,
        max_depth: f.int("max_depth", u64::from(u32::MAX))? as u32,
        divergence_emitted_count: f.int("divergence_emitted_count", I64_MAX)?,
        total_tokens_out: f.int("total_tokens_out", MAX_TOKENS_TOTAL)?,
    })
}

/// One node's fields, with its name, model and error class interned into `st`.
fn node(
    st: &mut State,
    key: &str,
    v: &Value,
    root: Option<NodeId>,
) -> Result<LoadedNode, RecorderError> {
    let what = format!("nodes[{key:?}]");
    let f = Fields {
        entries: object(v, &what, &NODE_KEYS)?,
        what,
    };
    let id = f
        .id("node_id")?
        .filter(|&id| id <= MAX_LOADED_ID)
        .ok_or_else(|| f.err("node_id", "a node id below n9223372036854775807"))?;
    if f.str("node_id")? != key {
        return Err(f.err("node_id", "equal to its key"));
    }
    let kind = Kind::parse(f.str("kind")?).map_err(|_| {
        f.err(
            "kind",
            "one of llm, tool, system, memory_read, memory_write",
        )
    })?;
    let status = Status::parse(f.str("status")?)
        .map_err(|_| f.err("status", "one of created, running, success, fail, halt"))?;
    let parent = f.id("parent_id")?;
    match parent {
        None if Some(id) != root => {
            return Err(f.err("parent_id", "a node id (only the root has none)"))
        }
        Some(_) if Some(id) == root => return Err(f.err("parent_id", "null for the root")),
        Some(p) if p >= id => return Err(f.err("parent_id", "an id older than the node's own")),
        _ => {}
    }
    if Some(id) == root && kind != Kind::System {
        return Err(f.err("kind", "\"system\" for the root"));
    }
    let start = f
        .timestamp("start_ts_ms")?
        .ok_or_else(|| f.err("start_ts_ms", "an integer"))?;
    let end = f.timestamp("end_ts_ms")?;
    if end.is_some() != status.is_terminal() {
        return Err(f.err("end_ts_ms", "set exactly when the status is terminal"));
    }
    let retries = f.int("retries_used", u64::from(u32::MAX))? as u32;
    let cost = f.amount("cost_usd")?;
    let tokens_in = f.opt_int("tokens_in", I64_MAX)?;
    let tokens_out = f.opt_int("tokens_out", I64_MAX)?;
    let name = f.str("name")?;
    let model = f.opt_str("model")?;
    let error_class = f.opt_str("error_class")?;
    let stop_reason = f.opt_str("stop_reason")?;
    let metadata = match f.get("metadata") {
        Value::Object(d) if d.is_empty() => None,
        m @ Value::Object(_) => Some(m.clone()),
        _ => return Err(f.err("metadata", "an object")),
    };
    // Every check is done: only now are names interned (each holds a reference).
    let name = st.names.intern(name);
    let model = model.map(|m| st.names.intern(m));
    let mut n = Node::new(id, parent.unwrap_or(0), start, kind, name, model);
    n.status = status;
    if let Some(e) = end {
        n.set_end_ms(e);
    }
    n.retries = retries;
    n.cost_usd = cost;
    n.set_tokens(tokens_in, tokens_out);
    n.set_error_class(error_class.map(|e| st.names.intern(e)));
    Ok((n, metadata, stop_reason.map(Into::into)))
}

impl Graph {
    /// Rebuilds a graph from `snapshot_json()` output (or the same document written by
    /// `json.dumps(snapshot())`). A node whose parent was pruned gets depth 1: depths are
    /// not part of the snapshot, and `max_depth` comes from the saved aggregates.
    pub fn from_snapshot_json(text: &[u8], config: Config) -> Result<Graph, RecorderError> {
        let doc = json::read(text).map_err(|e| bad(format!("not strict JSON: {e}")))?;
        let top = Fields {
            entries: object(&doc, "the snapshot", &TOP_KEYS)?,
            what: "snapshot".into(),
        };
        let chain_id = top.str("chain_id")?;
        if chain_id.is_empty() {
            return Err(top.err("chain_id", "a non-empty string"));
        }
        top.timestamp("snapshot_ts_ms")?
            .ok_or_else(|| top.err("snapshot_ts_ms", "an integer"))?;
        let root = top.id("root_id")?;
        let agg = aggregates(top.get("aggregates"))?;
        let Value::Object(nodes) = top.get("nodes") else {
            return Err(top.err("nodes", "an object"));
        };
        if root.is_none() && !nodes.is_empty() {
            return Err(top.err("root_id", "set when there are nodes"));
        }
        if let Some(r) = root {
            if !nodes.iter().any(|(k, _)| parse_id(k) == Some(r)) {
                return Err(top.err("root_id", "the id of a node in \"nodes\""));
            }
        }

        let graph = Graph::new(chain_id, config)?;
        let mut st = State::new();
        let mut parsed = Vec::with_capacity(nodes.len());
        for (key, v) in nodes.iter() {
            parsed.push(node(&mut st, key, v, root)?);
        }
        parsed.sort_unstable_by_key(|(n, _, _)| n.id);
        let mut depths: rustc_hash::FxHashMap<NodeId, u32> = Default::default();
        for (mut n, metadata, reason) in parsed {
            n.depth = match n.parent_id() {
                None => 0,
                Some(p) => depths.get(&p).map_or(1, |d| d.saturating_add(1)),
            };
            depths.insert(n.id, n.depth);
            st.counter = st.counter.max(n.id);
            if graph.config().max_nodes > 0 && n.status.is_terminal() && Some(n.id) != root {
                st.evictable.push(n.id);
            }
            st.arena.load(n, metadata, reason.as_deref());
        }
        st.root = root;
        st.divergence.restored_emitted = agg.divergence_emitted_count;
        graph.agg().restore(&agg);
        graph.agg().set_live_nodes(st.arena.len());
        *graph.lock() = st;
        Ok(graph)
    }
}
