//! Lossless JSON round trip: arena order, every field, and the event log.

use crate::ids::Id;
use std::borrow::Cow;

use super::arena::{Dag, Edge, Node};
use super::error::{DagError, DagResult};
use super::events::{Event, FlatPairs};
use super::records::{Field, RecordSink};
use super::types::{EdgeType, NodeType, State};
use crate::json::{self, Flat, Item, Pairs, Pull};
use crate::value::Value;

const FORMAT: &str = "chainwarden.dag";
const VERSION: i64 = 1;

fn bad(what: impl Into<String>) -> DagError {
    DagError::invalid(format!("invalid graph JSON: {}", what.into()))
}

/// A record's fields as read from its text, by position in the record's key list (a key read twice keeps
/// its last value, like `json.loads`; a key not in the list is read and dropped).
type Slots<'a, const N: usize> = [Option<Item<'a>>; N];

/// Reads one record object of `keys` from `p` (records are written in key order, so the next key is tried
/// first).
fn read_record<'a, const N: usize>(p: &mut Pull<'a>, keys: &[&str; N]) -> DagResult<Slots<'a, N>> {
    read_record_with(p, keys, None)
}

/// [`read_record`] that reads the field at position `flat.0` with `Pull::item_flat`, leaving string pairs
/// in `flat.1` (and `Item::Null` in the slot) rather than building a value.
fn read_record_with<'a, const N: usize>(
    p: &mut Pull<'a>,
    keys: &[&str; N],
    mut flat: Option<(usize, &mut Option<Pairs<'a>>)>,
) -> DagResult<Slots<'a, N>> {
    p.begin_object().map_err(bad)?;
    let mut slots: Slots<'a, N> = std::array::from_fn(|_| None);
    let mut next = 0;
    while let Some(key) = p.next_key().map_err(bad)? {
        let at = if keys.get(next) == Some(&&*key) {
            Some(next)
        } else {
            keys.iter().position(|k| *k == key)
        };
        let item = match (&mut flat, at) {
            (Some((f, out)), Some(at)) if *f == at => match p.item_flat().map_err(bad)? {
                Flat::Pairs(pairs) => {
                    **out = Some(pairs);
                    Item::Null
                }
                Flat::Item(item) => {
                    **out = None;
                    item
                }
            },
            _ => p.item().map_err(bad)?,
        };
        if let Some(at) = at {
            slots[at] = Some(item);
            next = at + 1;
        }
    }
    Ok(slots)
}

/// One stored row: a whole text holding a single record.
fn read_row<'a, const N: usize>(text: &'a str, keys: &[&str; N]) -> DagResult<Slots<'a, N>> {
    let mut p = Pull::new(text);
    let slots = read_record(&mut p, keys)?;
    p.finish().map_err(bad)?;
    Ok(slots)
}

fn field<'a>(slot: Option<Item<'a>>, key: &str) -> DagResult<Item<'a>> {
    slot.ok_or_else(|| bad(format!("missing {key:?}")))
}

fn string<'a>(slot: Option<Item<'a>>, key: &str) -> DagResult<Cow<'a, str>> {
    match field(slot, key)? {
        Item::Str(s) if !s.is_empty() => Ok(s),
        _ => Err(bad(format!("{key:?} must be a non-empty string"))),
    }
}

fn opt_id(slot: Option<Item<'_>>, key: &str) -> DagResult<Option<Id>> {
    match field(slot, key)? {
        Item::Null => Ok(None),
        Item::Str(s) => Ok(Some(Id::from(&*s))),
        _ => Err(bad(format!("{key:?} must be a string or null"))),
    }
}

fn number(v: &Item<'_>) -> Option<f64> {
    match v {
        Item::Float(f) => Some(*f),
        Item::Int(i) => Some(*i as f64),
        _ => None,
    }
}

fn time(slot: Option<Item<'_>>, key: &str) -> DagResult<f64> {
    number(&field(slot, key)?).ok_or_else(|| bad(format!("{key:?} must be a number")))
}

fn opt_time(slot: Option<Item<'_>>, key: &str) -> DagResult<Option<f64>> {
    match field(slot, key)? {
        Item::Null => Ok(None),
        other => number(&other)
            .map(Some)
            .ok_or_else(|| bad(format!("{key:?} must be a number or null"))),
    }
}

fn object(slot: Option<Item<'_>>, key: &str) -> DagResult<Value> {
    match field(slot, key)? {
        Item::Tree(o @ Value::Object(_)) => Ok(o),
        _ => Err(bad(format!("{key:?} must be an object"))),
    }
}

const COMPACT: json::Layout = json::Layout::Compact;

/// Writes records as JSON objects into `out`, one field at a time.
struct JsonSink {
    out: Vec<u8>,
    first: bool,
}

impl JsonSink {
    fn array<T>(
        &mut self,
        items: impl IntoIterator<Item = T>,
        mut visit: impl FnMut(&mut JsonSink, T),
    ) {
        self.out.push(b'[');
        for (i, item) in items.into_iter().enumerate() {
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
        w.array(self.nodes.iter(), |w, n| self.visit_node(n, w));
        w.out.extend_from_slice(b",\"edges\":");
        w.array(self.edges.iter(), |w, e| self.visit_edge(e, w));
        w.out.extend_from_slice(b",\"events\":");
        w.array(self.events(), |w, e| Dag::visit_event(&e, w));
        w.out.push(b'}');
        json::into_string(w.out)
    }

    pub fn from_json(text: &str) -> DagResult<Dag> {
        // The document is pulled key by key: each record goes straight into the arena, with no tree of
        // the whole file in between (docs/dag.md "Events and export", "Reading a file").
        let mut p = Pull::new(text);
        p.begin_object().map_err(bad)?;
        let (mut format, mut version, mut graph_id, mut leaf_repair) = (None, None, None, None);
        // Its id is read below, wherever the file puts it.
        let mut dag = Dag::new(Some(String::new()));
        // The lists are read in arena order (edges need their nodes): one that comes before a list it
        // depends on (a file written with sorted keys puts "edges" first) is skipped and read afterwards.
        let mut done = [false; 3];
        let mut later: [Option<(usize, usize)>; 3] = [None; 3];
        while let Some(key) = p.next_key().map_err(bad)? {
            let list = match &*key {
                "nodes" => 0,
                "edges" => 1,
                "events" => 2,
                _ => {
                    let item = p.item().map_err(bad)?;
                    match &*key {
                        "format" => format = Some(item),
                        "version" => version = Some(item),
                        "graph_id" => graph_id = Some(item),
                        "leaf_repair" => leaf_repair = Some(item),
                        _ => {}
                    }
                    continue;
                }
            };
            if done[list] || later[list].is_some() {
                // json.loads would keep the last one; a graph file with two node lists is refused instead.
                return Err(bad(format!("{key:?} appears twice")));
            }
            if done[..list].iter().all(|d| *d) {
                dag.read_list(&mut p, list)?;
                done[list] = true;
            } else {
                later[list] = Some(p.position());
                p.item().map_err(bad)?;
            }
        }
        p.finish().map_err(bad)?;
        for (list, at) in later.into_iter().enumerate() {
            if let Some((offset, depth)) = at {
                dag.read_list(&mut Pull::resume(text, offset, depth), list)?;
                done[list] = true;
            }
        }
        if !matches!(format, Some(Item::Str(ref f)) if f == FORMAT) {
            return Err(bad("not a chainwarden.dag document"));
        }
        if version != Some(Item::Int(VERSION)) {
            return Err(bad("unsupported version"));
        }
        dag.graph_id = string(graph_id, "graph_id")?.into_owned();
        dag.leaf_repair = match leaf_repair {
            None => true,
            Some(Item::Bool(on)) => on,
            Some(_) => return Err(bad("\"leaf_repair\" must be a boolean")),
        };
        for (key, done) in ["nodes", "edges", "events"].iter().zip(done) {
            if !done {
                return Err(bad(format!("missing {key:?}")));
            }
        }
        dag.finish_load()
    }

    /// One of the document's lists (0 nodes, 1 edges, 2 events) from `p`, which is at its opening bracket.
    fn read_list(&mut self, p: &mut Pull<'_>, list: usize) -> DagResult<()> {
        p.begin_array().map_err(bad)?;
        while p.next_item().map_err(bad)? {
            match list {
                0 => self.add_loaded_node(read_node(read_record(p, &NODE_KEYS)?)?)?,
                1 => self.add_loaded_edge(read_edge(read_record(p, &EDGE_KEYS)?)?)?,
                _ => {
                    let event = read_event(p, self)?;
                    self.events.push(event);
                }
            }
        }
        Ok(())
    }

    /// `id` as the graph's own string when it names a node or an edge, else a new one: events read back
    /// share the ids the arena holds instead of three more copies per edge.
    pub(crate) fn shared_id(&self, id: &str) -> Id {
        self.node(id)
            .map(|n| &n.id)
            .or_else(|| self.edge(id).map(|e| &e.id))
            .map_or_else(|| Id::from(id), Id::clone)
    }

    /// A node read from a record, appended to a graph being loaded.
    pub(crate) fn add_loaded_node(&mut self, node: Node) -> DagResult<()> {
        if self.node_index.contains(&node.id, &self.nodes) {
            return Err(bad(format!("duplicate node id {:?}", &*node.id)));
        }
        self.push_node(node);
        Ok(())
    }

    /// An edge read from a record, its endpoints resolved against the nodes loaded so far.
    pub(crate) fn add_loaded_edge(&mut self, edge: EdgeRecord<'_>) -> DagResult<()> {
        if self.edge_index.contains(&edge.id, &self.edges) {
            return Err(bad(format!("duplicate edge id {:?}", &*edge.id)));
        }
        let edge = self.resolve_edge(edge)?;
        self.push_edge(edge);
        Ok(())
    }

    /// An edge record's endpoints as arena positions.
    pub(crate) fn resolve_edge(&self, rec: EdgeRecord<'_>) -> DagResult<Edge> {
        let from = self.idx(&rec.from).map_err(|e| bad(e.message))?;
        let to = self.idx(&rec.to).map_err(|e| bad(e.message))?;
        if from == to {
            return Err(bad(format!("edge {:?} is a self-loop", &*rec.id)));
        }
        Ok(Edge {
            id: rec.id,
            from,
            to,
            edge_type: rec.edge_type,
            metadata: Edge::boxed_metadata(rec.metadata),
            compressed_at: rec.compressed_at.into(),
            created_at: rec.created_at,
        })
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

/// The keys of a node record, in the order `visit_node` writes them (`dag/records.rs`).
const NODE_KEYS: [&str; 13] = [
    "node_id",
    "node_type",
    "state",
    "input",
    "output",
    "output_preview",
    "metadata",
    "retry_of_id",
    "compressed_by_id",
    "compressed_at",
    "started_at",
    "finished_at",
    "created_at",
];
const EDGE_KEYS: [&str; 7] = [
    "edge_id",
    "from_node_id",
    "to_node_id",
    "edge_type",
    "metadata",
    "compressed_at",
    "created_at",
];
const EVENT_KEYS: [&str; 4] = ["event_type", "subject_id", "particulars", "created_at"];

/// One node record (the shape of `node_record`) as an arena node; its counters are recomputed on flush.
fn read_node(f: Slots<'_, 13>) -> DagResult<Node> {
    let [id, node_type, state, input, output, preview, metadata, retry_of, compressed_by, compressed_at, started_at, finished_at, created_at] =
        f;
    let id = Id::from(&*string(id, "node_id")?);
    let node_type = NodeType::parse(&string(node_type, "node_type")?)?;
    let state = State::parse(&string(state, "state")?)?;
    let (input, output) = (object(input, "input")?, object(output, "output")?);
    let preview = object(preview, "output_preview")?;
    let metadata = object(metadata, "metadata")?;
    let retry_of = opt_id(retry_of, "retry_of_id")?;
    let compressed_by = opt_id(compressed_by, "compressed_by_id")?;
    let compressed_at = opt_time(compressed_at, "compressed_at")?;
    // Read in record order: the first bad field is the one named.
    let started_at = opt_time(started_at, "started_at")?;
    let finished_at = opt_time(finished_at, "finished_at")?;
    let created_at = time(created_at, "created_at")?;
    let mut node = Node::bare(id, node_type, state, [input, output, metadata], created_at);
    (node.started_at, node.finished_at) = (started_at.into(), finished_at.into());
    node.set_loaded(retry_of, compressed_by, compressed_at, preview);
    Ok(node)
}

/// An edge record before its endpoints are resolved (which needs the graph; the rest can be read on any
/// thread).
pub(crate) struct EdgeRecord<'a> {
    pub(crate) id: Id,
    from: Cow<'a, str>,
    to: Cow<'a, str>,
    edge_type: EdgeType,
    pub(crate) metadata: Value,
    pub(crate) compressed_at: Option<f64>,
    created_at: f64,
}

fn read_edge(f: Slots<'_, 7>) -> DagResult<EdgeRecord<'_>> {
    let [id, from, to, edge_type, metadata, compressed_at, created_at] = f;
    Ok(EdgeRecord {
        id: Id::from(&*string(id, "edge_id")?),
        from: string(from, "from_node_id")?,
        to: string(to, "to_node_id")?,
        edge_type: EdgeType::parse(&string(edge_type, "edge_type")?)?,
        metadata: object(metadata, "metadata")?,
        compressed_at: opt_time(compressed_at, "compressed_at")?,
        created_at: time(created_at, "created_at")?,
    })
}

/// One event record; its particulars, when a small object of strings (nearly always), are matched against
/// the typed shapes without building a value (`Event::loaded_pairs`).
fn read_event(p: &mut Pull<'_>, dag: &Dag) -> DagResult<Event> {
    let mut pairs = None;
    let [event_type, subject, particulars, created_at] =
        read_record_with(p, &EVENT_KEYS, Some((2, &mut pairs)))?;
    let event_type = string(event_type, "event_type")?;
    let subject = string(subject, "subject_id")?;
    let particulars = field(particulars, "particulars")?;
    let at = time(created_at, "created_at")?;
    Ok(match pairs {
        Some(pairs) => {
            let pairs: FlatPairs<'_> = pairs.iter().map(|(k, v)| (&**k, &**v)).collect();
            Event::loaded_pairs(&event_type, &subject, &pairs, at, dag)
        }
        None => Event::loaded(&event_type, &subject, particulars.into_value(), at, dag),
    })
}

/// A stored node row (one record's JSON).
pub(crate) fn node_row(text: &str) -> DagResult<Node> {
    read_node(read_row(text, &NODE_KEYS)?)
}

/// A stored edge row, its endpoints still ids.
pub(crate) fn edge_row(text: &str) -> DagResult<EdgeRecord<'_>> {
    read_edge(read_row(text, &EDGE_KEYS)?)
}

/// A stored event row of `dag` (whose nodes and edges it may name).
pub(crate) fn event_row(text: &str, dag: &Dag) -> DagResult<Event> {
    let mut p = Pull::new(text);
    let event = read_event(&mut p, dag)?;
    p.finish().map_err(bad)?;
    Ok(event)
}
