//! How a caller names a node: by its id (the containment layer, which keeps ids as numbers) or by
//! its text (`n000001`, what Python passes). One method per operation serves both, and an id is
//! never formatted only to be parsed back (docs/recorder.md "Nodes and lifecycle").

use crate::ids::{id_string, parse_id, NodeId};

pub trait NodeRef: Copy {
    /// The id, or `None` for a text this graph could not have made.
    fn id(self) -> Option<NodeId>;
    /// The node as an error names it.
    fn text(self) -> String;
}

impl NodeRef for NodeId {
    fn id(self) -> Option<NodeId> {
        Some(self)
    }

    fn text(self) -> String {
        id_string(self)
    }
}

impl NodeRef for &str {
    fn id(self) -> Option<NodeId> {
        parse_id(self)
    }

    fn text(self) -> String {
        self.to_owned()
    }
}

impl NodeRef for &String {
    fn id(self) -> Option<NodeId> {
        self.as_str().id()
    }

    fn text(self) -> String {
        self.clone()
    }
}
