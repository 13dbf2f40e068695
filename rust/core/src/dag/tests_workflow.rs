//! Task workflows without leaf repair, and the delta bookkeeping of large fan-outs.

use super::*;

fn task(g: &mut Dag, id: &str) -> String {
    let spec = NodeSpec {
        node_id: Some(id.into()),
        ..NodeSpec::default()
    };
    g.create_node("task", "pending", spec).unwrap().to_string()
}

fn agent_messages(g: &Dag) -> usize {
    (0..g.node_count() as u32)
        .filter(|&i| g.node_by_index(i).node_type == NodeType::AgentMessage)
        .count()
}

#[test]
fn without_leaf_repair_finished_tasks_stay_leaves() {
    let mut g = Dag::new(None);
    g.set_leaf_repair(false);
    g.begin();
    task(&mut g, "a");
    task(&mut g, "b");
    g.create_edge("a", "b", "dependency", None, None).unwrap();
    assert!(g.commit().repaired.is_empty());
    assert_eq!(g.claim(10), vec!["a"]);
    let done = g
        .apply_outcome("a", Outcome::Finished(FinishPayload::default()))
        .unwrap();
    assert!(done.repaired.is_empty());
    assert_eq!(g.claim(10), vec!["b"]);
    let done = g
        .apply_outcome("b", Outcome::Finished(FinishPayload::default()))
        .unwrap();
    assert!(done.repaired.is_empty());
    g.begin();
    assert!(g.commit().repaired.is_empty());
    assert_eq!(g.leaves(false), vec!["b"]);
    assert_eq!(agent_messages(&g), 0);
    assert!(!g.leaves_valid());
    g.check_invariants().unwrap();
    // An explicit call still repairs: only the automatic repair is off.
    assert_eq!(g.repair_leaves().len(), 1);
    assert_eq!(agent_messages(&g), 1);
}

#[test]
fn with_leaf_repair_commit_and_outcomes_repair_finished_leaves() {
    // The counterpart of the test above (a cargo-mutants survivor, docs/testing.md): with the repair on,
    // the outermost commit and apply_outcome append the agent_message themselves and report it.
    let mut g = Dag::new(None);
    g.begin();
    task(&mut g, "a");
    task(&mut g, "b");
    g.create_edge("a", "b", "dependency", None, None).unwrap();
    assert!(g.commit().repaired.is_empty());
    assert_eq!(g.claim(10), vec!["a"]);
    let done = g
        .apply_outcome("a", Outcome::Finished(FinishPayload::default()))
        .unwrap();
    assert!(done.repaired.is_empty());
    assert_eq!(g.claim(10), vec!["b"]);
    let done = g
        .apply_outcome("b", Outcome::Finished(FinishPayload::default()))
        .unwrap();
    assert_eq!(done.repaired.len(), 1);
    assert_eq!(g.leaves(false), done.repaired);
    assert_eq!(agent_messages(&g), 1);
    assert!(g.leaves_valid());

    // A finished task created inside a transaction is repaired by its commit.
    let mark = g.change_mark();
    g.begin();
    let spec = NodeSpec {
        node_id: Some("c".into()),
        ..NodeSpec::default()
    };
    g.create_node("task", "finished", spec).unwrap();
    let added = g.commit();
    assert_eq!(added.repaired.len(), 1);
    // The commit starts where the block began, and its delta holds the repair's message too.
    assert_eq!(added.start, mark);
    let delta = g.delta_since(added.start, &[]);
    let ids: Vec<&str> = delta.nodes.iter().map(|(_, id, _)| id.as_str()).collect();
    assert_eq!(ids, ["c", added.repaired[0].as_str()]);
    assert_eq!(agent_messages(&g), 2);
    assert!(g.leaves_valid());
    g.check_invariants().unwrap();
}

#[test]
fn leaf_repair_is_on_by_default_and_survives_json() {
    let mut on = Dag::new(None);
    task(&mut on, "t");
    assert!(on.leaf_repair());
    assert!(!on.to_json().contains("leaf_repair"));
    assert!(Dag::from_json(&on.to_json()).unwrap().leaf_repair());

    let mut off = Dag::new(None);
    off.set_leaf_repair(false);
    task(&mut off, "t");
    let text = off.to_json();
    let back = Dag::from_json(&text).unwrap();
    assert!(!back.leaf_repair());
    assert_eq!(back.to_json(), text);

    let wrong = text.replace("\"leaf_repair\":false", "\"leaf_repair\":0");
    assert_ne!(wrong, text);
    let err = Dag::from_json(&wrong).err().unwrap();
    assert!(err.message.contains("leaf_repair"), "{}", err.message);
}

#[test]
fn fan_out_counts_by_delta_and_rolls_back() {
    let mut g = Dag::new(None);
    task(&mut g, "root");
    for i in 0..300 {
        let child = task(&mut g, &format!("c{i:03}"));
        g.create_edge("root", &child, "dependency", None, None)
            .unwrap();
    }
    g.check_invariants().unwrap();
    assert_eq!(g.leaves(false).len(), 300);
    g.begin();
    for i in 300..310 {
        let child = task(&mut g, &format!("c{i:03}"));
        g.create_edge("root", &child, "sequence", None, None)
            .unwrap();
        g.create_edge(&format!("c{:03}", i - 300), &child, "branch", None, None)
            .unwrap();
    }
    g.check_invariants().unwrap();
    g.rollback();
    g.check_invariants().unwrap();
    assert_eq!(g.leaves(false).len(), 300);
    assert_eq!(g.claim(1), vec!["root"]);
    g.mark_errored("root", "boom").unwrap();
    g.check_invariants().unwrap();
    assert_eq!(g.propagate_failures().len(), 300);
    g.check_invariants().unwrap();
}

#[test]
fn work_counts_claimable_nodes_and_the_earliest_lease() {
    let mut g = Dag::new(None);
    g.set_leaf_repair(false);
    for id in ["a", "b", "c"] {
        task(&mut g, id);
    }
    g.create_edge("a", "c", "dependency", None, None).unwrap();
    let idle = g.work();
    assert_eq!((idle.claimable, idle.running, idle.lease_due), (2, 0, None));
    g.claim_leased(1, Some("w1"), Some(40.0));
    g.claim_leased(1, Some("w2"), Some(30.0));
    let busy = g.work();
    assert_eq!(
        (busy.claimable, busy.running, busy.lease_due),
        (0, 2, Some(30.0))
    );
    g.heartbeat(&["b".into()], "w2", 50.0).unwrap();
    assert_eq!(g.work().lease_due, Some(40.0));
    g.check_invariants().unwrap();
}

#[test]
fn release_gives_back_only_what_the_worker_holds_without_counting_an_attempt() {
    let mut g = Dag::new(None);
    g.set_leaf_repair(false);
    for id in ["a", "b", "c"] {
        task(&mut g, id);
    }
    g.claim_leased(2, Some("w1"), Some(10.0));
    g.claim_leased(1, Some("w2"), Some(10.0));
    assert!(g.release(&["zz".into()], "w1").is_err());
    let ids = vec![
        "c".to_string(),
        "a".to_string(),
        "b".to_string(),
        "a".to_string(),
    ];
    assert_eq!(g.release(&ids, "w1").unwrap(), vec!["a", "b"]);
    for id in ["a", "b"] {
        let node = g.node(id).unwrap();
        assert_eq!(node.state, State::Pending);
        assert!(node.metadata().get(lease::ATTEMPT).is_none());
        assert!(node.metadata().get(lease::CLAIMED_BY).is_none());
        assert!(node.started_at.is_none());
    }
    assert_eq!(g.node("c").unwrap().state, State::Running);
    let last = g.events.len() - 1;
    assert_eq!(
        g.events().nth(last - 1).unwrap().event_type,
        "node_lease_released"
    );
    assert_eq!(g.work().claimable, 2);
    // Released inside a block that is rolled back: nothing of it stays, sets included.
    g.begin();
    g.release(&["c".into()], "w2").unwrap();
    g.rollback();
    assert_eq!(g.node("c").unwrap().state, State::Running);
    assert_eq!(g.work().running, 1);
    g.check_invariants().unwrap();
}
