//! The DAG engine's error registry: every code it can raise, in one table, each with the exception family it
//! belongs to. A code is the contract (docs/dag.md "Errors"); the message is for humans.
//!
//! Naming scheme, shared by every engine (docs/design.md §28): `<engine>.<reason>` for an error any operation
//! can raise, `<engine>.<operation>.<reason>` for one operation's own rule; all parts lower snake case.

use std::fmt;

/// Which Python exception family a code belongs to; the bindings map it to a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    InvalidArgument,
    Edge,
    Precondition,
}

impl ErrorKind {
    pub const ALL: &'static [ErrorKind] = &[
        ErrorKind::NotFound,
        ErrorKind::InvalidArgument,
        ErrorKind::Edge,
        ErrorKind::Precondition,
    ];

    /// The exception class's name; the family's base class is [`BASE_CLASS`].
    pub const fn class_name(self) -> &'static str {
        match self {
            ErrorKind::NotFound => "DagNotFoundError",
            ErrorKind::InvalidArgument => "DagInvalidArgumentError",
            ErrorKind::Edge => "DagEdgeError",
            ErrorKind::Precondition => "DagPreconditionError",
        }
    }

    pub const fn doc(self) -> &'static str {
        match self {
            ErrorKind::NotFound => {
                "An unknown id, or an inactive node where an active one is required."
            }
            ErrorKind::InvalidArgument => "An argument has the wrong type or value.",
            ErrorKind::Edge => "An edge would break the graph's structure.",
            ErrorKind::Precondition => "A mutation's documented precondition does not hold.",
        }
    }

    /// The code a class carries as a class attribute, when the family has exactly one code.
    pub fn only_code(self) -> Option<DagCode> {
        let mut codes = DagCode::ALL.iter().filter(|c| c.kind() == self);
        match (codes.next(), codes.next()) {
            (Some(&c), None) => Some(c),
            _ => None,
        }
    }
}

/// The family's base class and the code it carries as a class attribute.
pub const BASE_CLASS: &str = "DagError";
pub const BASE_CODE: &str = "dag.error";
pub const BASE_DOC: &str =
    "A DAG operation failed; `.code` names what went wrong (e.g. `dag.edge.cycle`).";

macro_rules! dag_codes {
    ($($(#[$doc:meta])* $variant:ident = $code:literal, $kind:ident;)*) => {
        /// Every code the DAG engine raises.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum DagCode {
            $($(#[$doc])* $variant,)*
        }

        impl DagCode {
            pub const ALL: &'static [DagCode] = &[$(DagCode::$variant,)*];

            pub const fn as_str(self) -> &'static str {
                match self {
                    $(DagCode::$variant => $code,)*
                }
            }

            pub const fn kind(self) -> ErrorKind {
                match self {
                    $(DagCode::$variant => ErrorKind::$kind,)*
                }
            }
        }
    };
}

dag_codes! {
    /// Unknown node id, or an inactive node where an active one is required.
    NodeNotFound = "dag.node_not_found", NotFound;
    EdgeNotFound = "dag.edge_not_found", NotFound;
    /// A wrong type or value: unknown vocabulary, a non-dict payload, an id already used, ...
    InvalidArgument = "dag.invalid_argument", InvalidArgument;
    EdgeSelfLoop = "dag.edge.self_loop", Edge;
    EdgeCycle = "dag.edge.cycle", Edge;
    EdgeInactiveEndpoint = "dag.edge.inactive_endpoint", Edge;
    ForkSourceInactive = "dag.fork.source_inactive", Precondition;
    ForkSourceNotTerminal = "dag.fork.source_not_terminal", Precondition;
    RetryNotRetriable = "dag.retry.not_retriable", Precondition;
    RetryBadState = "dag.retry.bad_state", Precondition;
    RetryDownstreamNotPending = "dag.retry.downstream_not_pending", Precondition;
    RegenerateBadState = "dag.regenerate.bad_state", Precondition;
    RegenerateNotLeaf = "dag.regenerate.not_leaf", Precondition;
    EditBadState = "dag.edit.bad_state", Precondition;
    EditDownstreamActive = "dag.edit.downstream_active", Precondition;
    CompressAlreadyCompressed = "dag.compress.already_compressed", Precondition;
    CompressNotFinished = "dag.compress.not_finished", Precondition;
    CompressSummaryWouldBeLeaf = "dag.compress.summary_would_be_leaf", Precondition;
    /// A result from a worker whose lease on the node was lost (reclaimed, or claimed by another).
    ClaimLeaseLost = "dag.claim.lease_lost", Precondition;
    /// A stored graph id that the store does not hold (raised by `chainwarden.dag.Store`).
    GraphNotFound = "dag.graph_not_found", NotFound;
}

impl fmt::Display for DagCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Codes compare with their string form, so tests read like the contract.
impl PartialEq<&str> for DagCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagError {
    pub code: DagCode,
    pub message: String,
}

impl DagError {
    pub fn new(code: DagCode, message: impl Into<String>) -> Self {
        DagError {
            code,
            message: message.into(),
        }
    }

    pub fn kind(&self) -> ErrorKind {
        self.code.kind()
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(DagCode::InvalidArgument, message)
    }

    pub fn node_not_found(id: &str) -> Self {
        Self::new(DagCode::NodeNotFound, format!("node {id:?} not found"))
    }

    pub fn node_inactive(id: &str) -> Self {
        Self::new(DagCode::NodeNotFound, format!("node {id:?} is inactive"))
    }

    pub fn edge_not_found(id: &str) -> Self {
        Self::new(DagCode::EdgeNotFound, format!("edge {id:?} not found"))
    }
}

impl fmt::Display for DagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for DagError {}

pub type DagResult<T> = Result<T, DagError>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every code follows the one naming scheme, and no two codes share a string.
    #[test]
    fn codes_follow_the_naming_scheme() {
        let mut seen = std::collections::HashSet::new();
        for code in DagCode::ALL {
            let s = code.as_str();
            assert!(seen.insert(s), "{s} twice");
            let parts: Vec<&str> = s.split('.').collect();
            assert_eq!(parts[0], "dag", "{s}");
            assert!((2..=3).contains(&parts.len()), "{s}");
            for p in &parts {
                assert!(
                    !p.is_empty() && p.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
                    "{s}"
                );
            }
        }
        assert_eq!(
            ErrorKind::InvalidArgument.only_code(),
            Some(DagCode::InvalidArgument)
        );
        assert_eq!(ErrorKind::NotFound.only_code(), None);
    }
}
