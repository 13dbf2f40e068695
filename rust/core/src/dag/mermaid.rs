//! Mermaid `flowchart TD` export.

use super::arena::{Dag, Node};
use super::json;
use super::types::{EdgeType, NodeType};
use super::value::Value;

fn mermaid_id(id: &str) -> String {
    // Dashes are dropped by contract; anything else Mermaid cannot take in an id becomes '_'.
    let body: String = id
        .chars()
        .filter(|&c| c != '-')
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("N_{body}")
}

fn snippet(node: &Node) -> String {
    let v = match node.node_type {
        NodeType::Task => node.input.get("name"),
        NodeType::UserMessage => node.input.get("content"),
        _ => node.output_preview.get("content"),
    };
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::Str(s)) => s.clone(),
        Some(other) => json::to_string(other),
    }
}

/// Collapses whitespace runs, cuts to `max` code points ("..." rule), escapes quotes.
pub fn label(text: &str, max: usize) -> String {
    let collapsed = text.split_whitespace().collect::<Vec<_>>().join(" ");
    super::preview::truncate_chars(&collapsed, max).replace('"', "\\\"")
}

impl Dag {
    pub fn to_mermaid(&self, include_compressed: bool, max_label_chars: usize) -> String {
        let mut nodes: Vec<&Node> = self
            .nodes
            .iter()
            .filter(|n| include_compressed || n.is_active())
            .collect();
        nodes.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        let mut edges: Vec<u32> = (0..self.edges.len() as u32)
            .filter(|&e| include_compressed || self.is_live(e))
            .collect();
        edges.sort_unstable_by(|&a, &b| self.edges[a as usize].id.cmp(&self.edges[b as usize].id));
        let mut out = String::from("flowchart TD\n");
        for node in nodes {
            let text = format!(
                "{}:{} {}",
                node.node_type.as_str(),
                node.state.as_str(),
                snippet(node)
            );
            out.push_str(&format!(
                "{}[\"{}\"]\n",
                mermaid_id(&node.id),
                label(&text, max_label_chars)
            ));
        }
        for e in edges {
            let edge = &self.edges[e as usize];
            let text = match edge.edge_type {
                EdgeType::Branch => match edge.metadata.get("branch_kinds") {
                    Some(Value::Array(kinds)) if !kinds.is_empty() => {
                        let kinds: Vec<String> = kinds
                            .iter()
                            .map(|k| k.as_str().map_or_else(|| json::to_string(k), str::to_owned))
                            .collect();
                        format!("branch:{}", kinds.join(","))
                    }
                    _ => "branch".to_owned(),
                },
                t => t.as_str().to_owned(),
            };
            out.push_str(&format!(
                "{} -->|{}| {}\n",
                mermaid_id(&self.nodes[edge.from as usize].id),
                text,
                mermaid_id(&self.nodes[edge.to as usize].id)
            ));
        }
        out
    }
}
