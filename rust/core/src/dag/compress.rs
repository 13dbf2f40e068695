//! Compression (docs/dag-rules.md §8): a finished subgraph becomes one summary node; boundary edges are rewired to it.

use crate::ids::Id;

use rustc_hash::{FxHashMap, FxHashSet};

use super::arena::Dag;
use super::error::{DagCode, DagError, DagResult};
use super::events::{obj, str_list};
use super::types::{EdgeType, NodeType, State};
use crate::clock::now;
use crate::value::Value;

/// Keeps in `merged` only the keys whose value `other` has too, equal; O(|merged| + |other|).
fn keep_agreed(merged: &mut Value, other: &Value) {
    let (Value::Object(m), Some(om)) = (merged, other.as_object()) else {
        return;
    };
    let theirs: FxHashMap<&str, &Value> = om.iter().map(|(k, v)| (k.as_str(), v)).collect();
    m.retain(|(k, v)| theirs.get(k.as_str()) == Some(&v));
}

impl Dag {
    pub fn compress(
        &mut self,
        node_ids: &[String],
        summary_content: &str,
        metadata: Option<Value>,
        node_id: Option<String>,
    ) -> DagResult<String> {
        if node_ids.is_empty() {
            return Err(DagError::invalid("node_ids must not be empty"));
        }
        let metadata = super::create::object_or_empty(metadata, "metadata")?;
        self.check_new_node_id(&node_id)?;
        let mut members: Vec<u32> = Vec::with_capacity(node_ids.len());
        for id in node_ids {
            members.push(self.idx(id)?);
        }
        members.sort_unstable();
        members.dedup();
        if let Some(&n) = members
            .iter()
            .find(|&&n| !self.nodes[n as usize].is_active())
        {
            return Err(DagError::new(
                DagCode::CompressAlreadyCompressed,
                format!("{:?} is already inactive", &*self.nodes[n as usize].id),
            ));
        }
        if let Some(&n) = members
            .iter()
            .find(|&&n| self.nodes[n as usize].state != State::Finished)
        {
            let node = &self.nodes[n as usize];
            return Err(DagError::new(
                DagCode::CompressNotFinished,
                format!("{:?} is {}", &*node.id, node.state.as_str()),
            ));
        }
        let inside: FxHashSet<u32> = members.iter().copied().collect();
        let (mut incoming, mut outgoing, mut internal) = (Vec::new(), Vec::new(), Vec::new());
        for &n in &members {
            for &e in &self.in_adj[n as usize] {
                if self.is_live(e) && !inside.contains(&self.edges[e as usize].from) {
                    incoming.push(e);
                }
            }
            for &e in &self.out_adj[n as usize] {
                if !self.is_live(e) {
                    continue;
                }
                if inside.contains(&self.edges[e as usize].to) {
                    internal.push(e);
                } else {
                    outgoing.push(e);
                }
            }
        }
        if !outgoing
            .iter()
            .any(|&e| self.edges[e as usize].edge_type.is_blocking())
        {
            return Err(DagError::new(
                DagCode::CompressSummaryWouldBeLeaf,
                "no blocking edge leaves the compressed set",
            ));
        }
        // A path that leaves the set and comes back would become a cycle through the summary.
        // Only blocking edges are rewired (branch edges are archived, docs/design.md §24): only they leave.
        let exits: Vec<u32> = outgoing
            .iter()
            .filter(|&&e| self.edges[e as usize].edge_type.is_blocking())
            .map(|&e| self.edges[e as usize].to)
            .collect();
        self.flush();
        if self.reaches_any(&exits, |n| inside.contains(&n)) {
            return Err(DagError::new(
                DagCode::EdgeCycle,
                "a path leaves the compressed set and re-enters it; the summary would close a cycle",
            ));
        }

        let at = now();
        let output = obj(vec![("content", Value::Str(summary_content.to_owned()))]);
        let node = Dag::new_node(
            node_id,
            NodeType::Summary,
            State::Finished,
            Value::empty_object(),
            output,
            metadata,
            at,
        );
        let s = self.push_node(node);
        let summary_id: Id = self.nodes[s as usize].id.clone();
        // One rewired edge per (outside node, type, direction), blocking edges only: a branch edge records
        // a fork or rewrite of a member, and the summary was never forked (docs/design.md §24). When several
        // archived edges merge into one, it keeps the metadata they agree on.
        let mut rewired: Vec<((u32, EdgeType, bool), Value)> = Vec::new();
        let mut slot: FxHashMap<(u32, EdgeType, bool), usize> = FxHashMap::default();
        let boundary = incoming
            .iter()
            .map(|&e| (e, true))
            .chain(outgoing.iter().map(|&e| (e, false)));
        for (e, is_in) in boundary {
            let edge = &self.edges[e as usize];
            if !edge.edge_type.is_blocking() {
                continue;
            }
            let outside = if is_in { edge.from } else { edge.to };
            let key = (outside, edge.edge_type, is_in);
            match slot.get(&key) {
                Some(&i) => keep_agreed(&mut rewired[i].1, edge.metadata()),
                None => {
                    slot.insert(key, rewired.len());
                    rewired.push((key, edge.metadata().clone()));
                }
            }
        }
        for ((outside, edge_type, is_in), metadata) in rewired {
            let (from, to) = if is_in { (outside, s) } else { (s, outside) };
            let new_edge = Dag::new_edge_minted(None, from, to, edge_type, metadata, at);
            self.push_edge_keyed(new_edge.item, new_edge.key);
        }
        for &n in &members {
            self.archive_node(n, &summary_id, at);
        }
        let ids = |list: &[u32]| str_list(list.iter().map(|&e| &*self.edges[e as usize].id));
        let p = obj(vec![
            ("summary_node_id", Value::Str(summary_id.to_string())),
            (
                "replaces_node_ids",
                str_list(members.iter().map(|&n| &*self.nodes[n as usize].id)),
            ),
            ("incoming_edge_ids", ids(&incoming)),
            ("outgoing_edge_ids", ids(&outgoing)),
            ("internal_edge_ids", ids(&internal)),
        ]);
        self.record("subgraph_compressed", &summary_id, p, at);
        self.flush();
        Ok(summary_id.to_string())
    }
}
