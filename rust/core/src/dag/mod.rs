//! DAG engine (docs/dag-rules.md): conversation / task graph with gated scheduling, causal context, failure
//! propagation, leaf repair, versioned rewrites and compression. Pure Rust; `rust/py` exposes it.

mod adjacency;
mod arena;
mod bulk;
mod chunks;
mod compress;
mod context;
mod create;
mod cycle;
mod delta;
mod derived;
mod edge_keys;
mod error;
mod events;
mod gating;
mod growth;
mod index;
mod invariants;
mod lease;
mod leaves;
mod mermaid;
mod mutations;
mod node_set;
mod outcome;
mod persist;
pub mod preview;
mod propagation;
mod records;
mod state;
mod txn;
mod types;

pub use crate::clock::now;
pub use crate::ids::uuid7;
pub use crate::value::{Map, Value};
pub use arena::{Dag, Edge, Node};
pub use create::NodeSpec;
pub use cycle::{inline, LongStep};
pub use delta::{Delta, Mark, Row};
pub use error::{DagCode, DagError, DagResult};
pub use events::{Event, EventRef, Particulars};
pub use index::{IdIndex, IdRows};
pub use lease::Work;
pub use mermaid::label as mermaid_label;
pub use outcome::{Applied, Outcome};
pub use state::FinishPayload;
pub use txn::Commit;
pub use types::{EdgeType, NodeType, State};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_ids;
#[cfg(test)]
mod tests_workflow;
