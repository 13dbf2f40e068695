//! The closed vocabularies of the model: node types, states, edge types.

use super::error::DagError;

use crate::vocab::{vocab, Unknown};

/// An unknown word in a DAG argument or document is a `dag.invalid_argument`.
impl From<Unknown> for DagError {
    fn from(u: Unknown) -> Self {
        DagError::invalid(u.to_string())
    }
}

vocab!(NodeType, "node type", {
    UserMessage => "user_message",
    AgentMessage => "agent_message",
    Task => "task",
    Summary => "summary",
});

vocab!(State, "state", {
    Pending => "pending",
    Running => "running",
    Finished => "finished",
    Errored => "errored",
    Rejected => "rejected",
    Skipped => "skipped",
    Cancelled => "cancelled",
});

vocab!(EdgeType, "edge type", {
    Sequence => "sequence",
    Dependency => "dependency",
    Branch => "branch",
});

impl NodeType {
    pub fn is_executable(self) -> bool {
        matches!(self, NodeType::Task | NodeType::AgentMessage)
    }
}

impl State {
    pub fn is_terminal(self) -> bool {
        !matches!(self, State::Pending | State::Running)
    }

    /// Terminal but not a success: the states that make a dependency fail.
    pub fn is_failed(self) -> bool {
        self.is_terminal() && self != State::Finished
    }
}

impl EdgeType {
    pub fn is_blocking(self) -> bool {
        !matches!(self, EdgeType::Branch)
    }

    /// The gating truth table (docs/dag-rules.md §3.2): does a parent in `parent` state let the child run?
    pub fn unblocks(self, parent: State) -> bool {
        match self {
            EdgeType::Sequence => parent.is_terminal(),
            EdgeType::Dependency => parent == State::Finished,
            EdgeType::Branch => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gating_truth_table() {
        let table = [
            (State::Pending, false, false),
            (State::Running, false, false),
            (State::Finished, true, true),
            (State::Errored, true, false),
            (State::Rejected, true, false),
            (State::Skipped, true, false),
            (State::Cancelled, true, false),
        ];
        for (s, seq, dep) in table {
            assert_eq!(EdgeType::Sequence.unblocks(s), seq, "{s:?}");
            assert_eq!(EdgeType::Dependency.unblocks(s), dep, "{s:?}");
        }
    }

    #[test]
    fn parse_round_trips() {
        for t in NodeType::ALL {
            assert_eq!(NodeType::parse(t.as_str()).unwrap(), t);
        }
        assert_eq!(
            DagError::from(State::parse("done").unwrap_err()).code,
            "dag.invalid_argument"
        );
    }
}
