//! Leaf detection and repair (docs/dag-rules.md §5): every active causal leaf is an agent_message or still in flight.

use super::arena::Dag;
use super::events::obj;
use super::types::{EdgeType, NodeType, State};
use crate::clock::now;
use crate::value::Value;

/// The marker on what leaf repair adds, so it can be told apart from what callers made (docs/design.md §24).
fn generated_by_leaf_invariant() -> Value {
    obj(vec![("generated_by", Value::Str("leaf_invariant".into()))])
}

impl Dag {
    /// Active view: nodes without live outgoing blocking edges. Audit view: every node and every blocking
    /// edge, archived ones included.
    pub fn leaves(&mut self, include_compressed: bool) -> Vec<String> {
        self.flush();
        if !include_compressed {
            return self
                .sets
                .leaves
                .iter()
                .map(|n| self.nodes[n as usize].id.to_string())
                .collect();
        }
        let mut ids: Vec<&str> = (0..self.nodes.len())
            .filter(|&n| {
                !self.out_adj[n]
                    .iter()
                    .any(|&e| self.edges[e as usize].edge_type.is_blocking())
            })
            .map(|n| &*self.nodes[n].id)
            .collect();
        ids.sort_unstable();
        ids.into_iter().map(str::to_owned).collect()
    }

    pub fn leaf_repair(&self) -> bool {
        self.leaf_repair
    }

    /// Turns the automatic repair of `commit` and `apply_outcome` on or off; `repair_leaves` itself always
    /// repairs when called.
    pub fn set_leaf_repair(&mut self, on: bool) {
        self.leaf_repair = on;
    }

    /// The repair run at the end of an outermost `commit` and of `apply_outcome`: none when it is turned off.
    pub(crate) fn auto_repair(&mut self) -> Vec<String> {
        if self.leaf_repair {
            self.repair_leaves()
        } else {
            Vec::new()
        }
    }

    /// Appends a pending agent_message after every invalid leaf; returns the new ids (ascending by leaf id).
    pub fn repair_leaves(&mut self) -> Vec<String> {
        self.flush();
        let bad: Vec<u32> = self.sets.bad_leaves.iter().collect();
        let at = now();
        let mut added = Vec::with_capacity(bad.len());
        for leaf in bad {
            let node = Dag::new_node(
                None,
                NodeType::AgentMessage,
                State::Pending,
                Value::empty_object(),
                Value::empty_object(),
                generated_by_leaf_invariant(),
                at,
            );
            let child = self.push_node(node);
            let edge = Dag::new_edge_minted(
                None,
                leaf,
                child,
                EdgeType::Sequence,
                generated_by_leaf_invariant(),
                at,
            );
            self.push_edge_keyed(edge.item, edge.key);
            self.record_leaf_repaired(child, leaf);
            added.push(self.nodes[child as usize].id.to_string());
        }
        self.flush();
        added
    }
}
