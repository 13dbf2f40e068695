//! Ids and their index at the graph's level (docs/dag.md "Ids and indexes"): generated ids served from the
//! creation-ordered vector, caller-given ids from the side map, both after a rollback and a JSON round trip.

use super::*;

fn node(g: &mut Dag, id: Option<&str>) -> String {
    let spec = NodeSpec {
        node_id: id.map(str::to_owned),
        ..NodeSpec::default()
    };
    g.create_node("task", "pending", spec).unwrap().to_string()
}

fn edge(g: &mut Dag, a: &str, b: &str, id: Option<&str>) -> String {
    g.create_edge(a, b, "dependency", None, id.map(str::to_owned))
        .unwrap()
        .to_string()
}

/// Every node and edge of `g` is found by its id, at its own position.
fn all_found(g: &Dag, nodes: &[String], edges: &[String]) {
    for id in nodes {
        assert_eq!(g.node(id).map(|n| &*n.id), Some(id.as_str()), "{id}");
    }
    for id in edges {
        assert_eq!(g.edge(id).map(|e| &*e.id), Some(id.as_str()), "{id}");
    }
    assert_eq!((g.node_count(), g.edge_count()), (nodes.len(), edges.len()));
}

/// The UUID one above `id`'s value (the last hex digit bumped, carrying): it sorts between `id` and the next.
fn next_uuid(id: &str) -> String {
    let mut digits: Vec<u8> = id.bytes().collect();
    for at in (0..digits.len()).rev() {
        match digits[at] {
            b'-' => continue,
            b'f' => digits[at] = b'0',
            b'9' => {
                digits[at] = b'a';
                break;
            }
            d => {
                digits[at] = d + 1;
                break;
            }
        }
    }
    String::from_utf8(digits).unwrap()
}

/// A fan-out of generated ids: all on the ordered vector (the side maps stay empty), each found; ids that
/// were never made — newer, in between, another spelling — are not.
#[test]
fn generated_ids_are_found_without_the_side_map() {
    let mut g = Dag::new(None);
    let root = node(&mut g, None);
    let mut nodes = vec![root.clone()];
    let mut edges = Vec::new();
    for _ in 0..300 {
        let child = node(&mut g, None);
        edges.push(edge(&mut g, &root, &child, None));
        nodes.push(child);
    }
    assert!(nodes.windows(2).all(|w| w[0] < w[1]), "minted in order");
    assert_eq!((g.node_index.side_len(), g.edge_index.side_len()), (0, 0));
    all_found(&g, &nodes, &edges);
    let between = next_uuid(&nodes[10]);
    assert!(nodes[10] < between && between < nodes[11]);
    for unknown in [
        uuid7(),
        between,
        nodes[5].to_uppercase(),
        nodes[5].replace('-', ""),
        "t1".to_owned(),
        String::new(),
    ] {
        assert!(g.node(&unknown).is_none(), "{unknown}");
        assert!(g.edge(&unknown).is_none(), "{unknown}");
        let err = g
            .create_edge(&root, &unknown, "sequence", None, None)
            .unwrap_err();
        assert_eq!(err.code, DagCode::NodeNotFound, "{unknown}");
    }
    // A node id is not an edge id, nor the other way round.
    assert!(g.edge(&nodes[1]).is_none() && g.node(&edges[0]).is_none());
    g.check_invariants().unwrap();
}

/// Caller-given ids (any text, a UUID that sorts after every generated one, another spelling) beside
/// generated ones: each is found, the ids made after a UUID from the future go to the side map, and claims
/// still come out in id order.
#[test]
fn caller_given_and_generated_ids_mix() {
    let mut g = Dag::new(None);
    let future = "ffffffff-ffff-7fff-bfff-ffffffffffff";
    let mut nodes = vec![node(&mut g, None), node(&mut g, Some("t1"))];
    nodes.push(node(&mut g, None));
    nodes.push(node(&mut g, Some(future)));
    // Minted now, these sort before `future`: served by the side map.
    nodes.push(node(&mut g, None));
    nodes.push(node(&mut g, None));
    let upper = uuid7().to_uppercase();
    nodes.push(node(&mut g, Some(&upper)));
    let edges = vec![
        edge(&mut g, &nodes[0], &nodes[1], None),
        edge(&mut g, &nodes[1], &nodes[3], Some("e-given")),
        edge(&mut g, &nodes[2], &nodes[4], None),
    ];
    assert!(
        g.node_index.side_len() == 4,
        "t1, the two after the future id, the capitals"
    );
    all_found(&g, &nodes, &edges);
    // Roots in id order, whatever order they were made in.
    let mut want: Vec<String> = [0, 2, 5, 6].iter().map(|&i| nodes[i].clone()).collect();
    want.sort();
    assert_eq!(g.claim(10), want);
    g.check_invariants().unwrap();
}

/// A used id is refused whichever index holds it, and the refusal changes nothing.
#[test]
fn duplicate_ids_are_refused() {
    let mut g = Dag::new(None);
    let a = node(&mut g, None);
    let b = node(&mut g, Some("b"));
    let e = edge(&mut g, &a, &b, None);
    let c = node(&mut g, None);
    let given = edge(&mut g, &b, &c, Some("e1"));
    let before = g.to_json();
    for used in [a.as_str(), "b"] {
        let spec = NodeSpec {
            node_id: Some(used.to_owned()),
            ..NodeSpec::default()
        };
        let err = g.create_node("task", "pending", spec).unwrap_err();
        assert_eq!(err.code, DagCode::InvalidArgument);
        assert!(err.message.contains("already used"), "{}", err.message);
    }
    for used in [e.as_str(), given.as_str()] {
        let err = g
            .create_edge(&a, &c, "sequence", None, Some(used.to_owned()))
            .unwrap_err();
        assert!(err.message.contains("already used"), "{}", err.message);
    }
    assert_eq!(g.to_json(), before);
    g.check_invariants().unwrap();
}

/// A rolled-back block forgets the ids it made, from both indexes; ids made afterwards are served from the
/// ordered vector again.
#[test]
fn rollback_forgets_ids_of_both_kinds() {
    let mut g = Dag::new(None);
    let kept = node(&mut g, None);
    g.begin();
    let made = [
        node(&mut g, None),
        node(&mut g, Some("x")),
        node(&mut g, Some("ffffffff-ffff-7fff-bfff-ffffffffffff")),
        node(&mut g, None),
    ];
    let e = edge(&mut g, &kept, &made[0], None);
    g.rollback();
    for id in made.iter().chain([&e]) {
        assert!(g.node(id).is_none() && g.edge(id).is_none(), "{id}");
    }
    assert_eq!((g.node_index.side_len(), g.node_count()), (0, 1));
    let next = node(&mut g, None);
    all_found(&g, &[kept, next], &[]);
    assert_eq!(g.node_index.side_len(), 0);
    g.check_invariants().unwrap();
}

/// A graph loaded from JSON finds every id it was saved with, extends with generated ids that are found
/// too, and refuses the loaded ids as new ones.
#[test]
fn ids_survive_a_json_round_trip() {
    let mut g = Dag::new(None);
    let root = node(&mut g, None);
    let mut nodes = vec![root.clone(), node(&mut g, Some("given"))];
    let mut edges = vec![edge(&mut g, &root, &nodes[1], Some("e-given"))];
    for _ in 0..50 {
        let child = node(&mut g, None);
        edges.push(edge(&mut g, &root, &child, None));
        nodes.push(child);
    }
    let text = g.to_json();
    let mut back = Dag::from_json(&text).unwrap();
    assert_eq!(back.to_json(), text);
    all_found(&back, &nodes, &edges);
    assert_eq!(
        back.node_index.side_len(),
        1,
        "only the caller-given node id"
    );
    back.check_invariants().unwrap();
    let more = node(&mut back, None);
    edges.push(edge(&mut back, &nodes[1], &more, None));
    nodes.push(more);
    all_found(&back, &nodes, &edges);
    for used in [&nodes[0], &nodes[1]] {
        let spec = NodeSpec {
            node_id: Some(used.clone()),
            ..NodeSpec::default()
        };
        assert!(back.create_node("task", "pending", spec).is_err(), "{used}");
    }
    back.check_invariants().unwrap();
}

/// The lookup of the newest, the previous and the first node (compared by text before the index is read)
/// finds exactly those nodes: not an id of the same length that differs in one digit, not a node a rollback
/// took back, and every other node through the index as before.
#[test]
fn recent_nodes_are_found_by_their_text_only() {
    let mut g = Dag::new(None);
    let first = node(&mut g, None);
    let middle = node(&mut g, Some("given"));
    let previous = node(&mut g, None);
    let newest = node(&mut g, None);
    for (id, at) in [(&first, 0), (&middle, 1), (&previous, 2), (&newest, 3)] {
        assert_eq!(g.idx(id).ok(), Some(at), "{id}");
    }
    for near in [next_uuid(&newest), next_uuid(&first), newest.to_uppercase()] {
        assert_eq!(g.idx(&near).ok(), None, "{near}");
    }
    g.begin();
    let gone = node(&mut g, None);
    assert_eq!(g.idx(&gone).ok(), Some(4));
    g.rollback();
    assert_eq!(g.idx(&gone).ok(), None);
    assert_eq!(g.idx(&newest).ok(), Some(3));
    // A graph of one node: the newest is also the first.
    let mut one = Dag::new(None);
    let only = node(&mut one, None);
    assert_eq!(one.idx(&only).ok(), Some(0));
    assert_eq!(one.idx(&next_uuid(&only)).ok(), None);
}

/// The recent-node check compares an id's last word before its whole text: ids that share that word (or
/// are shorter than a word) are still told apart by the rest.
#[test]
fn recent_nodes_sharing_a_tail_are_told_apart() {
    let mut g = Dag::new(None);
    let first = node(&mut g, Some("a-0123456789"));
    let previous = node(&mut g, Some("b-0123456789"));
    let newest = node(&mut g, Some("x"));
    for (id, at) in [(&first, 0), (&previous, 1), (&newest, 2)] {
        assert_eq!(g.idx(id).ok(), Some(at), "{id}");
    }
    for other in ["c-0123456789", "0123456789", "y", "", "xx"] {
        assert_eq!(g.idx(other).ok(), None, "{other}");
    }
}

/// The value the graph indexes a minted id by is the value its text reads as.
#[test]
fn minted_ids_carry_the_value_of_their_text() {
    for at in [crate::clock::now(), 0.0, f64::NAN] {
        let (text, key) = crate::ids::uuid7_keyed_at(at);
        assert_eq!(crate::ids::parse_uuid(&text), Some(key), "{text}");
    }
    let empty = || [None, None, None];
    let node = Dag::new_node_minted(None, NodeType::Task, State::Pending, empty(), 1.0);
    assert_eq!(node.key, crate::ids::parse_uuid(&node.item.id));
    let given = Dag::new_node_minted(
        Some("t1".to_owned()),
        NodeType::Task,
        State::Pending,
        empty(),
        1.0,
    );
    assert_eq!((given.key, &*given.item.id), (None, "t1"));
}
