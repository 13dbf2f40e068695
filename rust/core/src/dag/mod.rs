//! DAG engine (docs/dag-rules.md): conversation / task graph with gated scheduling, causal context, failure
//! propagation, leaf repair, versioned rewrites and compression. Pure Rust; `rust/py` exposes it.

mod arena;
mod bulk;
mod compress;
mod context;
mod create;
mod cycle;
mod delta;
mod derived;
mod error;
mod events;
mod gating;
mod ids;
mod invariants;
pub mod json;
mod lease;
mod leaves;
mod mermaid;
mod mutations;
mod outcome;
mod persist;
pub mod preview;
mod propagation;
mod records;
mod state;
mod txn;
mod types;
pub mod value;

pub use arena::{Dag, Edge, Node};
pub use create::NodeSpec;
pub use delta::{Delta, Mark, Row};
pub use error::{DagError, DagResult, ErrorKind};
pub use events::Event;
pub use ids::{now, uuid7};
pub use mermaid::label as mermaid_label;
pub use outcome::{Applied, Outcome};
pub use state::FinishPayload;
pub use types::{EdgeType, NodeType, State};
pub use value::{Map, Value};

#[cfg(test)]
mod tests;
