//! Typed arguments of `DagEngine`: each type converts one Python argument and, when it is the wrong type or
//! value, raises `DagInvalidArgumentError` whose message starts with the argument's name (docs/dag.md
//! "Events and export"), before the engine is touched. The name is a type parameter (`Text<name::NodeId>`)
//! because PyO3 does not pass the argument's name to `FromPyObject`.

use chainwarden_core::dag::{FinishPayload, NodeSpec, Value};
use pyo3::prelude::*;
use pyo3::pybacked::{PyBackedBytes, PyBackedStr};
use pyo3::types::{PyBool, PyBytes, PyList, PyString};

use super::convert::{count, optional_dict, text, text_backed, to_value, utf8};
use super::errors::invalid_arg;

use crate::args::typed_arg;
pub use crate::args::ArgName;

/// Marker types naming the arguments.
pub mod name {
    crate::args::arg_names! {
        Content = "content", Data = "data", EdgeId = "edge_id", EdgeType = "edge_type", Edges = "edges",
        Events = "events", FromId = "from_id",
        GraphId = "graph_id", IncludeCompressed = "include_compressed", Input = "input", LeafRepair = "leaf_repair",
        Limit = "limit",
        MaxLabelChars = "max_label_chars", Metadata = "metadata", Mode = "mode", NewInput = "new_input",
        NewNodeId = "new_node_id", NodeId = "node_id", NodeIds = "node_ids", NodeType = "node_type", Nodes = "nodes",
        Outcome = "outcome", Output = "output", State = "state", SummaryContent = "summary_content",
        Text = "text", ToId = "to_id",
    }
}

typed_arg! {
    /// A `str` (no lone surrogates: the graph stores UTF-8), borrowed.
    Text(PyBackedStr) => text_backed
}

typed_arg! {
    /// Any JSON-shaped value (docs/design.md §23).
    Json(Value) => to_value
}

typed_arg! {
    /// A JSON dict; `None` is taken by `Option<JsonDict<_>>`.
    JsonDict(Value) => |obj, what| {
        Ok(optional_dict(Some(obj), what)?.unwrap_or(Value::Object(Vec::new())))
    }
}

typed_arg! {
    /// An `int >= MIN`, never a `bool`.
    Count(usize), const MIN: usize => count
}

typed_arg! {
    /// A `bool` exactly: a truthy object is more likely a misplaced argument than a flag.
    Flag(bool) => |obj, what| match obj.cast::<PyBool>() {
        Ok(b) => Ok(b.is_true()),
        Err(_) => Err(invalid_arg(obj.py(), what, format!("{what} must be a bool"))),
    }
}

typed_arg! {
    /// An iterable of ids, not a string (a string is an iterable of one-character ids: always a mistake).
    Ids(Vec<String>) => |obj, what| {
        if obj.cast::<PyString>().is_ok() {
            return Err(invalid_arg(obj.py(), what, format!("{what} must be a list of ids, not a string")));
        }
        let items = obj
            .try_iter()
            .map_err(|_| invalid_arg(obj.py(), what, format!("{what} must be an iterable of ids")))?;
        let item_name = format!("{what} item");
        items.map(|item| text(&item?, &item_name)).collect()
    }
}

typed_arg! {
    /// Stored `(seq, record)` rows, as a store reads them: a list of pairs of an `int >= 0` and a `str`,
    /// the records borrowed (a whole graph's rows are read at once; copying them was a second graph).
    Rows(Vec<(usize, PyBackedStr)>) => |obj, what| {
        let py = obj.py();
        let list = obj
            .cast::<PyList>()
            .map_err(|_| invalid_arg(py, what, format!("{what} must be a list of (seq, record) pairs")))?;
        list.iter()
            .enumerate()
            .map(|(i, row)| {
                let pair = || invalid_arg(py, what, format!("{what}[{i}] must be a (seq, record) pair of an int >= 0 and a str"));
                let (seq, record): (Bound<'_, PyAny>, Bound<'_, PyAny>) = row.extract().map_err(|_| pair())?;
                let seq = count(&seq, &format!("{what}[{i}] seq"), 0)?;
                Ok((seq, text_backed(&record, &format!("{what}[{i}] record"))?))
            })
            .collect()
    }
}

/// Graph JSON held without a copy: the caller's `bytes` or `str`, kept alive, read with the GIL released.
pub enum JsonSource {
    /// `bytes` already checked to be UTF-8.
    Bytes(PyBackedBytes),
    Str(PyBackedStr),
}

impl JsonSource {
    pub fn as_str(&self) -> &str {
        match self {
            // SAFETY: checked by `std::str::from_utf8` when the argument was converted (below), and
            // `bytes` objects are immutable.
            JsonSource::Bytes(b) => unsafe { std::str::from_utf8_unchecked(b) },
            JsonSource::Str(s) => s,
        }
    }
}

typed_arg! {
    /// Graph JSON as `bytes` (UTF-8) or `str`, not copied (a 20 MB document was a 20 MB copy).
    JsonText(JsonSource) => |obj, what| {
        if let Ok(b) = obj.cast::<PyBytes>() {
            if std::str::from_utf8(b.as_bytes()).is_err() {
                return Err(invalid_arg(obj.py(), what, format!("{what} is not UTF-8")));
            }
            return Ok(JsonSource::Bytes(PyBackedBytes::from(b.clone())));
        }
        match obj.cast::<PyString>() {
            // Fails only on a lone surrogate; worded like every other text argument (`convert.rs`).
            Ok(s) => PyBackedStr::try_from(s.clone())
                .map(JsonSource::Str)
                .map_err(|_| utf8(s, what).err().unwrap_or_else(|| invalid_arg(obj.py(), what, what.to_owned()))),
            Err(_) => Err(invalid_arg(obj.py(), what, format!("{what} must be bytes or str"))),
        }
    }
}

/// A reason or error stored as `str(obj)`: any object is accepted (the reference does the same).
pub struct Reason(pub String);

impl<'a, 'py> FromPyObject<'a, 'py> for Reason {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        Ok(Reason(obj.str()?.to_string()))
    }
}

/// The inner value of an optional text argument.
pub fn opt_text<A: ArgName>(arg: Option<Text<A>>) -> Option<String> {
    arg.map(|a| a.0.to_string())
}

pub fn dict<A: ArgName>(arg: Option<JsonDict<A>>) -> Option<Value> {
    arg.map(|a| a.0)
}

pub fn node_spec(
    content: Option<Json<name::Content>>,
    input: Option<JsonDict<name::Input>>,
    output: Option<JsonDict<name::Output>>,
    metadata: Option<JsonDict<name::Metadata>>,
    node_id: Option<Text<name::NodeId>>,
) -> NodeSpec {
    NodeSpec {
        content: content.map(|c| c.0),
        input: dict(input),
        output: dict(output),
        metadata: dict(metadata),
        node_id: opt_text(node_id),
    }
}

pub fn finish_payload(
    content: Option<Json<name::Content>>,
    output: Option<JsonDict<name::Output>>,
    metadata: Option<JsonDict<name::Metadata>>,
) -> FinishPayload {
    FinishPayload {
        content: content.map(|c| c.0),
        output: dict(output),
        metadata: dict(metadata),
    }
}

pub fn strings<'py>(py: Python<'py>, items: Vec<String>) -> PyResult<Bound<'py, PyList>> {
    PyList::new(py, items)
}
