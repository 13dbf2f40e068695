//! Call-graph recorder (docs/recorder.md): one node per LLM/tool/system call of an agent
//! chain, a strict lifecycle, incremental aggregates and amplification metrics.

pub mod aggregates;
pub mod arena;
pub mod divergence;
pub mod error;
pub mod events;
mod evictable;
pub mod graph;
pub mod intern;
pub mod kind;
mod load;
pub mod node;
pub mod node_ref;
pub mod record;
pub mod snapshot_json;

pub use aggregates::AggregatesView;
pub use error::RecorderError;
pub use graph::{Config, Graph, Spent, Terminal};
pub use kind::{Kind, Status};
pub use node_ref::NodeRef;
pub use record::{Batch, FinishedCall, Recorded};

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_record;
