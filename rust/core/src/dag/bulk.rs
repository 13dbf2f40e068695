//! Bulk load of a stored graph: the rows a store holds (one record per node, edge and event, in arena order)
//! become an engine in one pass, with the same validation as `from_json` and no replay of operations.

use super::arena::Dag;
use super::error::DagResult;
use super::events::obj;
use super::json;
use super::value::Value;

fn push_array<'a>(out: &mut String, key: &str, rows: impl IntoIterator<Item = &'a str>) {
    out.push(',');
    json::write_value(out, &Value::Str(key.to_owned()));
    out.push_str(":[");
    for (i, row) in rows.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(row);
    }
    out.push(']');
}

impl Dag {
    /// Builds a graph from stored record rows (each the JSON of one node / edge / event record).
    pub fn from_records<'a>(
        graph_id: &str,
        nodes: impl IntoIterator<Item = &'a str>,
        edges: impl IntoIterator<Item = &'a str>,
        events: impl IntoIterator<Item = &'a str>,
    ) -> DagResult<Dag> {
        let head = obj(vec![
            ("format", Value::Str("chainwarden.dag".into())),
            ("version", Value::Int(1)),
            ("graph_id", Value::Str(graph_id.to_owned())),
        ]);
        let mut doc = json::to_string(&head);
        doc.pop();
        push_array(&mut doc, "nodes", nodes);
        push_array(&mut doc, "edges", edges);
        push_array(&mut doc, "events", events);
        doc.push('}');
        Dag::from_json(&doc)
    }
}
