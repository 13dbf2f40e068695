//! Lossless JSON round trip: arena order, every field, and the event log.

use std::sync::Arc;

use super::arena::{Dag, Edge, Node};
use super::error::{DagError, DagResult};
use super::events::{obj, Event};
use super::json;
use super::types::{EdgeType, NodeType, State};
use super::value::Value;

const FORMAT: &str = "chainwarden.dag";
const VERSION: i64 = 1;

fn bad(what: impl Into<String>) -> DagError {
    DagError::invalid(format!("invalid graph JSON: {}", what.into()))
}

fn field<'a>(v: &'a Value, key: &str) -> DagResult<&'a Value> {
    v.get(key).ok_or_else(|| bad(format!("missing {key:?}")))
}

fn string(v: &Value, key: &str) -> DagResult<String> {
    match field(v, key)? {
        Value::Str(s) if !s.is_empty() => Ok(s.clone()),
        _ => Err(bad(format!("{key:?} must be a non-empty string"))),
    }
}

fn opt_string(v: &Value, key: &str) -> DagResult<Option<String>> {
    match field(v, key)? {
        Value::Null => Ok(None),
        Value::Str(s) => Ok(Some(s.clone())),
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

fn time(v: &Value, key: &str) -> DagResult<f64> {
    number(field(v, key)?).ok_or_else(|| bad(format!("{key:?} must be a number")))
}

fn opt_time(v: &Value, key: &str) -> DagResult<Option<f64>> {
    match field(v, key)? {
        Value::Null => Ok(None),
        other => number(other)
            .map(Some)
            .ok_or_else(|| bad(format!("{key:?} must be a number or null"))),
    }
}

fn object(v: &Value, key: &str) -> DagResult<Value> {
    match field(v, key)? {
        o @ Value::Object(_) => Ok(o.clone()),
        _ => Err(bad(format!("{key:?} must be an object"))),
    }
}

fn array<'a>(v: &'a Value, key: &str) -> DagResult<&'a [Value]> {
    match field(v, key)? {
        Value::Array(a) => Ok(a),
        _ => Err(bad(format!("{key:?} must be an array"))),
    }
}

impl Dag {
    pub fn to_json(&self) -> String {
        let doc = obj(vec![
            ("format", Value::Str(FORMAT.into())),
            ("version", Value::Int(VERSION)),
            ("graph_id", Value::Str(self.graph_id.clone())),
            (
                "nodes",
                Value::Array(self.nodes.iter().map(|n| self.node_record(n)).collect()),
            ),
            (
                "edges",
                Value::Array(self.edges.iter().map(|e| self.edge_record(e)).collect()),
            ),
            (
                "events",
                Value::Array(self.events.iter().map(Dag::event_record).collect()),
            ),
        ]);
        json::to_string(&doc)
    }

    pub fn from_json(text: &str) -> DagResult<Dag> {
        let doc = json::parse(text).map_err(bad)?;
        if doc.get("format").and_then(Value::as_str) != Some(FORMAT) {
            return Err(bad("not a chainwarden.dag document"));
        }
        if doc.get("version") != Some(&Value::Int(VERSION)) {
            return Err(bad("unsupported version"));
        }
        let mut dag = Dag::new(Some(string(&doc, "graph_id")?));
        for rec in array(&doc, "nodes")? {
            let id = string(rec, "node_id")?;
            if dag.node_index.contains_key(id.as_str()) {
                return Err(bad(format!("duplicate node id {id:?}")));
            }
            let node = parse_node(rec, id)?;
            dag.push_node(node);
        }
        for rec in array(&doc, "edges")? {
            let id = string(rec, "edge_id")?;
            if dag.edge_index.contains_key(id.as_str()) {
                return Err(bad(format!("duplicate edge id {id:?}")));
            }
            let edge = parse_edge(&dag, rec, id)?;
            dag.push_edge(edge);
        }
        for rec in array(&doc, "events")? {
            dag.events.push(parse_event(rec)?);
        }
        if !dag.active_is_acyclic() {
            return Err(bad("the active graph has a cycle"));
        }
        dag.flush();
        Ok(dag)
    }
}

/// One node record (the shape of `node_record`) as an arena node; its counters are recomputed on flush.
pub(crate) fn parse_node(rec: &Value, id: String) -> DagResult<Node> {
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
    })
}

/// One edge record whose endpoints are nodes of `dag`.
pub(crate) fn parse_edge(dag: &Dag, rec: &Value, id: String) -> DagResult<Edge> {
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

pub(crate) fn parse_event(rec: &Value) -> DagResult<Event> {
    Ok(Event {
        event_type: string(rec, "event_type")?,
        subject_id: Arc::from(string(rec, "subject_id")?),
        particulars: field(rec, "particulars")?.clone(),
        created_at: time(rec, "created_at")?,
    })
}

/// The id field of a node or edge record.
pub(crate) fn record_id(rec: &Value, key: &str) -> DagResult<String> {
    string(rec, key)
}

pub(crate) fn parse_record(text: &str) -> DagResult<Value> {
    json::parse(text).map_err(bad)
}
