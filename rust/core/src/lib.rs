//! chainwarden-core: the pure-Rust engines behind the `chainwarden` Python package.
//!
//! Nothing here knows about Python; `rust/py` translates at the edge.

pub mod clock;
pub mod codes;
pub mod containment;
pub mod dag;
pub mod ids;
pub mod json;
pub mod recorder;
pub mod value;
pub mod vocab;
pub mod vocabularies;
