//! The engine's single error type: a stable code (the contract) plus a human message.

use std::fmt;

/// Which Python exception family a code belongs to; the bindings map it to a class.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    InvalidArgument,
    Edge,
    Precondition,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DagError {
    pub code: &'static str,
    pub kind: ErrorKind,
    pub message: String,
}

impl DagError {
    pub fn new(code: &'static str, kind: ErrorKind, message: impl Into<String>) -> Self {
        DagError {
            code,
            kind,
            message: message.into(),
        }
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new("dag.invalid_argument", ErrorKind::InvalidArgument, message)
    }

    pub fn node_not_found(id: &str) -> Self {
        Self::new(
            "dag.node_not_found",
            ErrorKind::NotFound,
            format!("node {id:?} not found"),
        )
    }

    pub fn node_inactive(id: &str) -> Self {
        Self::new(
            "dag.node_not_found",
            ErrorKind::NotFound,
            format!("node {id:?} is inactive"),
        )
    }

    pub fn edge_not_found(id: &str) -> Self {
        Self::new(
            "dag.edge_not_found",
            ErrorKind::NotFound,
            format!("edge {id:?} not found"),
        )
    }

    pub fn edge(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, ErrorKind::Edge, message)
    }

    pub fn precondition(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(code, ErrorKind::Precondition, message)
    }
}

impl fmt::Display for DagError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}", self.code, self.message)
    }
}

impl std::error::Error for DagError {}

pub type DagResult<T> = Result<T, DagError>;
