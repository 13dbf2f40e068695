//! The DAG engine's error: a code of the core's one registry (`DagCode`, rows of `crate::codes`) and a
//! message. A code is the contract (docs/dag.md "Errors"); the message is for humans.

use std::fmt;

use crate::codes::Class;
pub use crate::codes::DagCode;

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

    /// The exception class the code is raised as.
    pub fn class(&self) -> Class {
        self.code.class()
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
