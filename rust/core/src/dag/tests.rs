//! Engine-level tests: each spec section against the pure-Rust API.

use super::*;

fn spec_content(s: &str) -> NodeSpec {
    NodeSpec {
        content: Some(Value::Str(s.into())),
        ..NodeSpec::default()
    }
}

fn with_id(id: &str) -> NodeSpec {
    NodeSpec {
        node_id: Some(id.into()),
        ..NodeSpec::default()
    }
}

fn user(g: &mut Dag, id: &str) -> String {
    let spec = NodeSpec {
        node_id: Some(id.into()),
        ..spec_content("hello")
    };
    g.create_node("user_message", "finished", spec)
        .unwrap()
        .to_string()
}

fn task(g: &mut Dag, id: &str) -> String {
    g.create_node("task", "pending", with_id(id))
        .unwrap()
        .to_string()
}

fn edge(g: &mut Dag, a: &str, b: &str, t: &str) -> String {
    g.create_edge(a, b, t, None, None).unwrap().to_string()
}

fn finish(g: &mut Dag, id: &str) {
    assert!(g.mark_running(id).unwrap());
    assert!(g.mark_finished(id, FinishPayload::default()).unwrap());
}

fn fail(g: &mut Dag, id: &str) {
    assert!(g.mark_running(id).unwrap());
    assert!(g.mark_errored(id, "boom").unwrap());
}

fn state(g: &Dag, id: &str) -> State {
    g.node(id).unwrap().state
}

#[test]
fn claim_respects_gating_and_id_order() {
    let mut g = Dag::new(None);
    for id in ["p", "s", "d", "x"] {
        task(&mut g, id);
    }
    edge(&mut g, "p", "s", "sequence");
    edge(&mut g, "p", "d", "dependency");
    assert_eq!(g.claim(10), vec!["p", "x"]);
    assert!(g.claim(10).is_empty());
    assert!(g.mark_errored("p", "bad").unwrap());
    // errored unblocks sequence but not dependency
    assert_eq!(g.claim(10), vec!["s"]);
    assert_eq!(g.propagate_failures(), vec!["d"]);
    g.check_invariants().unwrap();
}

#[test]
fn claim_limit_zero_and_branch_edges_do_not_gate() {
    let mut g = Dag::new(None);
    task(&mut g, "a");
    task(&mut g, "b");
    edge(&mut g, "a", "b", "branch");
    assert!(g.claim(0).is_empty());
    assert_eq!(g.claim(1), vec!["a"]);
    assert_eq!(g.claim(5), vec!["b"]);
}

#[test]
fn context_orders_by_smallest_available_id() {
    let mut g = Dag::new(None);
    for id in ["r", "c", "a", "b", "z", "t"] {
        g.create_node("agent_message", "finished", with_id(id))
            .unwrap();
    }
    edge(&mut g, "r", "c", "sequence");
    edge(&mut g, "r", "a", "sequence");
    edge(&mut g, "a", "b", "dependency");
    edge(&mut g, "c", "t", "sequence");
    edge(&mut g, "b", "t", "sequence");
    edge(&mut g, "z", "t", "branch");
    assert_eq!(g.context_ids_for("t"), vec!["r", "a", "b", "c", "t"]);
    assert!(g.context_ids_for("nope").is_empty());
    let ctx = g.context_for("b", false);
    assert_eq!(ctx.len(), 3);
    assert!(ctx[0].get("payload").unwrap().get("output").is_none());
    assert!(g.context_for("b", true)[0]
        .get("payload")
        .unwrap()
        .get("output")
        .is_some());
}

#[test]
fn cycles_self_loops_and_duplicates() {
    let mut g = Dag::new(None);
    for id in ["a", "b", "c"] {
        task(&mut g, id);
    }
    let ab = edge(&mut g, "a", "b", "sequence");
    edge(&mut g, "b", "c", "dependency");
    assert_eq!(
        g.create_edge("c", "a", "branch", None, None)
            .unwrap_err()
            .code,
        "dag.edge.cycle"
    );
    assert_eq!(
        g.create_edge("a", "a", "sequence", None, None)
            .unwrap_err()
            .code,
        "dag.edge.self_loop"
    );
    assert_eq!(
        g.create_edge("a", "q", "sequence", None, None)
            .unwrap_err()
            .code,
        "dag.node_not_found"
    );
    assert_eq!(
        g.create_edge("a", "b", "sequence", None, None)
            .unwrap()
            .to_string(),
        ab
    );
    assert_eq!(g.edge_count(), 2);
}

#[test]
fn propagation_runs_in_rounds_to_a_fixpoint() {
    let mut g = Dag::new(None);
    for id in ["a", "b", "c", "d"] {
        task(&mut g, id);
    }
    edge(&mut g, "a", "b", "dependency");
    edge(&mut g, "b", "c", "dependency");
    edge(&mut g, "a", "d", "dependency");
    fail(&mut g, "a");
    assert_eq!(g.propagate_failures(), vec!["b", "d", "c"]);
    let meta = g.node("c").unwrap().metadata();
    assert_eq!(
        meta.get("reason"),
        Some(&Value::Str("blocked_by_failed_dependencies".into()))
    );
    let blocked = meta.get("blocked_by").unwrap();
    assert_eq!(
        blocked,
        &Value::Array(vec![Value::Object(vec![
            ("node_id".into(), Value::Str("b".into())),
            ("state".into(), Value::Str("skipped".into())),
            (
                "edge_id".into(),
                Value::Str(g.events().nth(5).unwrap().subject_id.to_string())
            ),
        ])])
    );
    assert!(g.propagate_failures().is_empty());
}

#[test]
fn leaf_repair_appends_agent_messages() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    assert_eq!(g.leaves(false), vec!["u"]);
    let added = g.repair_leaves();
    assert_eq!(added.len(), 1);
    let a = g.node(&added[0]).unwrap();
    assert_eq!(
        (a.node_type, a.state),
        (NodeType::AgentMessage, State::Pending)
    );
    assert_eq!(g.leaves(false), added);
    assert_eq!(
        g.events().last().unwrap().event_type,
        "leaf_invariant_repaired"
    );
    assert!(g.repair_leaves().is_empty());
}

#[test]
fn rollback_restores_everything() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    g.create_node("agent_message", "pending", with_id("a"))
        .unwrap();
    edge(&mut g, "u", "a", "sequence");
    let before = g.to_json();
    g.begin();
    task(&mut g, "t");
    edge(&mut g, "a", "t", "dependency");
    g.claim(10);
    g.mark_errored("a", "x").unwrap();
    g.begin();
    g.retry("a", Some("a2".into())).unwrap();
    g.rollback();
    assert!(g.node("a2").is_none());
    g.rollback();
    assert_eq!(g.to_json(), before);
    g.check_invariants().unwrap();
    assert_eq!(g.claim(10), vec!["a"]);
}

#[test]
fn retry_takes_over_pending_downstream() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    task(&mut g, "t");
    task(&mut g, "down");
    edge(&mut g, "u", "t", "sequence");
    edge(&mut g, "t", "down", "dependency");
    fail(&mut g, "t");
    let new = g.retry("t", Some("t2".into())).unwrap();
    let n = g.node(&new).unwrap();
    assert_eq!(n.retry_of_id().map(|s| &**s), Some("t"));
    assert_eq!(n.metadata().get("attempt"), Some(&Value::Int(2)));
    assert!(n.metadata().get("error").is_none());
    assert!(!g.node("t").unwrap().is_active());
    assert_eq!(g.context_ids_for("down"), vec!["u", "t2", "down"]);
    assert_eq!(g.claim(10), vec!["t2"]);
    assert_eq!(g.retry("t", None).unwrap_err().code, "dag.node_not_found");
    g.check_invariants().unwrap();
}

#[test]
fn retry_preconditions_in_order() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    task(&mut g, "t");
    task(&mut g, "d");
    edge(&mut g, "t", "d", "sequence");
    assert_eq!(
        g.retry("u", None).unwrap_err().code,
        "dag.retry.not_retriable"
    );
    assert_eq!(g.retry("t", None).unwrap_err().code, "dag.retry.bad_state");
    fail(&mut g, "t");
    g.claim(10);
    assert_eq!(
        g.retry("t", None).unwrap_err().code,
        "dag.retry.downstream_not_pending"
    );
}

#[test]
fn regenerate_and_edit() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    g.create_node("agent_message", "pending", with_id("a"))
        .unwrap();
    edge(&mut g, "u", "a", "sequence");
    assert_eq!(
        g.regenerate("a", None).unwrap_err().code,
        "dag.regenerate.bad_state"
    );
    assert_eq!(
        g.edit("u", Value::empty_object(), None).unwrap_err().code,
        "dag.edit.downstream_active"
    );
    finish(&mut g, "a");
    let a2 = g.regenerate("a", None).unwrap();
    assert_eq!(state(&g, &a2), State::Pending);
    finish(&mut g, &a2);
    let new_input = Value::Object(vec![("content".into(), Value::Str("edited".into()))]);
    let u2 = g.edit("u", new_input, None).unwrap();
    assert!(!g.node(&a2).unwrap().is_active());
    assert_eq!(
        g.node(&u2).unwrap().input().get("content"),
        Some(&Value::Str("edited".into()))
    );
    let replaced = g
        .events()
        .rfind(|e| e.event_type == "node_replaced")
        .unwrap();
    assert_eq!(
        replaced
            .particulars_value()
            .get("archived_node_ids")
            .unwrap(),
        &Value::Array(vec![Value::Str(a2.clone()), Value::Str("u".into()),])
    );
    assert_eq!(g.repair_leaves().len(), 1);
    g.check_invariants().unwrap();
}

#[test]
fn compression_rewires_the_boundary() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    for id in ["a", "b", "c"] {
        g.create_node("agent_message", "finished", with_id(id))
            .unwrap();
    }
    edge(&mut g, "u", "a", "sequence");
    edge(&mut g, "a", "b", "sequence");
    edge(&mut g, "b", "c", "dependency");
    let ids = vec!["a".to_string(), "b".to_string()];
    let s = g.compress(&ids, "summary", None, Some("s".into())).unwrap();
    assert_eq!(g.context_ids_for("c"), vec!["u", "s", "c"]);
    assert_eq!(s, "s");
    let err = g.compress(&ids, "again", None, None).unwrap_err();
    assert_eq!(err.code, "dag.compress.already_compressed");
    let leaf = vec!["c".to_string()];
    assert_eq!(
        g.compress(&leaf, "x", None, None).unwrap_err().code,
        "dag.compress.summary_would_be_leaf"
    );
    g.check_invariants().unwrap();
}

#[test]
fn json_round_trip_is_lossless() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    task(&mut g, "t");
    edge(&mut g, "u", "t", "dependency");
    fail(&mut g, "t");
    g.retry("t", None).unwrap();
    g.repair_leaves();
    let text = g.to_json();
    let mut back = Dag::from_json(&text).unwrap();
    assert_eq!(back.to_json(), text);
    back.check_invariants().unwrap();
    // Record keys are written without the escape scan (`persist.rs`): each must be a plain identifier.
    let mut keys = Vec::new();
    collect_keys(&crate::json::parse(&text).unwrap(), &mut keys);
    assert!(keys.len() > 40, "{keys:?}");
    for key in keys {
        assert!(
            key.bytes().all(|b| b.is_ascii_lowercase() || b == b'_'),
            "{key}"
        );
    }
    assert_eq!(
        Dag::from_json("{}").err().unwrap().code,
        "dag.invalid_argument"
    );
}

#[test]
fn mermaid_lines() {
    let mut g = Dag::new(None);
    let spec = NodeSpec {
        node_id: Some("u-1".into()),
        ..spec_content("say   \"hi\"\nnow")
    };
    g.create_node("user_message", "finished", spec).unwrap();
    g.fork("u-1", "agent_message", Some("pending"), with_id("a-1"))
        .unwrap();
    let m = g.to_mermaid(false, 80);
    let lines: Vec<&str> = m.lines().collect();
    // Ids are arena indexes (u-1 was created first); lines are sorted by the caller's ids.
    assert_eq!(lines[0], "flowchart TD");
    assert_eq!(lines[1], "N1[\"agent_message:pending\"]");
    assert_eq!(
        lines[2],
        "N0[\"user_message:finished say #quot;hi#quot; now\"]"
    );
    assert!(lines.contains(&"N0 -->|branch:fork| N1"));
    assert!(lines.contains(&"N0 -->|sequence| N1"));
}

/// Reference ordering: repeatedly emit the smallest-id closure node whose closure parents are all emitted.
fn naive_context(g: &Dag, target: &str) -> Vec<String> {
    let mut closure = std::collections::BTreeSet::new();
    let mut stack = vec![target.to_string()];
    let parents = |id: &str| -> Vec<String> {
        g.edge_records(false)
            .iter()
            .filter(|e| e.get("to_node_id").and_then(Value::as_str) == Some(id))
            .filter(|e| e.get("edge_type").and_then(Value::as_str) != Some("branch"))
            .map(|e| {
                e.get("from_node_id")
                    .and_then(Value::as_str)
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    while let Some(n) = stack.pop() {
        if closure.insert(n.clone()) {
            stack.extend(parents(&n));
        }
    }
    let mut done: Vec<String> = Vec::new();
    while done.len() < closure.len() {
        let next = closure
            .iter()
            .find(|n| !done.contains(n) && parents(n).iter().all(|p| done.contains(p)))
            .unwrap()
            .clone();
        done.push(next);
    }
    done
}

fn random_dag(ids: &[String]) -> Dag {
    let mut g = Dag::new(None);
    let mut seed: u64 = 0x2545_F491_4F6C_DD1D;
    let mut rand = |m: usize| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % m as u64) as usize
    };
    for (i, id) in ids.iter().enumerate() {
        g.create_node("agent_message", "finished", with_id(id))
            .unwrap();
        for _ in 0..(i.min(3)) {
            let p = rand(i);
            let t = ["sequence", "dependency", "branch"][rand(3)];
            g.create_edge(&ids[p], id, t, None, None).unwrap();
        }
    }
    g
}

#[test]
fn context_order_matches_the_reference_with_and_without_ordered_ids() {
    let ordered: Vec<String> = (0..60).map(|_| uuid7()).collect();
    let mut shuffled: Vec<String> = (0..60).map(|i| format!("n{:02}", (i * 37) % 60)).collect();
    shuffled.dedup();
    for ids in [ordered, shuffled] {
        let mut g = random_dag(&ids);
        assert_eq!(g.ids_in_order, ids.windows(2).all(|w| w[0] < w[1]));
        for target in ids.iter().rev().take(10) {
            assert_eq!(
                g.context_ids_for(target),
                naive_context(&g, target),
                "target {target}"
            );
        }
        g.check_invariants().unwrap();
    }
}

#[test]
fn compression_refuses_a_set_that_is_left_and_reentered() {
    let mut g = Dag::new(None);
    for id in ["a", "m", "b", "z"] {
        g.create_node("agent_message", "finished", with_id(id))
            .unwrap();
    }
    edge(&mut g, "a", "m", "sequence");
    edge(&mut g, "m", "b", "sequence");
    edge(&mut g, "b", "z", "sequence");
    let before = g.to_json();
    let set = vec!["a".to_string(), "b".to_string()];
    assert_eq!(
        g.compress(&set, "s", None, None).unwrap_err().code,
        "dag.edge.cycle"
    );
    assert_eq!(g.to_json(), before);
}

#[test]
fn edit_archives_the_whole_descendant_closure() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    for id in ["a", "t", "b"] {
        g.create_node("agent_message", "finished", with_id(id))
            .unwrap();
    }
    edge(&mut g, "u", "a", "sequence");
    edge(&mut g, "a", "t", "dependency");
    edge(&mut g, "t", "b", "sequence");
    let u2 = g
        .edit("u", Value::empty_object(), Some("u2".into()))
        .unwrap();
    for id in ["u", "a", "t", "b"] {
        assert!(!g.node(id).unwrap().is_active(), "{id}");
        assert_eq!(
            g.node(id).unwrap().compressed_by_id().map(|s| &**s),
            Some("u2")
        );
    }
    assert_eq!(g.leaves(false), vec![u2]);
    assert_eq!(g.leaves(true), vec!["b".to_string(), "u2".to_string()]);
    g.check_invariants().unwrap();
}

#[test]
fn rollback_restores_archived_edges_and_their_duplicate_index() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    g.create_node("agent_message", "finished", with_id("a"))
        .unwrap();
    let ua = edge(&mut g, "u", "a", "sequence");
    g.begin();
    g.regenerate("a", None).unwrap();
    assert!(g.edge(&ua).unwrap().compressed_at.is_some());
    g.rollback();
    assert!(g.edge(&ua).unwrap().compressed_at.is_none());
    // the restored edge is found again as the active duplicate
    assert_eq!(
        g.create_edge("u", "a", "sequence", None, None)
            .unwrap()
            .to_string(),
        ua
    );
    g.check_invariants().unwrap();
}

#[test]
fn from_json_validates_references() {
    let mut g = Dag::new(None);
    task(&mut g, "a");
    task(&mut g, "b");
    edge(&mut g, "a", "b", "sequence");
    let text = g.to_json();
    let dangling = text.replace("\"to_node_id\":\"b\"", "\"to_node_id\":\"ghost\"");
    assert_eq!(
        Dag::from_json(&dangling).err().unwrap().code,
        "dag.invalid_argument"
    );
    let bad_state = text.replacen("\"state\":\"pending\"", "\"state\":\"sleeping\"", 1);
    assert_eq!(
        Dag::from_json(&bad_state).err().unwrap().code,
        "dag.invalid_argument"
    );
    let duplicate = text.replace("\"node_id\":\"b\"", "\"node_id\":\"a\"");
    assert!(Dag::from_json(&duplicate).is_err());
}

/// `from_json` pulls the document record by record (`persist.rs`); any key order a JSON tool may write
/// still loads, with `json.loads`'s rule for a key repeated inside a record.
#[test]
fn from_json_reads_any_key_order_and_refuses_a_repeated_list() {
    let mut g = Dag::new(Some("g".into()));
    user(&mut g, "u");
    task(&mut g, "t");
    edge(&mut g, "u", "t", "dependency");
    let text = g.to_json();
    // Sorted keys, as `json.dumps(sort_keys=True)` writes: edges and events come before nodes.
    let Value::Object(mut entries) = crate::json::parse(&text).unwrap() else {
        panic!("an object")
    };
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(&*entries[0].0, "edges");
    let sorted = crate::json::to_string(&Value::Object(entries), crate::json::Layout::Compact);
    assert_eq!(Dag::from_json(&sorted).unwrap().to_json(), text);
    // Inside a record the last of a repeated key wins and an unknown key is ignored.
    let repeated = text.replacen(
        "\"node_id\":\"u\",",
        "\"node_id\":\"x\",\"extra\":[1,{}],\"node_id\":\"u\",",
        1,
    );
    assert_eq!(Dag::from_json(&repeated).unwrap().to_json(), text);
    // A second node list is refused, named.
    let twice = text.replacen("\"edges\":", "\"nodes\":[],\"edges\":", 1);
    let err = Dag::from_json(&twice).err().unwrap();
    assert!(
        err.message.contains("\"nodes\" appears twice"),
        "{}",
        err.message
    );
    // A list that never comes is named too, and trailing data after the document is refused.
    let no_events = text.replacen(",\"events\":[", ",\"other\":[", 1);
    let err = Dag::from_json(&no_events).err().unwrap();
    assert!(
        err.message.contains("missing \"events\""),
        "{}",
        err.message
    );
    assert!(Dag::from_json(&format!("{text} x")).is_err());
}

fn meta(pairs: &[(&str, i64)]) -> Option<Value> {
    Some(Value::Object(
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), Value::Int(*v)))
            .collect(),
    ))
}

#[test]
fn compression_keeps_agreed_metadata_and_archives_branch_edges() {
    // docs/design.md §24
    let mut g = Dag::new(None);
    user(&mut g, "u");
    let spec = NodeSpec {
        node_id: Some("a".into()),
        ..spec_content("answer")
    };
    g.create_node("agent_message", "finished", spec).unwrap();
    task(&mut g, "next");
    edge(&mut g, "u", "a", "sequence");
    g.create_edge("u", "next", "sequence", meta(&[("k", 1), ("x", 1)]), None)
        .unwrap();
    g.create_edge("a", "next", "sequence", meta(&[("x", 2), ("k", 1)]), None)
        .unwrap();
    let branch = g
        .create_edge("u", "next", "branch", None, Some("lineage".into()))
        .unwrap();
    let s = g
        .compress(&["u".into(), "a".into()], "sum", None, Some("s".into()))
        .unwrap();
    let live: Vec<Value> = g.edge_records(false);
    assert_eq!(live.len(), 1);
    assert_eq!(live[0].get("from_node_id"), Some(&Value::Str(s)));
    assert_eq!(live[0].get("metadata"), meta(&[("k", 1)]).as_ref());
    assert!(g.edge(&branch).unwrap().compressed_at.is_some());
}

#[test]
fn leaf_repair_marks_the_node_and_edge_it_adds() {
    let mut g = Dag::new(None);
    user(&mut g, "u");
    let added = g.repair_leaves();
    assert_eq!(added.len(), 1);
    let marker = Value::Object(vec![(
        "generated_by".into(),
        Value::Str("leaf_invariant".into()),
    )]);
    assert_eq!(g.node(&added[0]).unwrap().metadata(), &marker);
    let edges = g.edge_records(false);
    assert_eq!(edges[0].get("metadata"), Some(&marker));
}

type Rows = Vec<(usize, String)>;

fn view(rows: &[(usize, String)]) -> Vec<(usize, &str)> {
    rows.iter().map(|(s, t)| (*s, t.as_str())).collect()
}

#[test]
fn delta_names_what_a_change_touched_and_catch_up_replays_it() {
    let mut g = Dag::new(Some("g".into()));
    let mut copy = Dag::new(Some("g".into()));
    for id in ["a", "b"] {
        task(&mut g, id);
    }
    edge(&mut g, "a", "b", "dependency");
    let all = g.delta_since(Default::default(), &[]);
    assert_eq!((all.nodes.len(), all.edges.len()), (2, 1));
    let rows = |d: &Delta| -> (Rows, Rows, Rows) {
        (
            d.nodes.iter().map(|(s, _, r)| (*s, r.clone())).collect(),
            d.edges.iter().map(|(s, _, r)| (*s, r.clone())).collect(),
            d.events.clone(),
        )
    };
    let apply = |copy: &mut Dag, d: &Delta| {
        let (n, e, v) = rows(d);
        copy.apply_records(&view(&n), &view(&e), &view(&v)).unwrap();
    };
    apply(&mut copy, &all);
    let mark = g.change_mark();
    assert_eq!(g.claim(5), vec!["a"]);
    let d = g.delta_since(mark, &[]);
    assert_eq!(
        d.nodes.iter().map(|r| r.1.as_str()).collect::<Vec<_>>(),
        vec!["a"]
    );
    assert!(d.edges.is_empty() && d.events.len() == 1);
    apply(&mut copy, &d);
    assert_eq!(copy.claim(5), Vec::<String>::new());
    assert_eq!(copy.to_json(), g.to_json());
    copy.check_invariants().unwrap();
}

#[test]
fn leases_expire_back_to_pending_then_error() {
    let mut g = Dag::new(None);
    task(&mut g, "t");
    assert_eq!(g.claim_leased(1, Some("w1"), Some(10.0)), vec!["t"]);
    assert!(g.heartbeat(&["t".into()], "w2", 50.0).unwrap().is_empty());
    assert_eq!(g.heartbeat(&["t".into()], "w1", 20.0).unwrap(), vec!["t"]);
    assert!(g.reclaim_expired(Some(15.0), 2).is_empty());
    assert_eq!(g.reclaim_expired(Some(25.0), 2), vec!["t"]);
    assert_eq!(g.node("t").unwrap().state, State::Pending);
    assert_eq!(
        g.check_lease("t", "w1").unwrap_err().code,
        "dag.claim.lease_lost"
    );
    g.claim_leased(1, Some("w2"), Some(30.0));
    g.check_lease("t", "w2").unwrap();
    assert_eq!(g.reclaim_expired(Some(31.0), 2), vec!["t"]);
    assert_eq!(g.node("t").unwrap().state, State::Errored);
    g.check_invariants().unwrap();
    let back = Dag::from_records("x", &[], &[], &[]).unwrap();
    assert_eq!(back.node_count(), 0);
}

/// Every object key of a document, except inside payloads (input, output, preview, metadata).
fn collect_keys(v: &Value, keys: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map {
                keys.push(k.to_string());
                if !matches!(
                    k.as_str(),
                    "input" | "output" | "output_preview" | "metadata"
                ) {
                    collect_keys(child, keys);
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_keys(i, keys)),
        _ => {}
    }
}

/// Rows as a store reads them: `(arena position, record)`.
fn as_str(rows: &[String]) -> Vec<(usize, &str)> {
    rows.iter().map(String::as_str).enumerate().collect()
}

/// The record rows of a graph (what a store holds), from its document.
fn record_rows(g: &Dag) -> [Vec<String>; 3] {
    let doc = crate::json::parse(&g.to_json()).unwrap();
    ["nodes", "edges", "events"].map(|key| match doc.get(key) {
        Some(Value::Array(items)) => items
            .iter()
            .map(|v| crate::json::to_string(v, crate::json::Layout::Compact))
            .collect(),
        _ => panic!("{key} missing"),
    })
}

#[test]
fn a_bulk_load_of_many_rows_parses_in_parallel_and_keeps_row_order() {
    let mut g = Dag::new(Some("g".into()));
    let mut previous = user(&mut g, "u0000");
    for i in 1..4_500 {
        let next = if i % 2 == 0 {
            user(&mut g, &format!("u{i:04}"))
        } else {
            task(&mut g, &format!("t{i:04}"))
        };
        edge(&mut g, &previous, &next, "sequence");
        previous = next;
    }
    let [nodes, edges, events] = record_rows(&g);
    assert!(nodes.len().min(edges.len()).min(events.len()) > 4_096); // the two-thread path, each list
    let back = Dag::from_records("g", &as_str(&nodes), &as_str(&edges), &as_str(&events)).unwrap();
    assert_eq!(back.to_json(), g.to_json());
    // A bad row in the second half is found; with bad rows in both halves, the first in row order wins.
    let mut broken = events.clone();
    broken[events.len() - 1] = "{\"event_type\":".into();
    let err = Dag::from_records("g", &as_str(&nodes), &as_str(&edges), &as_str(&broken))
        .err()
        .unwrap();
    assert_eq!(err.code, "dag.invalid_argument");
    let mut first = nodes.clone();
    first[0] = "[]".into();
    let err = Dag::from_records("g", &as_str(&first), &as_str(&edges), &as_str(&broken))
        .err()
        .unwrap();
    assert_eq!(err.code, "dag.invalid_argument");
    assert!(!err.message.contains("event_type"), "{}", err.message);
}

/// A database returns rows in any order: they are put back in arena order, and a missing or repeated
/// position is refused by name rather than loading another graph.
#[test]
fn a_bulk_load_takes_rows_in_any_order_but_refuses_gaps() {
    let mut g = Dag::new(Some("g".into()));
    user(&mut g, "u");
    task(&mut g, "t");
    task(&mut g, "v");
    edge(&mut g, "u", "t", "dependency");
    edge(&mut g, "t", "v", "dependency");
    let [nodes, edges, events] = record_rows(&g);
    let (mut n, e, mut v) = (as_str(&nodes), as_str(&edges), as_str(&events));
    n.reverse();
    v.swap(0, 2);
    assert_eq!(
        Dag::from_records("g", &n, &e, &v).unwrap().to_json(),
        g.to_json()
    );
    let gap = [n[0], n[2]]; // positions 2 and 0: row 1 is missing
    let err = Dag::from_records("g", &gap, &e, &v).err().unwrap();
    assert!(
        err.message.contains("node row 1 is missing"),
        "{}",
        err.message
    );
    let twice = [e[0], e[0], e[1]];
    let err = Dag::from_records("g", &n, &twice, &v).err().unwrap();
    assert!(
        err.message.contains("edge row 0 appears twice"),
        "{}",
        err.message
    );
}
/// A big block's undo log and dirty list are returned when it commits, not kept for the graph's life.
#[test]
fn a_big_block_releases_its_scratch_buffers() {
    let mut g = Dag::new(None);
    for i in 0..5_000 {
        task(&mut g, &format!("t{i}"));
    }
    g.begin();
    // Each claimed task's pre-image is logged, a row each; the chain after them is one run.
    assert_eq!(g.claim(5_000).len(), 5_000);
    let mut previous = user(&mut g, "u0");
    for i in 1..5_000 {
        let next = user(&mut g, &format!("u{i}"));
        edge(&mut g, &previous, &next, "sequence");
        previous = next;
    }
    assert!(g.txn.log_capacity() > super::txn::KEEP);
    g.commit();
    g.flush();
    assert!(g.txn.log_capacity() <= super::txn::KEEP);
    assert!(g.dirty.capacity() <= super::txn::KEEP);
    assert_eq!(g.node_count(), 10_001); // and the agent_message the leaf repair added
}

/// Nodes and edges added one after another are one entry of the undo log, whatever their interleaving; a
/// rollback undoes them together with the pre-images logged between runs, inner savepoints apart.
#[test]
fn runs_of_additions_roll_back_with_the_changes_between_them() {
    let mut g = Dag::new(None);
    task(&mut g, "root");
    task(&mut g, "old");
    let before = g.to_json();
    g.begin();
    for i in 0..100 {
        let child = task(&mut g, &format!("c{i}"));
        edge(&mut g, "root", &child, "dependency");
    }
    assert_eq!(g.txn.log_len(), 1);
    assert_eq!(g.claim(10), vec!["old", "root"]); // two pre-images between two runs
    let after_claim = g.txn.log_len();
    assert_eq!(after_claim, 3);
    task(&mut g, "late");
    edge(&mut g, "old", "late", "dependency");
    assert_eq!(g.txn.log_len(), after_claim + 1);
    let outer = g.to_json();
    g.begin();
    task(&mut g, "inner");
    edge(&mut g, "late", "inner", "dependency");
    // The inner block's run is its own, so rolling it back leaves the outer run whole.
    assert_eq!(g.txn.log_len(), after_claim + 2);
    g.rollback();
    assert_eq!(g.to_json(), outer);
    task(&mut g, "after");
    g.check_invariants().unwrap();
    g.rollback();
    assert_eq!(g.to_json(), before);
    g.check_invariants().unwrap();
    assert_eq!(g.claim(10), vec!["old", "root"]);
}

/// `output_preview` is derived from the output when read (docs/dag.md "Memory"); a file whose preview says
/// something else keeps it, byte for byte, until the output changes.
#[test]
fn a_preview_is_derived_unless_a_file_says_otherwise() {
    let mut g = Dag::new(Some("g".into()));
    task(&mut g, "t");
    g.claim(1);
    let out = FinishPayload {
        output: Some(Value::Object(vec![(
            "content".into(),
            Value::Str("done".into()),
        )])),
        ..FinishPayload::default()
    };
    g.mark_finished("t", out).unwrap();
    assert_eq!(
        g.node("t").unwrap().output_preview().get("content"),
        Some(&Value::Str("done".into()))
    );
    assert!(
        g.node("t").unwrap().rare.is_none(),
        "a derived preview is not stored"
    );
    let text = g.to_json();
    let odd = text.replace(
        "\"output_preview\":{\"content\":\"done\"}",
        "\"output_preview\":{\"note\":\"hand-written\"}",
    );
    assert_ne!(odd, text);
    let back = Dag::from_json(&odd).unwrap();
    assert_eq!(back.to_json(), odd, "a preview the file chose round-trips");
    assert!(back.node("t").unwrap().rare.is_some());
    assert!(Dag::from_json(&text)
        .unwrap()
        .node("t")
        .unwrap()
        .rare
        .is_none());
}

/// Events read back name the arena's own nodes and edges by position (`Event::loaded`): a loaded graph
/// holds no copy of an id in its log, and its events read back as they were written.
#[test]
fn loaded_events_are_stored_as_positions() {
    let mut g = Dag::new(Some("g".into()));
    user(&mut g, "u");
    task(&mut g, "t");
    let e = edge(&mut g, "u", "t", "dependency");
    let [nodes, edges, events] = record_rows(&g);
    let loaded = [
        Dag::from_json(&g.to_json()).unwrap(),
        Dag::from_records("g", &as_str(&nodes), &as_str(&edges), &as_str(&events)).unwrap(),
    ];
    for back in loaded {
        assert_eq!(back.events.len(), 3);
        assert!(back.events.iter().all(|ev| !ev.is_other()));
        assert_eq!(
            back.events().collect::<Vec<_>>(),
            g.events().collect::<Vec<_>>()
        );
        let created = back.events().last().unwrap();
        assert_eq!(
            (created.subject_id, created.particulars),
            (
                &*e,
                Particulars::EdgeCreated {
                    edge_type: EdgeType::Dependency,
                    from: "u",
                    to: "t"
                }
            )
        );
    }
}

/// A preview that shows JSON (not text) costs as much as the output to derive: it is derived once, when the
/// output changes, and kept (docs/dag.md "Memory").
#[test]
fn a_costly_preview_is_kept_not_derived_on_every_read() {
    let mut g = Dag::new(Some("g".into()));
    task(&mut g, "t");
    g.claim(1);
    let many = Value::Object(vec![
        ("a".into(), Value::Int(1)),
        ("b".into(), Value::Array(vec![Value::Bool(true)])),
    ]);
    let out = FinishPayload {
        output: Some(many.clone()),
        ..FinishPayload::default()
    };
    g.mark_finished("t", out).unwrap();
    let node = g.node("t").unwrap();
    assert!(node.rare.as_ref().is_some_and(|r| r.has_preview()));
    assert_eq!(*node.output_preview(), super::preview::derive(&many));
    let back = Dag::from_json(&g.to_json()).unwrap();
    assert!(back
        .node("t")
        .unwrap()
        .rare
        .as_ref()
        .is_some_and(|r| r.has_preview()));
    assert_eq!(back.to_json(), g.to_json());
}

/// A node with no payload and an edge with no metadata hold none (docs/dag.md "Memory"); writing one makes it,
/// and every read sees the same objects either way.
#[test]
fn empty_payloads_are_not_stored() {
    let mut g = Dag::new(None);
    let a = task(&mut g, "a");
    let b = user(&mut g, "b");
    assert_eq!(g.node(&a).unwrap().stored_objects(), 0);
    assert_eq!(g.node(&b).unwrap().stored_objects(), 1);
    let plain = edge(&mut g, "a", "b", "sequence");
    assert!(g.edge(&plain).unwrap().metadata.is_none());
    assert_eq!(g.edge(&plain).unwrap().metadata(), &Value::empty_object());
    let meta = events::obj(vec![("k", Value::Int(1))]);
    let c = task(&mut g, "c");
    let tagged = g
        .create_edge("a", &c, "branch", Some(meta.clone()), None)
        .unwrap();
    assert_eq!(g.edge(&tagged).unwrap().metadata(), &meta);
    let empty = g.node(&a).unwrap();
    assert_eq!(
        (empty.input(), empty.output(), empty.metadata()),
        (
            &Value::empty_object(),
            &Value::empty_object(),
            &Value::empty_object()
        )
    );
    fail(&mut g, "a");
    let done = g.node(&a).unwrap();
    assert_eq!(done.stored_objects(), 1);
    assert!(done.metadata().get("error").is_some());
    let back = Dag::from_json(&g.to_json()).unwrap();
    assert_eq!(back.to_json(), g.to_json());
    assert_eq!(back.node("c").unwrap().stored_objects(), 0);
    assert_eq!(back.node("b").unwrap().stored_objects(), 1);
}
