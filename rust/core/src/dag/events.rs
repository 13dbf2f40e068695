//! The append-only event log (audit and replay).
//!
//! Nearly every event is one of four small shapes (a node created, an edge created, a state change, a leaf
//! repaired) whose particulars are two vocabulary words or ids of the graph's own nodes and edges. Those are
//! stored as arena positions and rendered only when read, against the graph that holds them: an event is 16
//! bytes, and a new node with its edge writes two (docs/dag.md "Memory"). Everything else (compression,
//! rewrites, events loaded from a file in another shape or naming what the graph does not hold) keeps its
//! subject and value behind one pointer.

use crate::ids::Id;

use super::arena::Dag;
use super::types::{EdgeType, NodeType, State};

use crate::value::Value;

/// One stored event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    stored: Stored,
}

/// The typed shapes hold arena positions (a node or edge is never removed while an event names it: a
/// rollback truncates the log before it pops what the log names). An event that records a creation has
/// its object's `created_at` as its time (they are one clock reading), so only a state change holds one.
#[derive(Clone, Debug, PartialEq)]
enum Stored {
    NodeCreated {
        node: u32,
        node_type: NodeType,
        state: State,
    },
    EdgeCreated {
        edge: u32,
    },
    StateChanged {
        node: u32,
        from: State,
        to: State,
        at: f64,
    },
    /// `node` is the agent message added under `leaf`.
    LeafRepaired {
        node: u32,
        leaf: u32,
    },
    Other(Box<Other>),
}

#[derive(Clone, Debug, PartialEq)]
struct Other {
    event_type: Box<str>,
    subject_id: Id,
    particulars: Value,
    created_at: f64,
}

/// An event's particulars as read, resolved against its graph.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Particulars<'a> {
    NodeCreated {
        node_type: NodeType,
        state: State,
    },
    EdgeCreated {
        edge_type: EdgeType,
        from: &'a str,
        to: &'a str,
    },
    StateChanged {
        from: State,
        to: State,
    },
    LeafRepaired {
        leaf: &'a str,
    },
    /// Any other event type, or a known one whose particulars have another shape.
    Other {
        particulars: &'a Value,
    },
}

/// One event as read: [`Dag::events`] gives these.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EventRef<'a> {
    pub event_type: &'a str,
    pub subject_id: &'a str,
    pub particulars: Particulars<'a>,
    pub created_at: f64,
}

const NODE_CREATED: &str = "node_created";
const EDGE_CREATED: &str = "edge_created";
const STATE_CHANGED: &str = "node_state_changed";
const LEAF_REPAIRED: &str = "leaf_invariant_repaired";

impl Particulars<'_> {
    /// The typed shapes as their (key, text) pairs, in the order the API and the file show them; None for
    /// [`Particulars::Other`]. The one place each shape's keys are written.
    pub fn with_pairs<R>(&self, f: impl FnOnce(&[(&str, &str)]) -> R) -> Option<R> {
        Some(match self {
            Particulars::NodeCreated { node_type, state } => {
                f(&[("node_type", node_type.as_str()), ("state", state.as_str())])
            }
            Particulars::EdgeCreated {
                edge_type,
                from,
                to,
            } => f(&[
                ("edge_type", edge_type.as_str()),
                ("from_node_id", from),
                ("to_node_id", to),
            ]),
            Particulars::StateChanged { from, to } => {
                f(&[("from", from.as_str()), ("to", to.as_str())])
            }
            Particulars::LeafRepaired { leaf } => f(&[("leaf_node_id", leaf)]),
            Particulars::Other { .. } => return None,
        })
    }

    /// The JSON object the API and the file show (keys in this order).
    pub fn value(&self) -> Value {
        self.with_pairs(strings_object)
            .unwrap_or_else(|| match self {
                Particulars::Other { particulars } => (*particulars).clone(),
                _ => unreachable!("typed particulars have pairs"),
            })
    }
}

impl EventRef<'_> {
    /// The particulars as the JSON object the API and the file show.
    pub fn particulars_value(&self) -> Value {
        self.particulars.value()
    }
}

impl Event {
    fn typed(stored: Stored) -> Event {
        Event { stored }
    }

    /// Whether the event is kept as its value (not one of the typed shapes).
    #[cfg(test)]
    pub(crate) fn is_other(&self) -> bool {
        matches!(self.stored, Stored::Other(_))
    }

    /// An event read back from a file or a row, `dag` holding the nodes and edges it may name: stored typed
    /// when its subject and ids are the graph's and rendering the typed form gives back exactly the value
    /// that was read (so a round trip is byte-identical), as it is otherwise.
    pub fn loaded(
        event_type: &str,
        subject_id: &str,
        particulars: Value,
        created_at: f64,
        dag: &Dag,
    ) -> Event {
        // Only a small object of strings can be one of the typed shapes.
        let typed = match &particulars {
            Value::Object(m) if m.len() <= crate::json::FLAT_PAIRS => {
                let pairs: Option<FlatPairs<'_>> = m
                    .iter()
                    .map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)))
                    .collect();
                pairs.and_then(|p| dag.typed_event(event_type, subject_id, &p, created_at))
            }
            _ => None,
        };
        match typed {
            Some(stored) => Event::typed(stored),
            None => dag.other_event(event_type, subject_id, particulars, created_at),
        }
    }

    /// [`Event::loaded`] of particulars read as string pairs (`json::Pull::item_flat`): a typed event is
    /// stored without building its value first.
    pub fn loaded_pairs(
        event_type: &str,
        subject_id: &str,
        pairs: &[(&str, &str)],
        created_at: f64,
        dag: &Dag,
    ) -> Event {
        match dag.typed_event(event_type, subject_id, pairs, created_at) {
            Some(stored) => Event::typed(stored),
            None => dag.other_event(event_type, subject_id, strings_object(pairs), created_at),
        }
    }
}

/// A small object of string values as (key, value) pairs, keys in order: what a typed event's particulars
/// are read from, whether they come as a value (`Event::loaded`) or straight from the text (`persist.rs`).
pub(crate) type FlatPairs<'a> = smallvec::SmallVec<[(&'a str, &'a str); crate::json::FLAT_PAIRS]>;

/// An object of string values, keys in order.
fn strings_object(pairs: &[(&str, &str)]) -> Value {
    Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), Value::Str((*v).to_owned())))
            .collect(),
    )
}

pub(crate) fn obj(pairs: Vec<(&str, Value)>) -> Value {
    Value::Object(pairs.into_iter().map(|(k, v)| (k.into(), v)).collect())
}

pub(crate) fn str_list<'a>(ids: impl IntoIterator<Item = &'a str>) -> Value {
    let mut v: Vec<&str> = ids.into_iter().collect();
    v.sort_unstable();
    Value::Array(v.into_iter().map(|s| Value::Str(s.to_owned())).collect())
}

impl Dag {
    /// The events in the order they happened.
    pub fn events(&self) -> impl DoubleEndedIterator<Item = EventRef<'_>> + '_ {
        self.events.iter().map(|e| self.read_event(e))
    }

    /// The events from position `from` on.
    pub(crate) fn events_from(&self, from: usize) -> impl Iterator<Item = EventRef<'_>> + '_ {
        self.events.iter_from(from).map(|e| self.read_event(e))
    }

    /// A stored event resolved against this graph.
    pub(crate) fn read_event<'a>(&'a self, e: &'a Event) -> EventRef<'a> {
        let node = |n: u32| &self.nodes[n as usize];
        let (event_type, subject_id, particulars, created_at) = match &e.stored {
            Stored::NodeCreated {
                node: n,
                node_type,
                state,
            } => (
                NODE_CREATED,
                &node(*n).id,
                Particulars::NodeCreated {
                    node_type: *node_type,
                    state: *state,
                },
                node(*n).created_at,
            ),
            Stored::EdgeCreated { edge } => {
                let edge = &self.edges[*edge as usize];
                (
                    EDGE_CREATED,
                    &edge.id,
                    Particulars::EdgeCreated {
                        edge_type: edge.edge_type,
                        from: &node(edge.from).id,
                        to: &node(edge.to).id,
                    },
                    edge.created_at,
                )
            }
            Stored::StateChanged {
                node: n,
                from,
                to,
                at,
            } => (
                STATE_CHANGED,
                &node(*n).id,
                Particulars::StateChanged {
                    from: *from,
                    to: *to,
                },
                *at,
            ),
            Stored::LeafRepaired { node: n, leaf } => (
                LEAF_REPAIRED,
                &node(*n).id,
                Particulars::LeafRepaired {
                    leaf: &node(*leaf).id,
                },
                node(*n).created_at,
            ),
            Stored::Other(o) => (
                &*o.event_type,
                &o.subject_id,
                Particulars::Other {
                    particulars: &o.particulars,
                },
                o.created_at,
            ),
        };
        EventRef {
            event_type,
            subject_id,
            particulars,
            created_at,
        }
    }

    /// The typed form of an event read back (unique keys, in order), when its subject and ids are this
    /// graph's and reading it gives back exactly these pairs and this time; None otherwise.
    fn typed_event(
        &self,
        event_type: &str,
        subject: &str,
        pairs: &[(&str, &str)],
        at: f64,
    ) -> Option<Stored> {
        let text = |k: &str| pairs.iter().find(|(pk, _)| *pk == k).map(|(_, v)| *v);
        let node = || self.node_index.get(subject, &self.nodes);
        let stored = match event_type {
            NODE_CREATED => Stored::NodeCreated {
                node: node()?,
                node_type: NodeType::parse(text("node_type")?).ok()?,
                state: State::parse(text("state")?).ok()?,
            },
            EDGE_CREATED => Stored::EdgeCreated {
                edge: self.edge_index.get(subject, &self.edges)?,
            },
            STATE_CHANGED => Stored::StateChanged {
                node: node()?,
                from: State::parse(text("from")?).ok()?,
                to: State::parse(text("to")?).ok()?,
                at,
            },
            LEAF_REPAIRED => Stored::LeafRepaired {
                node: node()?,
                leaf: self.node_index.get(text("leaf_node_id")?, &self.nodes)?,
            },
            _ => return None,
        };
        let candidate = Event::typed(stored);
        let read = self.read_event(&candidate);
        (read.subject_id == subject
            && read.created_at.to_bits() == at.to_bits()
            && read
                .particulars
                .with_pairs(|want| want == pairs)
                .unwrap_or(false))
        .then_some(candidate.stored)
    }

    /// An event kept as read, its subject sharing the graph's id string when it names a node or edge.
    fn other_event(&self, event_type: &str, subject: &str, particulars: Value, at: f64) -> Event {
        Event::typed(Stored::Other(Box::new(Other {
            event_type: event_type.into(),
            subject_id: self.shared_id(subject),
            particulars,
            created_at: at,
        })))
    }

    /// Records node `n`'s creation (its time is the node's `created_at`).
    /// Records node `n`'s creation with the type and state it was created with.
    pub(crate) fn record_node_created(&mut self, n: u32, node_type: NodeType, state: State) {
        let stored = Stored::NodeCreated {
            node: n,
            node_type,
            state,
        };
        self.events.push(Event::typed(stored));
    }

    /// Records edge `e`'s creation (its time is the edge's `created_at`).
    pub(crate) fn record_edge_created(&mut self, e: u32) {
        self.events
            .push(Event::typed(Stored::EdgeCreated { edge: e }));
    }

    /// Records that `node` (its time is the node's `created_at`) was added under the bad leaf `leaf`.
    pub(crate) fn record_leaf_repaired(&mut self, node: u32, leaf: u32) {
        self.events
            .push(Event::typed(Stored::LeafRepaired { node, leaf }));
    }

    pub(crate) fn record_state_change(&mut self, node: u32, from: State, to: State, at: f64) {
        self.events
            .push(Event::typed(Stored::StateChanged { node, from, to, at }));
    }

    pub(crate) fn record(&mut self, event_type: &str, subject: &Id, particulars: Value, at: f64) {
        let other = Other {
            event_type: event_type.into(),
            subject_id: subject.clone(),
            particulars,
            created_at: at,
        };
        self.events
            .push(Event::typed(Stored::Other(Box::new(other))));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dag::NodeSpec;

    /// A graph whose log holds each typed shape: two nodes, an edge, a state change, a repaired leaf.
    fn graph() -> Dag {
        let mut g = Dag::new(None);
        let spec = NodeSpec {
            content: Some(Value::Str("hi".into())),
            ..NodeSpec::default()
        };
        let a = g.create_node("user_message", "finished", spec).unwrap();
        let b = g
            .create_node("task", "pending", NodeSpec::default())
            .unwrap();
        g.create_edge(&a, &b, "branch", None, None).unwrap();
        assert!(g.mark_running(&b).unwrap());
        assert!(g.mark_errored(&b, "boom").unwrap());
        assert!(!g.repair_leaves().is_empty());
        g
    }

    #[test]
    fn typed_events_are_small() {
        assert!(std::mem::size_of::<Event>() <= 16);
    }

    #[test]
    fn typed_events_render_and_load_back_typed() {
        let g = graph();
        let mut seen = Vec::new();
        for (stored, read) in g.events.iter().zip(g.events()) {
            seen.push(read.event_type);
            assert!(!stored.is_other(), "{}", read.event_type);
            let back = Event::loaded(
                read.event_type,
                read.subject_id,
                read.particulars_value(),
                read.created_at,
                &g,
            );
            assert_eq!(&back, stored);
        }
        for t in [NODE_CREATED, EDGE_CREATED, STATE_CHANGED, LEAF_REPAIRED] {
            assert!(seen.contains(&t), "{t}");
        }
    }

    #[test]
    fn other_shapes_load_as_they_are() {
        let g = graph();
        let read: Vec<EventRef<'_>> = g.events().collect();
        let node = read[0].subject_id;
        let edge = read.iter().find(|e| e.event_type == EDGE_CREATED).unwrap();
        let Particulars::EdgeCreated { from, to, .. } = edge.particulars else {
            panic!("not typed")
        };
        let text = |v: &str| Value::Str(v.into());
        // A known type with an extra key, keys in another order, an unknown word, an edge whose ends are
        // not the named edge's, a subject the graph does not hold, another type, another time: kept
        // verbatim.
        let cases = [
            (
                STATE_CHANGED,
                node,
                obj(vec![
                    ("from", text("pending")),
                    ("to", text("running")),
                    ("why", Value::Int(1)),
                ]),
            ),
            (
                NODE_CREATED,
                node,
                obj(vec![
                    ("state", text("pending")),
                    ("node_type", text("task")),
                ]),
            ),
            (
                NODE_CREATED,
                node,
                obj(vec![
                    ("node_type", text("robot")),
                    ("state", text("pending")),
                ]),
            ),
            (
                EDGE_CREATED,
                edge.subject_id,
                obj(vec![
                    ("edge_type", text("branch")),
                    ("from_node_id", text(to)),
                    ("to_node_id", text(from)),
                ]),
            ),
            (
                NODE_CREATED,
                "elsewhere",
                obj(vec![
                    ("node_type", text("task")),
                    ("state", text("pending")),
                ]),
            ),
            (
                LEAF_REPAIRED,
                node,
                obj(vec![("leaf_node_id", text("elsewhere"))]),
            ),
            ("custom", node, Value::Int(3)),
            // The very creation event, at another time than its node's.
            (NODE_CREATED, node, read[0].particulars_value()),
        ];
        for (t, subject, p) in cases {
            let e = Event::loaded(t, subject, p.clone(), 0.0, &g);
            assert!(e.is_other(), "{t} {p:?}");
            let back = g.read_event(&e);
            assert_eq!(
                (back.event_type, back.subject_id, back.particulars_value()),
                (t, subject, p)
            );
        }
    }
}
