//! Mermaid `flowchart TD` export (docs/design.md §25).
//!
//! Every line is one statement the exporter chose: a node `N<k>["<label>"]` or an edge
//! `N<a> -->|<label>| N<b>`. Node ids are `N` + the node's arena index (creation order, stable across
//! views), so they are injective whatever the caller's ids look like. Labels carry user text, so every
//! character that is not plainly text becomes a Mermaid entity code: nothing can close the label, start
//! another statement (`click`, `style`, ...), inject HTML, or break the line.

use std::fmt::Write;

use super::arena::{Dag, Node};
use super::types::{EdgeType, NodeType};
use crate::json;
use crate::value::Value;

fn mermaid_id(index: u32) -> String {
    format!("N{index}")
}

fn snippet(node: &Node) -> String {
    let preview = node.output_preview();
    let v = match node.node_type {
        NodeType::Task => node.input().get("name"),
        NodeType::UserMessage => node.input().get("content"),
        _ => preview.get("content"),
    };
    match v {
        None | Some(Value::Null) => String::new(),
        Some(Value::Str(s)) => s.clone(),
        Some(other) => json::to_string(other, json::Layout::Compact),
    }
}

/// ASCII punctuation that means nothing to Mermaid's flowchart grammar or to HTML inside a quoted label.
const PLAIN_PUNCTUATION: &str = " .,:!?-_+*/=@'~^$";

/// Mermaid entity codes for everything but letters, digits and a few harmless punctuation marks.
/// `#quot;` `#lt;` `#gt;` `#amp;` by name, anything else (`#` itself, `\`, brackets, pipes, `;`, `%`,
/// backticks, control and format characters, symbols) by code point, e.g. `#35;`.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '"' => out.push_str("#quot;"),
            '<' => out.push_str("#lt;"),
            '>' => out.push_str("#gt;"),
            '&' => out.push_str("#amp;"),
            c if c.is_ascii_alphanumeric() || PLAIN_PUNCTUATION.contains(c) => out.push(c),
            c if !c.is_ascii() && c.is_alphanumeric() => out.push(c),
            c => {
                let _ = write!(out, "#{};", c as u32);
            }
        }
    }
    out
}

fn collapse(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Collapses whitespace runs (newlines included), cuts to `max` code points ("..." rule), then escapes.
pub fn label(text: &str, max: usize) -> String {
    escape(&super::preview::truncate_chars(&collapse(text), max))
}

fn edge_text(dag: &Dag, e: u32) -> String {
    let edge = &dag.edges[e as usize];
    match edge.edge_type {
        EdgeType::Branch => match edge.metadata().get("branch_kinds") {
            Some(Value::Array(kinds)) if !kinds.is_empty() => {
                let kinds: Vec<String> = kinds
                    .iter()
                    .map(|k| {
                        k.as_str().map_or_else(
                            || json::to_string(k, json::Layout::Compact),
                            str::to_owned,
                        )
                    })
                    .collect();
                format!("branch:{}", kinds.join(","))
            }
            _ => "branch".to_owned(),
        },
        t => t.as_str().to_owned(),
    }
}

impl Dag {
    pub fn to_mermaid(&self, include_compressed: bool, max_label_chars: usize) -> String {
        let mut nodes: Vec<u32> = (0..self.nodes.len() as u32)
            .filter(|&n| include_compressed || self.nodes[n as usize].is_active())
            .collect();
        nodes.sort_unstable_by(|&a, &b| self.nodes[a as usize].id.cmp(&self.nodes[b as usize].id));
        let mut edges: Vec<u32> = (0..self.edges.len() as u32)
            .filter(|&e| include_compressed || self.is_live(e))
            .collect();
        edges.sort_unstable_by(|&a, &b| self.edges[a as usize].id.cmp(&self.edges[b as usize].id));
        let mut out = String::from("flowchart TD\n");
        for n in nodes {
            let node = &self.nodes[n as usize];
            let text = format!(
                "{}:{} {}",
                node.node_type.as_str(),
                node.state.as_str(),
                snippet(node)
            );
            let _ = writeln!(
                out,
                "{}[\"{}\"]",
                mermaid_id(n),
                label(&text, max_label_chars)
            );
        }
        for e in edges {
            let edge = &self.edges[e as usize];
            let _ = writeln!(
                out,
                "{} -->|{}| {}",
                mermaid_id(edge.from),
                escape(&collapse(&edge_text(self, e))), // never cut: the edge type must stay readable
                mermaid_id(edge.to)
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_everything_that_could_leave_a_label() {
        assert_eq!(escape(r#"a "b" <i>&"#), "a #quot;b#quot; #lt;i#gt;#amp;");
        assert_eq!(
            escape("#1 [x]|{y}(z)"),
            "#35;1 #91;x#93;#124;#123;y#125;#40;z#41;"
        );
        assert_eq!(escape("ends with \\"), "ends with #92;");
        assert_eq!(escape("a;b%c`d"), "a#59;b#37;c#96;d");
        assert_eq!(escape("é ü 東京"), "é ü 東京");
        assert_eq!(escape("\u{202e}\u{0}\u{7f}😀"), "#8238;#0;#127;#128512;");
    }

    #[test]
    fn labels_collapse_lines_before_cutting_and_escaping() {
        assert_eq!(label("a\n\nclick N0 \"x\"", 80), "a click N0 #quot;x#quot;");
        assert_eq!(label("\"\"\"\"\"\"", 5), "#quot;#quot;...");
    }
}
