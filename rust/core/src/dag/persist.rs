//! Lossless JSON round trip: arena order, every field, and the event log.

use std::sync::Arc;

use super::arena::{Dag, Edge, Node};
use super::error::{DagError, DagResult};
use super::events::Event;
use super::records::{Field, RecordSink};
use super::types::{EdgeType, NodeType, State};
use crate::json;
use crate::value::Value;

const FORMAT: &str = "chainwarden.dag";
const VERSION: i64 = 1;

fn bad(what: impl Into<String>) -> DagError {
    DagError::invalid(format!("invalid graph JSON: {}", what.into()))
}

/// Moves `key`'s value out of a record (the document is consumed, so payloads are never copied).
fn field(v: &mut Value, key: &str) -> DagResult<Value> {
    let slot = match v {
        Value::Object(m) => m.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v),
        _ => None,
    };
    slot.map(|v| std::mem::replace(v, Value::Null))
        .ok_or_else(|| bad(format!("missing {key:?}")))
}

fn string(v: &mut Value, key: &str) -> DagResult<String> {
    match field(v, key)? {
        Value::Str(s) if !s.is_empty() => Ok(s),
        _ => Err(bad(format!("{key:?} must be a non-empty string"))),
    }
}

fn opt_string(v: &mut Value, key: &str) -> DagResult<Option<String>> {
    match field(v, key)? {
        Value::Null => Ok(None),
        Value::Str(s) => Ok(Some(s)),
        _ => Err(bad(format!("{key:?} must be a string or null"))),
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Float(f) => Some(*f),
        Value::Int(i) => Some(*i as f64),
        _ => None,
    }
}

fn time(v: &mut Value, key: &str) -> DagResult<f64> {
    number(&field(v, key)?).ok_or_else(|| bad(format!("{key:?} must be a number")))
}

fn opt_time(v: &mut Value, key: &str) -> DagResult<Option<f64>> {
    match field(v, key)? {
        Value::Null => Ok(None),
        other => number(&other)
            .map(Some)
            .ok_or_else(|| bad(format!("{key:?} must be a number or null"))),
    }
}

fn object(v: &mut Value, key: &str) -> DagResult<Value> {
    match field(v, key)? {
        o @ Value::Object(_) => Ok(o),
        _ => Err(bad(format!("{key:?} must be an object"))),
    }
}

fn array(v: &mut Value, key: &str) -> DagResult<Vec<Value>> {
    match field(v, key)? {
        Value::Array(a) => Ok(a),
        _ => Err(bad(format!("{key:?} must be an array"))),
    }
}

const COMPACT: json::Layout = json::Layout::Compact;

/// Writes records as JSON objects into `out`, one field at a time.
struct JsonSink {
    out: Vec<u8>,
    first: bool,
}

impl JsonSink {
    fn array<T>(&mut self, items: &[T], mut visit: impl FnMut(&mut JsonSink, &T)) {
        self.out.push(b'[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                self.out.push(b',');
            }
            self.out.push(b'{');
            self.first = true;
            visit(self, item);
            self.out.push(b'}');
        }
        self.out.push(b']');
    }
}

impl RecordSink for JsonSink {
    fn field(&mut self, key: &'static str, value: Field<'_>) {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        // Record keys are fixed identifiers (`dag/records.rs`), never in need of escaping: written as they
        // are, without the escape scan (a third of `to_json`'s time went to scanning keys).
        debug_assert!(key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'));
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        let out = &mut self.out;
        match value {
            Field::Str(s) | Field::OptStr(Some(s)) => json::write_str(out, s, COMPACT),
            Field::Float(f) | Field::OptFloat(Some(f)) => json::write_f64(out, f),
            Field::OptStr(None) | Field::OptFloat(None) => out.extend_from_slice(b"null"),
            Field::Value(v) => json::write_value(out, v, COMPACT),
        }
    }
}

impl Dag {
    /// The whole graph as compact JSON, written straight from the arena (no intermediate tree).
    pub fn to_json(&self) -> String {
        let mut w = JsonSink {
            out: Vec::with_capacity(64 + self.nodes.len() * 512 + self.edges.len() * 256),
            first: true,
        };
        w.out.extend_from_slice(b"{\"format\":");
        json::write_str(&mut w.out, FORMAT, COMPACT);
        w.out.extend_from_slice(b",\"version\":");
        json::write_i64(&mut w.out, VERSION);
        w.out.extend_from_slice(b",\"graph_id\":");
        json::write_str(&mut w.out, &self.graph_id, COMPACT);
        // Written only when off, so the files of conversation graphs (the default) are unchanged.
        if !self.leaf_repair {
            w.out.extend_from_slice(b",\"leaf_repair\":false");
        }
        w.out.extend_from_slice(b",\"nodes\":");
        w.array(&self.nodes, |w, n| self.visit_node(n, w));
        w.out.extend_from_slice(b",\"edges\":");
        w.array(&self.edges, |w, e| self.visit_edge(e, w));
        w.out.extend_from_slice(b",\"events\":");
        w.array(&self.events, |w, e| Dag::visit_event(e, w));
        w.out.push(b'}');
        json::into_string(w.out)
    }

    pub fn from_json(text: &str) -> DagResult<Dag> {
        let mut doc = json::parse(text).map_err(bad)?;
        if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(bad("not a chainwarden.dag document"));
        }
        if doc.get("version") != Some(&Value::Int(VERSION)) {
            return Err(bad("unsupported version"));
        }
        let mut dag = Dag::new(Some(string(&mut doc, "graph_id")?));
        dag.leaf_repair = match doc.get("leaf_repair") {
            None => true,
            Some(Value::Bool(on)) => *on,
            Some(_) => return Err(bad("\"leaf_repair\" must be a boolean")),
        };
        dag.load_nodes(array(&mut doc, "nodes")?)?;
        dag.load_edges(array(&mut doc, "edges")?)?;
        dag.load_events(array(&mut doc, "events")?)?;
        dag.finish_load()
    }

    /// Parsed node records, in arena order, into a graph being loaded.
    pub(crate) fn load_nodes(&mut self, records: Vec<Value>) -> DagResult<()> {
        for mut rec in records {
            let id = string(&mut rec, "node_id")?;
            if self.node_index.contains_key(id.as_str()) {
                return Err(bad(format!("duplicate node id {id:?}")));
            }
            let node = parse_node(&mut rec, id)?;
            self.push_node(node);
        }
        Ok(())
    }

    pub(crate) fn load_edges(&mut self, records: Vec<Value>) -> DagResult<()> {
        for mut rec in records {
            let id = string(&mut rec, "edge_id")?;
            if self.edge_index.contains_key(id.as_str()) {
                return Err(bad(format!("duplicate edge id {id:?}")));
            }
            let edge = parse_edge(self, &mut rec, id)?;
            self.push_edge(edge);
        }
        Ok(())
    }

    pub(crate) fn load_events(&mut self, records: Vec<Value>) -> DagResult<()> {
        for mut rec in records {
            self.events.push(parse_event(&mut rec)?);
        }
        Ok(())
    }

    /// The checks and derived state of a loaded graph.
    pub(crate) fn finish_load(mut self) -> DagResult<Dag> {
        if !self.active_is_acyclic() {
            return Err(bad("the active graph has a cycle"));
        }
        self.flush();
        Ok(self)
    }
}

/// One node record (the shape of `node_record`) as an arena node, its fields moved out of `rec`; its
/// counters are recomputed on flush.
pub(crate) fn parse_node(rec: &mut Value, id: String) -> DagResult<Node> {
    Ok(Node {
        id: Arc::from(id),
        node_type: NodeType::parse(&string(rec, "node_type")?)?,
        state: State::parse(&string(rec, "state")?)?,
        input: object(rec, "input")?,
        output: object(rec, "output")?,
        output_preview: object(rec, "output_preview")?,
        metadata: object(rec, "metadata")?,
        retry_of_id: opt_string(rec, "retry_of_id")?.map(Arc::from),
        compressed_by_id: opt_string(rec, "compressed_by_id")?.map(Arc::from),
        compressed_at: opt_time(rec, "compressed_at")?,
        started_at: opt_time(rec, "started_at")?,
        finished_at: opt_time(rec, "finished_at")?,
        created_at: time(rec, "created_at")?,
        blockers: 0,
        failed_deps: 0,
        out_blocking: 0,
        in_sets: 0,
    })
}

/// One edge record whose endpoints are nodes of `dag`.
pub(crate) fn parse_edge(dag: &Dag, rec: &mut Value, id: String) -> DagResult<Edge> {
    let from = dag
        .idx(&string(rec, "from_node_id")?)
        .map_err(|e| bad(e.message))?;
    let to = dag
        .idx(&string(rec, "to_node_id")?)
        .map_err(|e| bad(e.message))?;
    if from == to {
        return Err(bad(format!("edge {id:?} is a self-loop")));
    }
    Ok(Edge {
        id: Arc::from(id),
        from,
        to,
        edge_type: EdgeType::parse(&string(rec, "edge_type")?)?,
        metadata: object(rec, "metadata")?,
        compressed_at: opt_time(rec, "compressed_at")?,
        created_at: time(rec, "created_at")?,
    })
}

pub(crate) fn parse_event(rec: &mut Value) -> DagResult<Event> {
    Ok(Event::loaded(
        &string(rec, "event_type")?,
        Arc::from(string(rec, "subject_id")?),
        field(rec, "particulars")?,
        time(rec, "created_at")?,
    ))
}

/// The id field of a node or edge record (moved out of it).
pub(crate) fn record_id(rec: &mut Value, key: &str) -> DagResult<String> {
    string(rec, key)
}

pub(crate) fn parse_record(text: &str) -> DagResult<Value> {
    json::parse(text).map_err(bad)
}
