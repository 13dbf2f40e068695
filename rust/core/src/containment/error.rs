//! Containment's errors: each variant is one row of the core's registry (`ContainmentCode` in `crate::codes`,
//! docs/design.md §28); errors of the chain's call graph keep their own `recorder.*` row.

use std::fmt;

use crate::codes::{Code, ContainmentCode};

use crate::recorder::RecorderError;

#[derive(Clone, Debug, PartialEq)]
pub enum ContainmentError {
    /// A call id that is not (or no longer) open in this chain.
    NotOpen(String),
    /// A reported number out of range, or a total that would overflow (docs/design.md §23).
    InvalidNumber { field: &'static str, reason: String },
    /// The chain's call graph refused.
    Graph(RecorderError),
}

impl ContainmentError {
    /// This error's row of the core's registry.
    pub fn code(&self) -> Code {
        match self {
            ContainmentError::NotOpen(_) => ContainmentCode::NotOpen.into(),
            ContainmentError::InvalidNumber { .. } => ContainmentCode::InvalidNumber.into(),
            ContainmentError::Graph(e) => e.code().into(),
        }
    }
}

impl From<RecorderError> for ContainmentError {
    fn from(e: RecorderError) -> Self {
        ContainmentError::Graph(e)
    }
}

impl fmt::Display for ContainmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContainmentError::NotOpen(id) => write!(f, "Node not found: '{id}'"),
            ContainmentError::InvalidNumber { field, reason } => write!(f, "{field} {reason}"),
            ContainmentError::Graph(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for ContainmentError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn graph_errors_keep_the_recorder_code() {
        let graph = ContainmentError::from(RecorderError::RootExists("r".into()));
        assert_eq!(graph.code(), "recorder.create_root.root_exists");
        assert_eq!(
            ContainmentError::NotOpen("n1".into()).code(),
            "containment.not_open"
        );
        // Every containment row is raised by a variant.
        let own = [
            ContainmentError::NotOpen("n1".into()).code(),
            ContainmentError::InvalidNumber {
                field: "cost_usd",
                reason: String::new(),
            }
            .code(),
        ];
        let rows: Vec<Code> = ContainmentCode::ALL.iter().map(|&c| c.into()).collect();
        assert_eq!(own.as_slice(), rows.as_slice());
    }
}
