//! The append-only event log (audit and replay).
//!
//! Nearly every event is one of four small shapes (a node created, an edge created, a state change, a leaf
//! repaired) whose particulars are two vocabulary words or two ids. Those are stored typed, sharing the
//! graph's id strings, and rendered as JSON values only when read: a node of a long conversation used to carry
//! two events of about 400 bytes of separately allocated keys and strings; now each is one 64-byte record.
//! Everything else (compression, rewrites, events loaded from a file in another shape) keeps its value.

use std::sync::Arc;

use super::arena::Dag;
use super::types::{EdgeType, NodeType, State};
use smallvec::SmallVec;

use crate::json::FLAT_PAIRS;
use crate::value::Value;

/// Gives an id read back as a shared string: the graph's own when it names one of its nodes or edges
/// (`Dag::shared_id`), so loaded events hold no copies of ids.
pub type Ids<'a> = dyn Fn(&str) -> Arc<str> + Sync + 'a;

#[derive(Clone, Debug, PartialEq)]
pub enum Particulars {
    NodeCreated {
        node_type: NodeType,
        state: State,
    },
    EdgeCreated {
        edge_type: EdgeType,
        from: Arc<str>,
        to: Arc<str>,
    },
    StateChanged {
        from: State,
        to: State,
    },
    LeafRepaired {
        leaf: Arc<str>,
    },
    /// Any other event type, or a known one whose particulars have another shape.
    Other {
        event_type: Box<str>,
        particulars: Box<Value>,
    },
}

impl Particulars {
    /// The typed shapes as their (key, text) pairs, in the order the API and the file show them; None for
    /// [`Particulars::Other`]. The one place each shape's keys are written.
    fn with_pairs<R>(&self, f: impl FnOnce(&[(&str, &str)]) -> R) -> Option<R> {
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

    /// The typed form of particulars read back (unique keys, in order), when rendering it gives back exactly
    /// these pairs (so a round trip is byte-identical); None otherwise.
    fn typed(event_type: &str, pairs: &[(&str, &str)], ids: &Ids<'_>) -> Option<Particulars> {
        let text = |k: &str| pairs.iter().find(|(pk, _)| *pk == k).map(|(_, v)| *v);
        let typed = match event_type {
            NODE_CREATED => match (text("node_type"), text("state")) {
                (Some(t), Some(s)) => NodeType::parse(t)
                    .ok()
                    .zip(State::parse(s).ok())
                    .map(|(node_type, state)| Particulars::NodeCreated { node_type, state }),
                _ => None,
            },
            EDGE_CREATED => match (text("edge_type"), text("from_node_id"), text("to_node_id")) {
                (Some(t), Some(f), Some(to)) => {
                    EdgeType::parse(t)
                        .ok()
                        .map(|edge_type| Particulars::EdgeCreated {
                            edge_type,
                            from: ids(f),
                            to: ids(to),
                        })
                }
                _ => None,
            },
            STATE_CHANGED => match (text("from"), text("to")) {
                (Some(f), Some(t)) => State::parse(f)
                    .ok()
                    .zip(State::parse(t).ok())
                    .map(|(from, to)| Particulars::StateChanged { from, to }),
                _ => None,
            },
            LEAF_REPAIRED => {
                text("leaf_node_id").map(|l| Particulars::LeafRepaired { leaf: ids(l) })
            }
            _ => None,
        }?;
        typed
            .with_pairs(|want| want == pairs)
            .unwrap_or(false)
            .then_some(typed)
    }

    /// The JSON object the API and the file show (keys in this order).
    pub fn value(&self) -> Value {
        self.with_pairs(strings_object)
            .unwrap_or_else(|| match self {
                Particulars::Other { particulars, .. } => (**particulars).clone(),
                _ => unreachable!("typed particulars have pairs"),
            })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub subject_id: Arc<str>,
    pub particulars: Particulars,
    pub created_at: f64,
}

const NODE_CREATED: &str = "node_created";
const EDGE_CREATED: &str = "edge_created";
const STATE_CHANGED: &str = "node_state_changed";
const LEAF_REPAIRED: &str = "leaf_invariant_repaired";

impl Event {
    pub fn event_type(&self) -> &str {
        match &self.particulars {
            Particulars::NodeCreated { .. } => NODE_CREATED,
            Particulars::EdgeCreated { .. } => EDGE_CREATED,
            Particulars::StateChanged { .. } => STATE_CHANGED,
            Particulars::LeafRepaired { .. } => LEAF_REPAIRED,
            Particulars::Other { event_type, .. } => event_type,
        }
    }

    /// The particulars as the JSON object the API and the file show.
    pub fn particulars_value(&self) -> Value {
        self.particulars.value()
    }

    /// An event read back from a file: stored typed when rendering the typed form gives back exactly the
    /// value that was read (so a round trip is byte-identical), as it is otherwise.
    pub fn loaded(
        event_type: &str,
        subject_id: Arc<str>,
        particulars: Value,
        created_at: f64,
        ids: &Ids<'_>,
    ) -> Event {
        // Only a small object of strings can be one of the typed shapes.
        let pairs: Option<SmallVec<[(&str, &str); FLAT_PAIRS]>> = match &particulars {
            Value::Object(m) if m.len() <= FLAT_PAIRS => m
                .iter()
                .map(|(k, v)| v.as_str().map(|s| (k.as_str(), s)))
                .collect(),
            _ => None,
        };
        let particulars = match pairs.and_then(|p| Particulars::typed(event_type, &p, ids)) {
            Some(typed) => typed,
            None => Particulars::Other {
                event_type: event_type.into(),
                particulars: Box::new(particulars),
            },
        };
        Event {
            subject_id,
            particulars,
            created_at,
        }
    }

    /// [`Event::loaded`] of particulars read as string pairs (`json::Pull::item_flat`): a typed event is
    /// stored without building its value first.
    pub fn loaded_pairs(
        event_type: &str,
        subject_id: Arc<str>,
        pairs: &[(&str, &str)],
        created_at: f64,
        ids: &Ids<'_>,
    ) -> Event {
        let particulars =
            Particulars::typed(event_type, pairs, ids).unwrap_or_else(|| Particulars::Other {
                event_type: event_type.into(),
                particulars: Box::new(strings_object(pairs)),
            });
        Event {
            subject_id,
            particulars,
            created_at,
        }
    }
}

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
    pub fn events(&self) -> impl DoubleEndedIterator<Item = &Event> + '_ {
        self.events.iter()
    }

    pub(crate) fn record_typed(&mut self, subject: &Arc<str>, particulars: Particulars, at: f64) {
        self.record_owned(subject.clone(), particulars, at);
    }

    /// [`Dag::record_typed`] of a subject the caller already holds a count of (a new node's or edge's id):
    /// no second count up and down per event on the build path.
    pub(crate) fn record_owned(&mut self, subject: Arc<str>, particulars: Particulars, at: f64) {
        self.events.push(Event {
            subject_id: subject,
            particulars,
            created_at: at,
        });
    }

    pub(crate) fn record(
        &mut self,
        event_type: &str,
        subject: &Arc<str>,
        particulars: Value,
        at: f64,
    ) {
        let p = Particulars::Other {
            event_type: event_type.into(),
            particulars: Box::new(particulars),
        };
        self.record_typed(subject, p, at);
    }

    pub(crate) fn record_state_change(&mut self, id: &Arc<str>, from: State, to: State, at: f64) {
        self.record_typed(id, Particulars::StateChanged { from, to }, at);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(p: Particulars) -> Event {
        Event {
            subject_id: Arc::from("s"),
            particulars: p,
            created_at: 1.5,
        }
    }

    #[test]
    fn typed_events_are_small() {
        assert!(std::mem::size_of::<Event>() <= 64);
    }

    #[test]
    fn typed_particulars_render_and_load_back_typed() {
        let all = [
            Particulars::NodeCreated {
                node_type: NodeType::Task,
                state: State::Pending,
            },
            Particulars::EdgeCreated {
                edge_type: EdgeType::Branch,
                from: Arc::from("a"),
                to: Arc::from("b"),
            },
            Particulars::StateChanged {
                from: State::Running,
                to: State::Errored,
            },
            Particulars::LeafRepaired {
                leaf: Arc::from("l"),
            },
        ];
        for p in all {
            let e = event(p);
            let back = Event::loaded(
                e.event_type(),
                e.subject_id.clone(),
                e.particulars_value(),
                e.created_at,
                &|s| Arc::from(s),
            );
            assert_eq!(back, e);
        }
    }

    #[test]
    fn other_shapes_load_as_they_are() {
        // A known type with an extra key, keys in another order, an unknown word: kept verbatim.
        let extra = obj(vec![
            ("from", Value::Str("pending".into())),
            ("to", Value::Str("running".into())),
            ("why", Value::Int(1)),
        ]);
        let swapped = obj(vec![
            ("state", Value::Str("pending".into())),
            ("node_type", Value::Str("task".into())),
        ]);
        let unknown = obj(vec![
            ("node_type", Value::Str("robot".into())),
            ("state", Value::Str("pending".into())),
        ]);
        for (t, p) in [
            (STATE_CHANGED, extra),
            (NODE_CREATED, swapped),
            (NODE_CREATED, unknown),
            ("custom", Value::Int(3)),
        ] {
            let e = Event::loaded(t, Arc::from("s"), p.clone(), 0.0, &|s| Arc::from(s));
            assert!(matches!(e.particulars, Particulars::Other { .. }));
            assert_eq!((e.event_type(), e.particulars_value()), (t, p));
        }
    }
}
