//! fork / retry / regenerate / edit (docs/dag-rules.md §7): each validates every precondition before its first write.

use crate::ids::Id;

use super::arena::{stored, Dag};
use super::create::{check_required_payload, NodeSpec};
use super::error::{DagCode, DagError, DagResult};
use super::events::{obj, str_list};
use super::types::{EdgeType, NodeType, State};
use crate::clock::now;
use crate::value::Value;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ReplaceKind {
    Retry,
    Regenerate,
    Edit,
}

impl ReplaceKind {
    fn as_str(self) -> &'static str {
        match self {
            ReplaceKind::Retry => "retry",
            ReplaceKind::Regenerate => "regenerate",
            ReplaceKind::Edit => "edit",
        }
    }
}

fn branch_meta(kind: &str) -> Value {
    obj(vec![(
        "branch_kinds",
        Value::Array(vec![Value::Str(kind.into())]),
    )])
}

impl Dag {
    /// Active causal descendants of `n` (not `n` itself), in discovery order.
    pub(crate) fn causal_descendants(&self, n: u32) -> Vec<u32> {
        let mut seen = rustc_hash::FxHashSet::default();
        let mut out = Vec::new();
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            for e in self.live_out(x) {
                if e.edge_type.is_blocking() && e.to != n && seen.insert(e.to) {
                    out.push(e.to);
                    stack.push(e.to);
                }
            }
        }
        out
    }

    pub fn fork(
        &mut self,
        from_id: &str,
        node_type: &str,
        state: Option<&str>,
        spec: NodeSpec,
    ) -> DagResult<String> {
        let node_type = NodeType::parse(node_type)?;
        let state = super::create::initial_state(state)?;
        let at = now();
        let node = self.build_node(node_type, state, spec, at)?;
        let from = self.idx(from_id)?;
        let source = &self.nodes[from as usize];
        if !source.is_active() {
            return Err(DagError::new(
                DagCode::ForkSourceInactive,
                format!("{from_id:?} is inactive"),
            ));
        }
        if !source.state.is_terminal() {
            return Err(DagError::new(
                DagCode::ForkSourceNotTerminal,
                format!("{from_id:?} is {}", source.state.as_str()),
            ));
        }
        let n = self.insert_node(node, false);
        let seq =
            Dag::new_edge_minted(None, from, n, EdgeType::Sequence, Value::empty_object(), at);
        self.insert_edge(seq, false);
        let branch = Dag::new_edge_minted(None, from, n, EdgeType::Branch, branch_meta("fork"), at);
        self.insert_edge(branch, false);
        self.flush();
        Ok(self.nodes[n as usize].id.to_string())
    }

    pub fn retry(&mut self, id: &str, new_node_id: Option<String>) -> DagResult<String> {
        self.check_new_node_id(&new_node_id)?;
        let old = self.active_idx(id)?;
        let node = &self.nodes[old as usize];
        if !node.node_type.is_executable() {
            return Err(DagError::new(
                DagCode::RetryNotRetriable,
                format!("{id:?} is a {}", node.node_type.as_str()),
            ));
        }
        if !matches!(
            node.state,
            State::Errored | State::Rejected | State::Cancelled
        ) {
            return Err(DagError::new(
                DagCode::RetryBadState,
                format!("{id:?} is {}", node.state.as_str()),
            ));
        }
        if let Some(d) = self
            .causal_descendants(old)
            .into_iter()
            .find(|&d| self.nodes[d as usize].state != State::Pending)
        {
            let d = &self.nodes[d as usize];
            return Err(DagError::new(
                DagCode::RetryDownstreamNotPending,
                format!("descendant {:?} is {}", &*d.id, d.state.as_str()),
            ));
        }
        let mut metadata = node.metadata().clone();
        for key in ["error", "reason", "blocked_by"] {
            metadata.remove(key);
        }
        let attempt = match node.metadata().get("attempt") {
            Some(Value::Int(a)) => a.saturating_add(1),
            _ => 2,
        };
        metadata.set("attempt", Value::Int(attempt));
        self.replace(
            old,
            ReplaceKind::Retry,
            node.input().clone(),
            metadata,
            new_node_id,
        )
    }

    pub fn regenerate(&mut self, id: &str, new_node_id: Option<String>) -> DagResult<String> {
        self.check_new_node_id(&new_node_id)?;
        let old = self.active_idx(id)?;
        self.flush();
        let node = &self.nodes[old as usize];
        if node.node_type != NodeType::AgentMessage || node.state != State::Finished {
            return Err(DagError::new(
                DagCode::RegenerateBadState,
                format!(
                    "{id:?} is a {} in state {}",
                    node.node_type.as_str(),
                    node.state.as_str()
                ),
            ));
        }
        if node.out_blocking > 0 {
            return Err(DagError::new(
                DagCode::RegenerateNotLeaf,
                format!("{id:?} has causal children"),
            ));
        }
        self.replace(
            old,
            ReplaceKind::Regenerate,
            node.input().clone(),
            node.metadata().clone(),
            new_node_id,
        )
    }

    pub fn edit(
        &mut self,
        id: &str,
        new_input: Value,
        new_node_id: Option<String>,
    ) -> DagResult<String> {
        if new_input.as_object().is_none() {
            return Err(DagError::invalid("new_input must be a dict"));
        }
        self.check_new_node_id(&new_node_id)?;
        let old = self.active_idx(id)?;
        let node = &self.nodes[old as usize];
        if node.node_type != NodeType::UserMessage || node.state != State::Finished {
            return Err(DagError::new(
                DagCode::EditBadState,
                format!(
                    "{id:?} is a {} in state {}",
                    node.node_type.as_str(),
                    node.state.as_str()
                ),
            ));
        }
        if let Some(d) = self.causal_descendants(old).into_iter().find(|&d| {
            matches!(
                self.nodes[d as usize].state,
                State::Pending | State::Running
            )
        }) {
            let d = &self.nodes[d as usize];
            return Err(DagError::new(
                DagCode::EditDownstreamActive,
                format!("descendant {:?} is {}", &*d.id, d.state.as_str()),
            ));
        }
        let mut input = node.input().clone();
        input.deep_merge(new_input);
        check_required_payload(NodeType::UserMessage, Some(&input), None)?;
        let metadata = node.metadata().clone();
        self.replace(old, ReplaceKind::Edit, input, metadata, new_node_id)
    }

    /// The shared skeleton of docs/dag-rules.md §7.3; preconditions are already checked.
    fn replace(
        &mut self,
        old: u32,
        kind: ReplaceKind,
        input: Value,
        metadata: Value,
        new_node_id: Option<String>,
    ) -> DagResult<String> {
        let at = now();
        let old_node = &self.nodes[old as usize];
        let old_id = old_node.id.clone();
        let state = if kind == ReplaceKind::Edit {
            State::Finished
        } else {
            State::Pending
        };
        let mut node = Dag::new_node_minted(
            new_node_id,
            old_node.node_type,
            state,
            [stored(input), None, stored(metadata)],
            at,
        );
        if kind == ReplaceKind::Retry {
            node.item.set_retry_of(old_id.clone());
        }
        let incoming: Vec<(u32, EdgeType, Value)> = self
            .live_in(old)
            .filter(|e| e.edge_type.is_blocking())
            .map(|e| (e.from, e.edge_type, e.metadata().clone()))
            .collect();
        let outgoing: Vec<(u32, EdgeType, Value)> = if kind == ReplaceKind::Retry {
            self.live_out(old)
                .filter(|e| e.edge_type.is_blocking())
                .map(|e| (e.to, e.edge_type, e.metadata().clone()))
                .collect()
        } else {
            Vec::new()
        };
        let archive: Vec<u32> = match kind {
            ReplaceKind::Edit => std::iter::once(old)
                .chain(self.causal_descendants(old))
                .collect(),
            _ => vec![old],
        };

        let new = self.insert_node(node, false);
        let new_id: Id = self.nodes[new as usize].id.clone();
        for (from, t, meta) in incoming {
            let e = Dag::new_edge_minted(None, from, new, t, meta, at);
            self.insert_edge(e, false);
        }
        for (to, t, meta) in outgoing {
            let e = Dag::new_edge_minted(None, new, to, t, meta, at);
            self.insert_edge(e, false);
        }
        let branch = Dag::new_edge_minted(
            None,
            old,
            new,
            EdgeType::Branch,
            branch_meta(kind.as_str()),
            at,
        );
        self.insert_edge(branch, false);
        let mut archived_edges = Vec::new();
        for &n in &archive {
            archived_edges.extend(self.archive_node(n, &new_id, at));
        }
        let p = obj(vec![
            ("kind", Value::Str(kind.as_str().into())),
            ("old_id", Value::Str(old_id.to_string())),
            ("new_id", Value::Str(new_id.to_string())),
            (
                "archived_node_ids",
                str_list(archive.iter().map(|&n| &*self.nodes[n as usize].id)),
            ),
            (
                "archived_edge_ids",
                str_list(archived_edges.iter().map(|&e| &*self.edges[e as usize].id)),
            ),
        ]);
        self.record("node_replaced", &new_id, p, at);
        self.flush();
        Ok(new_id.to_string())
    }
}
