//! Every closed word list the package publishes, by name: the engines' vocabularies (each defined once with
//! `vocab!`) and the subsets the engines decide (which statuses end a node, which DAG node types run, which
//! DAG states an executor may report). The bindings export this table as it is and the Python layer builds its enums from it
//! (docs/errors.md "Vocabularies"), so no word list is written out in Python.

use crate::containment;
use crate::dag::{EdgeType, NodeType, State};
use crate::recorder::{Kind, Status};

/// One published word list: its name (lower snake case) and its words, in the engine's order.
pub struct Vocabulary {
    pub name: &'static str,
    pub words: Vec<&'static str>,
}

fn of(name: &'static str, words: &[&'static str]) -> Vocabulary {
    Vocabulary {
        name,
        words: words.to_vec(),
    }
}

/// The words of the members of `all` that `keep` keeps: a subset an engine decides.
fn subset<T: Copy>(
    name: &'static str,
    all: &[T],
    keep: impl Fn(T) -> bool,
    word: fn(T) -> &'static str,
) -> Vocabulary {
    Vocabulary {
        name,
        words: all.iter().copied().filter(|&t| keep(t)).map(word).collect(),
    }
}

/// The whole table.
pub fn all() -> Vec<Vocabulary> {
    vec![
        of("node_kind", Kind::TEXTS),
        of("node_status", Status::TEXTS),
        subset(
            "node_status_ended",
            &Status::ALL,
            Status::is_terminal,
            Status::as_str,
        ),
        of("call_status", containment::Status::TEXTS),
        of("stop_reason", &containment::STOP_REASONS),
        of("dag_node_type", NodeType::TEXTS),
        subset(
            "dag_node_type_executable",
            &NodeType::ALL,
            NodeType::is_executable,
            NodeType::as_str,
        ),
        of("dag_state", State::TEXTS),
        subset(
            "dag_outcome",
            &State::ALL,
            State::is_terminal,
            State::as_str,
        ),
        of("dag_edge_type", EdgeType::TEXTS),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn names_and_words_are_unique() {
        let table = all();
        let names: HashSet<_> = table.iter().map(|v| v.name).collect();
        assert_eq!(names.len(), table.len());
        for v in &table {
            let words: HashSet<_> = v.words.iter().collect();
            assert_eq!(words.len(), v.words.len(), "{}", v.name);
            assert!(!v.words.is_empty(), "{}", v.name);
        }
    }

    #[test]
    fn subsets_are_the_engines_rules() {
        let table = all();
        let get = |name: &str| &table.iter().find(|v| v.name == name).unwrap().words;
        assert_eq!(get("node_status_ended"), &["success", "fail", "halt"]);
        assert_eq!(
            get("dag_outcome"),
            &["finished", "errored", "rejected", "skipped", "cancelled"]
        );
        assert_eq!(get("dag_node_type_executable"), &["agent_message", "task"]);
        assert!(get("dag_outcome")
            .iter()
            .all(|w| get("dag_state").contains(w)));
    }
}
