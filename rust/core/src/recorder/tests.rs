//! Graph-level behaviour: lifecycle, aggregates, pruning and the JSON encoding.

use super::graph::{Config, Graph};
use super::kind::{Kind, Status};
use super::RecorderError;
use crate::ids::{id_string, parse_id};
use crate::value::Value;

fn graph() -> Graph {
    Graph::new("chain-1", Config::default()).unwrap()
}

fn child(g: &Graph, parent: u64, kind: Kind, name: &str) -> String {
    id_string(
        g.begin_node(&id_string(parent), kind, name, None, None, false, false)
            .unwrap()
            .0,
    )
}

#[test]
fn lifecycle_and_aggregates_follow_decisions_1_and_2() {
    let g = graph();
    let root = g.create_root("run", None).unwrap();
    let llm = child(&g, root, Kind::Llm, "plan");
    g.mark_running(&llm, false).unwrap();
    g.increment_retries(&llm).unwrap();
    g.mark_success(&llm, 0.25, Some(10), Some(7), false)
        .unwrap();
    let tool = child(&g, 2, Kind::Tool, "search");
    g.mark_halt(&tool, None, false).unwrap(); // created -> halt counts too
    let never = child(&g, root, Kind::Llm, "pending");
    let _ = never;
    let failed = child(&g, root, Kind::Llm, "boom");
    g.mark_failure(&failed, "RateLimitError", Some("429"), false)
        .unwrap();

    let a = g.aggregates();
    assert_eq!(
        a.total_llm_calls, 2,
        "success + fail; the created node does not count"
    );
    assert_eq!(a.total_tool_calls, 1);
    assert_eq!(a.total_retries, 1);
    assert_eq!(a.total_cost_usd, 0.25);
    assert_eq!(a.total_tokens_out, 7);
    assert_eq!(a.max_depth, 2);
    assert_eq!(g.len(), 5);

    // Terminal nodes ignore further transitions and never double count.
    let again = g.mark_success(&llm, 9.0, None, Some(100), false).unwrap();
    assert!(!again.applied);
    g.mark_halt(&failed, Some("late"), false).unwrap();
    assert_eq!(g.aggregates(), a);
    let st = g.lock();
    assert_eq!(st.arena.get(3).unwrap().status, Status::Halt);
    let halted = st.arena.get(3).unwrap();
    assert_eq!(st.arena.stop_reason(halted), Some("halt"));
}

#[test]
fn errors_leave_the_graph_unchanged() {
    let g = graph();
    assert_eq!(
        g.begin_node("n000001", Kind::Llm, "x", None, None, false, false)
            .unwrap_err(),
        RecorderError::ParentNotFound("n000001".into())
    );
    let root = g.create_root("run", None).unwrap();
    assert!(matches!(
        g.create_root("again", None),
        Err(RecorderError::RootExists(_))
    ));
    let n = child(&g, root, Kind::Llm, "x");
    for bad in [f64::NAN, f64::INFINITY, -0.5] {
        assert!(matches!(
            g.mark_success(&n, bad, None, None, false),
            Err(RecorderError::InvalidNumber { .. })
        ));
    }
    assert!(matches!(
        g.mark_success(&n, 0.1, Some(-1), None, false),
        Err(RecorderError::InvalidNumber { .. })
    ));
    assert_eq!(
        g.mark_running("n000099", false).unwrap_err(),
        RecorderError::NodeNotFound("n000099".into())
    );
    assert_eq!(
        g.mark_running("n2", false).unwrap_err(),
        RecorderError::NodeNotFound("n2".into())
    );
    let st = g.lock();
    assert_eq!(st.arena.get(2).unwrap().status, Status::Created);
    assert_eq!(st.arena.len(), 2);
}

#[test]
fn pruning_evicts_oldest_terminal_node_but_never_root_or_parent() {
    let g = Graph::new(
        "c",
        Config {
            max_nodes: 3,
            ..Config::default()
        },
    )
    .unwrap();
    let root = g.create_root("run", None).unwrap();
    g.mark_success(&id_string(root), 0.0, None, None, false)
        .unwrap();
    let a = child(&g, root, Kind::Tool, "a");
    let b = child(&g, root, Kind::Tool, "b");
    g.mark_success(&a, 0.0, None, None, false).unwrap();
    g.mark_success(&b, 0.0, None, None, false).unwrap();
    // Full (3 nodes): the next insert evicts `a` (oldest terminal, root excluded).
    let c = child(&g, root, Kind::Tool, "c");
    assert_eq!(g.pruned_count(), 1);
    assert!(g.mark_running(&a, false).is_err());
    // Attaching under `b` (now the oldest terminal) must not evict `b` itself.
    let d = g.begin_node(&b, Kind::Tool, "d", None, None, false, false);
    assert!(d.is_ok());
    assert_eq!(
        g.pruned_count(),
        1,
        "nothing else was evictable: c and d are in flight"
    );
    assert_eq!(g.len(), 4);
    let _ = c;
    let a = g.aggregates();
    assert_eq!(a.total_tool_calls, 2, "pruning never decreases aggregates");
}

#[test]
fn pruning_takes_the_oldest_node_even_when_it_ended_last() {
    let g = Graph::new(
        "c",
        Config {
            max_nodes: 4,
            ..Config::default()
        },
    )
    .unwrap();
    let root = g.create_root("run", None).unwrap();
    let parent = child(&g, root, Kind::Llm, "parent");
    let kid = id_string(
        g.begin_node(&parent, Kind::Tool, "kid", None, None, false, false)
            .unwrap()
            .0,
    );
    g.mark_success(&kid, 0.0, None, None, false).unwrap();
    // The parent ends after its younger child: it is still the oldest terminal node.
    g.mark_success(&parent, 0.0, None, None, false).unwrap();
    let late = child(&g, root, Kind::Tool, "late");
    g.mark_success(&late, 0.0, None, None, false).unwrap();
    let _next = child(&g, root, Kind::Tool, "next");
    assert_eq!(g.pruned_count(), 1);
    let kept = |id: &str| g.lock().arena.get(parse_id(id).unwrap()).is_some();
    assert!(!kept(&parent), "the parent, the oldest, went first");
    assert!(kept(&kid) && kept(&late));
    // And then its child, the oldest left.
    let _ = child(&g, root, Kind::Tool, "after");
    assert_eq!(g.pruned_count(), 2);
    assert!(!kept(&kid) && kept(&late));
}

#[test]
fn divergence_count_is_mirrored_in_aggregates() {
    let g = graph();
    let root = g.create_root("run", None).unwrap();
    for _ in 0..3 {
        let (id, _) = g
            .begin_node(
                &id_string(root),
                Kind::Tool,
                "search",
                None,
                None,
                true,
                false,
            )
            .unwrap();
        let _ = id;
    }
    assert_eq!(g.aggregates().divergence_emitted_count, 1);
    let events = g.drain_divergence_events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1.as_deref(), Some("search"));
    assert!(g.drain_divergence_events().is_empty());
}

#[test]
fn snapshot_json_has_the_documented_shape() {
    let g = graph();
    let meta = Value::Object(vec![("q".into(), Value::Str("ünï".into()))]);
    let root = g.create_root("run", Some(meta)).unwrap();
    let n = child(&g, root, Kind::Llm, "plan");
    g.mark_success(&n, 0.0042, Some(120), Some(80), false)
        .unwrap();
    let json = String::from_utf8(g.snapshot_json()).unwrap();
    assert!(json.starts_with(r#"{"chain_id": "chain-1", "root_id": "n000001", "nodes": {"n000001": {"node_id": "n000001", "parent_id": null, "kind": "system", "name": "run", "start_ts_ms": "#));
    assert!(json.contains(r#""metadata": {"q": "\u00fcn\u00ef"}}"#));
    assert!(json.contains(r#""status": "success", "model": null, "retries_used": 0, "cost_usd": 0.0042, "tokens_in": 120, "tokens_out": 80, "stop_reason": null, "error_class": null, "metadata": {}}"#));
    assert!(json.contains(r#""aggregates": {"total_cost_usd": 0.0042, "total_llm_calls": 1, "total_tool_calls": 0, "total_retries": 0, "max_depth": 1, "llm_calls_per_root": 1.0, "tool_calls_per_root": 0.0, "retries_per_root": 0.0, "divergence_emitted_count": 2, "total_tokens_out": 80}, "snapshot_ts_ms": "#));
}

#[test]
fn concurrent_writers_keep_exact_aggregates() {
    let g = std::sync::Arc::new(graph());
    let root = id_string(g.create_root("run", None).unwrap());
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let g = g.clone();
            let root = root.clone();
            std::thread::spawn(move || {
                for i in 0..5_000 {
                    let (id, _) = g
                        .begin_node(&root, Kind::Llm, "step", None, None, true, false)
                        .unwrap();
                    let id = id_string(id);
                    if i % 2 == 0 {
                        g.mark_success(&id, 0.5, None, Some(2), false).unwrap();
                    } else {
                        g.mark_failure(&id, "E", None, false).unwrap();
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let a = g.aggregates();
    assert_eq!(a.total_llm_calls, 20_000);
    assert_eq!(a.total_cost_usd, 0.5 * 10_000.0);
    assert_eq!(a.total_tokens_out, 20_000);
    assert_eq!(g.len(), 20_001);
}

fn capped(max_nodes: usize) -> Graph {
    Graph::with_max_nodes("c", max_nodes).unwrap()
}

#[test]
fn pruning_frees_slots_names_and_side_tables() {
    // docs/design.md §27: unique names, models, error classes, reasons and metadata per
    // node must not accumulate once max_nodes is reached.
    let g = capped(100);
    let root = id_string(g.create_root("run", None).unwrap());
    for i in 0..50_000 {
        let meta = Value::Object(vec![("i".into(), Value::Int(i))]);
        let model = format!("model-{i}");
        let (id, _) = g
            .begin_node(
                &root,
                Kind::Tool,
                &format!("name-{i}"),
                Some(&model),
                Some(meta),
                true,
                false,
            )
            .unwrap();
        let id = id_string(id);
        if i % 2 == 0 {
            g.mark_failure(&id, &format!("Error{i}"), Some("boom"), false)
                .unwrap();
        } else {
            g.mark_halt(&id, Some(&format!("reason {i}")), false)
                .unwrap();
        }
    }
    assert_eq!(g.len(), 100);
    let st = g.lock();
    assert!(
        st.arena.chunk_count() <= 2,
        "chunks {}",
        st.arena.chunk_count()
    );
    assert!(
        st.arena.extras_len() <= 100,
        "extras {}",
        st.arena.extras_len()
    );
    // Three texts per live node at most, plus the root and the divergence window.
    assert!(
        st.names.len() <= 3 * 100 + 16,
        "symbol slots {}",
        st.names.len()
    );
    assert!(st.names.live() <= 3 * 100 + 16);
    let last = st.arena.iter().last().unwrap();
    assert_eq!(st.names.resolve(last.name), "name-49999");
    assert_eq!(st.names.resolve(last.model().unwrap()), "model-49999");
    assert_eq!(st.arena.stop_reason(last), Some("reason 49999"));
    drop(st);
    assert_eq!(g.aggregates().total_tool_calls, 50_000);
}

#[test]
fn reused_symbols_never_confuse_divergence_detection() {
    // Names freed by pruning get new texts; the window must not match the old signature.
    let g = capped(4);
    let root = id_string(g.create_root("run", None).unwrap());
    for i in 0..200 {
        let (id, _) = g
            .begin_node(&root, Kind::Tool, &format!("t{i}"), None, None, true, false)
            .unwrap();
        g.mark_success(&id_string(id), 0.0, None, None, false)
            .unwrap();
    }
    assert!(
        g.drain_divergence_events().is_empty(),
        "every name was distinct"
    );
    for _ in 0..3 {
        let (id, _) = g
            .begin_node(&root, Kind::Tool, "loop", None, None, true, false)
            .unwrap();
        g.mark_success(&id_string(id), 0.0, None, None, false)
            .unwrap();
    }
    let events = g.drain_divergence_events();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].1.as_deref(), Some("loop"));
}

#[test]
fn overflowing_totals_reject_the_call_and_change_nothing() {
    let g = graph();
    let root = g.create_root("run", None).unwrap();
    let a = child(&g, root, Kind::Llm, "a");
    let b = child(&g, root, Kind::Llm, "b");
    g.mark_success(&a, 1e308, None, Some(i64::MAX), false)
        .unwrap();
    let before = (g.aggregates(), g.snapshot_json());
    let strip = |j: &[u8]| {
        let s = String::from_utf8(j.to_vec()).unwrap();
        s[..s.rfind("\"snapshot_ts_ms\"").unwrap()].to_owned()
    };
    for (cost, tokens) in [(1e308, None), (0.0, Some(1)), (f64::MAX, Some(0))] {
        let err = g.mark_success(&b, cost, None, tokens, false).unwrap_err();
        assert!(matches!(err, RecorderError::InvalidNumber { .. }), "{err}");
        assert_eq!(g.aggregates(), before.0);
        assert_eq!(strip(&g.snapshot_json()), strip(&before.1));
    }
    // The node is still open: a valid call finishes it.
    g.mark_success(&b, 1.0, None, Some(0), false).unwrap();
    assert_eq!(g.aggregates().total_llm_calls, 2);
    assert!(!String::from_utf8(g.snapshot_json())
        .unwrap()
        .contains("Infinity"));
}

#[test]
fn non_finite_metadata_is_rejected_before_anything_changes() {
    let g = graph();
    let bad = Value::Object(vec![(
        "a".into(),
        Value::Array(vec![Value::Float(f64::NAN)]),
    )]);
    let err = g.create_root("run", Some(bad.clone())).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"metadata must be strict JSON: NaN and infinite floats are not allowed (at metadata["a"][0])"#
    );
    let root = g.create_root("run", None).unwrap();
    assert!(matches!(
        g.begin_node(
            &id_string(root),
            Kind::Llm,
            "x",
            None,
            Some(bad),
            false,
            false
        ),
        Err(RecorderError::InvalidMetadata(_))
    ));
    assert_eq!(g.len(), 1);
    assert_eq!(
        child(&g, root, Kind::Llm, "x"),
        "n000002",
        "no id was consumed"
    );
}

fn without_ts(j: &[u8]) -> String {
    let s = String::from_utf8(j.to_vec()).unwrap();
    s[..s.rfind("\"snapshot_ts_ms\"").unwrap()].to_owned()
}

#[test]
fn from_snapshot_round_trips_and_continues_the_counter() {
    let g = capped(5);
    let meta = Value::Object(vec![
        (
            "t".into(),
            Value::Tuple(vec![Value::Float(0.1), Value::Int(-3)]),
        ),
        ("s".into(), Value::Str("é\"\n".into())),
    ]);
    let root = g.create_root("run", Some(meta)).unwrap();
    let long = child(&g, root, Kind::Llm, "long");
    g.mark_running(&long, false).unwrap();
    for i in 0..8 {
        let (id, _) = g
            .begin_node(
                &id_string(root),
                Kind::Tool,
                "t",
                Some("m"),
                None,
                true,
                false,
            )
            .unwrap();
        let id = id_string(id);
        g.increment_retries(&id).unwrap();
        match i % 3 {
            0 => g
                .mark_success(&id, 0.25, Some(3), Some(4), false)
                .map(|_| ()),
            1 => g.mark_failure(&id, "E", Some("why"), false).map(|_| ()),
            _ => g.mark_halt(&id, None, false).map(|_| ()),
        }
        .unwrap();
    }
    let first = g.snapshot_json();
    let loaded = Graph::from_snapshot_json(
        &first,
        Config {
            max_nodes: 5,
            ..Config::default()
        },
    )
    .unwrap();
    assert_eq!(without_ts(&loaded.snapshot_json()), without_ts(&first));
    assert_eq!(loaded.aggregates(), g.aggregates());
    assert_eq!(loaded.len(), g.len());
    assert_eq!(loaded.root_id(), Some(root));
    // New ids continue after the highest one; pruning carries on over loaded nodes.
    let next = loaded
        .begin_node(&id_string(root), Kind::Tool, "t", None, None, false, false)
        .unwrap()
        .0;
    assert_eq!(next, 11);
    assert_eq!(
        loaded.len(),
        5,
        "one loaded terminal node evicted, one added"
    );
    assert_eq!(loaded.pruned_count(), 1);
    loaded.mark_success(&long, 1.0, None, None, false).unwrap();
    assert_eq!(loaded.aggregates().total_llm_calls, 1);
    // An empty graph round-trips too.
    let empty = graph();
    let again = Graph::from_snapshot_json(&empty.snapshot_json(), Config::default()).unwrap();
    assert_eq!(
        without_ts(&again.snapshot_json()),
        without_ts(&empty.snapshot_json())
    );
}

#[test]
fn from_snapshot_names_what_is_wrong() {
    let g = graph();
    let root = g.create_root("run", None).unwrap();
    child(&g, root, Kind::Llm, "x");
    let good = String::from_utf8(g.snapshot_json()).unwrap();
    let cases = [
        ("{", "not strict JSON"),
        ("[]", "the snapshot must be an object"),
        (&good.replace("\"chain_id\": \"chain-1\"", "\"chain_id\": 5"), "snapshot[\"chain_id\"] must be a string"),
        (&good.replace("\"kind\": \"llm\"", "\"kind\": \"robot\""), "nodes[\"n000002\"][\"kind\"]"),
        (&good.replace("\"cost_usd\": 0.0,", "\"cost_usd\": -1,"), "[\"cost_usd\"] must be a finite number >= 0"),
        (&good.replace("\"total_llm_calls\": 0", "\"total_llm_calls\": 1e999"), "number out of range"),
        (&good.replace("\"root_id\": \"n000001\"", "\"root_id\": \"n000009\""), "snapshot[\"root_id\"]"),
        (&good.replace("\"status\": \"created\"", "\"status\": \"success\""), "end_ts_ms"),
        (&good.replace("\"parent_id\": \"n000001\"", "\"parent_id\": \"n000002\""), "parent_id"),
        (&good.replace("\"tokens_in\": null, \"tokens_out\": null, \"stop_reason\": null, \"error_class\": null, \"metadata\": {}}}", "\"tokens_in\": null, \"tokens_out\": null, \"stop_reason\": null, \"error_class\": null}}"), "is missing \"metadata\""),
        (&good.replace("\"nodes\": {", "\"extra\": 1, \"nodes\": {"), "unknown key \"extra\""),
        (&good.replace("{\"node_id\": \"n000002\"", "{\"node_id\": \"n000003\""), "equal to its key"),
        (
            &good.replace("n000002", "n18446744073709551615"),
            "a node id below",
        ),
    ];
    for (text, want) in cases {
        let err = Graph::from_snapshot_json(text.as_bytes(), Config::default()).err();
        let msg = err.map(|e| e.to_string()).unwrap_or_default();
        assert!(msg.contains(want), "{want:?} not in {msg:?} for {text}");
    }
}

#[test]
fn loaded_extreme_timestamps_never_overflow() {
    let g = graph();
    let root = g.create_root("run", None).unwrap();
    child(&g, root, Kind::Llm, "x");
    let text = String::from_utf8(g.snapshot_json()).unwrap();
    let start = text.find("\"start_ts_ms\": ").unwrap() + 15;
    let end = start + text[start..].find(',').unwrap();
    let text = text.replace(&text[start..end], &i64::MIN.to_string());
    let loaded = Graph::from_snapshot_json(text.as_bytes(), Config::default()).unwrap();
    let done = loaded
        .mark_success("n000002", 0.0, None, None, true)
        .unwrap();
    assert!(done.duration_ms >= 1);
    assert!(done.event.unwrap().elapsed_ms.unwrap() > 0.0);
}

#[test]
fn snapshot_json_sizing_pass_matches_the_written_bytes() {
    // Hostile text everywhere a string lands: quotes, backslashes, every control byte, DEL,
    // non-ASCII (two \u escapes for astral characters), and floats in both repr notations.
    let mut nasty = String::from("q\"b\\s/\u{7f}é😀\u{2028}");
    nasty.extend((0u8..0x20).map(char::from));
    let g = Graph::new(nasty.as_str(), Config::default()).unwrap();
    let meta = Value::Object(vec![
        (nasty.clone().into(), Value::Str(nasty.clone())),
        ("tiny".into(), Value::Float(1.5e-7)),
        ("huge".into(), Value::Float(-1.0e22)),
        ("neg0".into(), Value::Float(-0.0)),
        (
            "list".into(),
            Value::Array(vec![Value::Int(i64::MIN), Value::Null, Value::Bool(true)]),
        ),
    ]);
    let root = g.create_root(&nasty, Some(meta.clone())).unwrap();
    for (i, cost) in [0.0, 1e-5, 0.1 + 0.2, 12345678901234567.0, 3.0]
        .into_iter()
        .enumerate()
    {
        let n = id_string(
            g.begin_node(
                &id_string(root),
                Kind::Llm,
                &format!("{nasty}{i}"),
                Some(&nasty),
                Some(meta.clone()),
                true,
                false,
            )
            .unwrap()
            .0,
        );
        if i % 2 == 0 {
            g.mark_success(&n, cost, Some(i as i64), None, false)
                .unwrap();
        } else {
            g.mark_failure(&n, &nasty, Some(&nasty), false).unwrap();
        }
    }
    let mut w = g.snapshot_json_writer();
    let len = w.byte_len();
    let mut vec = Vec::new();
    w.write(&mut vec);
    assert_eq!(len, vec.len());
    let mut buf = vec![0u8; len];
    assert!(w.write_into(&mut buf));
    assert_eq!(buf, vec);
    // A buffer one byte short or long is reported, never overrun.
    assert!(!w.write_into(&mut vec![0u8; len - 1]));
    assert!(!w.write_into(&mut vec![0u8; len + 1]));
    drop(w);
    let text = String::from_utf8(g.snapshot_json()).unwrap();
    assert!(text.is_ascii());
    assert!(crate::json::read::<Value>(text.as_bytes()).is_ok());
}

/// The sizing pass measures integers and ids instead of formatting them (`Sink::counts_only`): its
/// length must equal what the writing pass writes, for every kind of content, or the bindings' pre-sized
/// `bytes` would not be filled exactly.
fn assert_sized_exactly(g: &Graph) {
    let mut w = g.snapshot_json_writer();
    let counted = w.byte_len();
    let mut written = Vec::new();
    w.write(&mut written);
    assert_eq!(counted, written.len());
    let mut exact = vec![0u8; counted];
    assert!(w.write_into(&mut exact));
    assert_eq!(exact, written);
    let mut short = vec![0u8; counted - 1];
    assert!(!w.write_into(&mut short));
    assert!(serde_json_free_parse(&written));
}

/// Strict JSON check without a dependency: the core's own reader.
fn serde_json_free_parse(bytes: &[u8]) -> bool {
    crate::json::read::<Value>(bytes).is_ok()
}

#[test]
fn the_sizing_pass_equals_the_written_length_for_hostile_content() {
    let g = graph();
    let nasty = "q\"uote\\back/slash\u{0}\u{1f}\u{7f}\t\r\n é中\u{1F600}\u{2028}";
    let meta = Value::Object(vec![
        (nasty.into(), Value::Str(nasty.repeat(50))),
        ("big".into(), Value::Int(i64::MIN)),
        ("max".into(), Value::Int(i64::MAX)),
        ("tiny".into(), Value::Float(5e-324)),
        ("huge".into(), Value::Float(1.7976931348623157e308)),
        (
            "list".into(),
            Value::Array(vec![Value::Null, Value::Bool(true), Value::Float(-0.0)]),
        ),
        (
            "tuple".into(),
            Value::Tuple(vec![Value::Int(0), Value::Int(-10)]),
        ),
    ]);
    let root = g.create_root(nasty, Some(meta)).unwrap();
    let costs = [0.0, 1e-7, 0.1, 123.456, 1e16, 1e22, 5e-324];
    let tokens = [0, 9, 10, 99, 100, 999_999, 1_000_000, i64::MAX];
    for (i, cost) in costs.iter().enumerate() {
        let (id, _) = g
            .begin_node(
                &id_string(root),
                Kind::Llm,
                &nasty[..i + 1],
                Some(nasty),
                None,
                true,
                false,
            )
            .unwrap();
        let id = id_string(id);
        let t = tokens[i % tokens.len()];
        match i % 3 {
            0 => g
                .mark_success(&id, *cost, Some(t), Some(t / 3), false)
                .map(|_| ()),
            1 => g.mark_failure(&id, nasty, Some(nasty), false).map(|_| ()),
            _ => g.mark_halt(&id, Some(nasty), false).map(|_| ()),
        }
        .unwrap();
    }
    assert_sized_exactly(&g);
}

#[test]
fn the_sizing_pass_counts_ids_across_the_padding_boundary() {
    // Ids of six digits and fewer are padded ("n000001"); from a million on they are written in full.
    let template = graph();
    let root = template.create_root("x", None).unwrap();
    let kid = child(&template, root, Kind::Llm, "y");
    template
        .mark_success(&kid, 0.5, Some(1), Some(2), false)
        .unwrap();
    let template = String::from_utf8(template.snapshot_json()).unwrap();
    for ids in [
        [999_999u64, 1_000_000],
        [9_999_999, 10_000_000],
        [1, 9_223_372_036_854_775_806],
    ] {
        let doc = template
            .replace("n000001", &id_string(ids[0]))
            .replace("n000002", &id_string(ids[1]));
        let g = Graph::from_snapshot_json(doc.as_bytes(), Config::default()).unwrap();
        assert_sized_exactly(&g);
        let text = String::from_utf8(g.snapshot_json()).unwrap();
        assert!(
            text.contains(&format!("\"{}\": {{", id_string(ids[1]))),
            "{text}"
        );
    }
}

fn object(entries: &[(&str, Value)]) -> Value {
    Value::Object(
        entries
            .iter()
            .map(|(k, v)| ((*k).into(), v.clone()))
            .collect(),
    )
}

#[test]
fn annotate_merges_keys_at_any_status_and_refuses_bad_input() {
    let g = graph();
    let root = g
        .create_root(
            "run",
            Some(object(&[("user_id", Value::Str("u-1".into()))])),
        )
        .unwrap();
    let call = child(&g, root, Kind::Llm, "plan");
    g.annotate(&call, object(&[("input", Value::Str("hi".into()))]))
        .unwrap();
    g.mark_success(&call, 0.0, None, None, false).unwrap();
    // Finished nodes take annotations too; a key given again replaces the old value.
    g.annotate(
        &call,
        object(&[
            ("output", Value::Str("hello".into())),
            ("input", Value::Str("hi!".into())),
        ]),
    )
    .unwrap();
    let json = String::from_utf8(g.snapshot_json()).unwrap();
    assert!(
        json.contains(r#""metadata": {"input": "hi!", "output": "hello"}"#),
        "{json}"
    );
    assert!(json.contains(r#""metadata": {"user_id": "u-1"}"#), "{json}");
    let before = g.snapshot_json();
    assert!(matches!(
        g.annotate(&call, Value::Int(1)),
        Err(RecorderError::InvalidMetadata(_))
    ));
    assert!(matches!(
        g.annotate(&call, object(&[("x", Value::Float(f64::NAN))])),
        Err(RecorderError::InvalidMetadata(_))
    ));
    assert!(matches!(
        g.annotate("n000099", object(&[])),
        Err(RecorderError::NodeNotFound(_))
    ));
    let strip = |b: &[u8]| {
        let s = String::from_utf8(b.to_vec()).unwrap();
        s[..s.find("\"snapshot_ts_ms\"").unwrap()].to_owned()
    };
    assert_eq!(strip(&g.snapshot_json()), strip(&before));
}

#[test]
fn a_node_named_by_id_or_by_text_is_the_same_node_and_the_same_error() {
    let g = Graph::with_max_nodes("c", 0).unwrap();
    let root = g.create_root("run", None).unwrap();
    let (by_id, _) = g
        .begin_node(root, Kind::Llm, "a", None, None, true, false)
        .unwrap();
    let (by_text, _) = g
        .begin_node("n000001", Kind::Llm, "b", None, None, true, false)
        .unwrap();
    assert_eq!((by_id, by_text), (2, 3));
    assert!(
        g.mark_success(by_id, 0.5, None, None, false)
            .unwrap()
            .applied
    );
    assert!(
        g.mark_success("n000003", 0.25, None, None, false)
            .unwrap()
            .applied
    );
    assert_eq!(g.aggregates().total_cost_usd, 0.75);
    let missing = |e: RecorderError| e.to_string();
    assert_eq!(
        missing(g.mark_running(99, false).unwrap_err()),
        missing(g.mark_running("n000099", false).unwrap_err())
    );
    assert_eq!(
        missing(
            g.begin_node(99, Kind::Llm, "x", None, None, false, false)
                .unwrap_err()
        ),
        "Parent node not found: 'n000099'"
    );
}

#[test]
fn finish_locked_ends_a_node_under_the_callers_lock_once() {
    let g = Graph::with_max_nodes("c", 0).unwrap();
    let root = g.create_root("run", None).unwrap();
    let (id, _) = g
        .begin_node(root, Kind::Tool, "t", None, None, true, false)
        .unwrap();
    let mut st = g.lock();
    let ending = crate::recorder::Terminal::halt(Some(""), Some("E"), super::Spent::NONE);
    assert!(
        g.finish_locked(&mut st, id, &ending, false)
            .unwrap()
            .applied
    );
    // Already ended: left as it is.
    let again = crate::recorder::Terminal::success(1.0, None, None).unwrap();
    assert!(!g.finish_locked(&mut st, id, &again, false).unwrap().applied);
    let n = st.arena.get(id).unwrap();
    assert_eq!(
        (n.status, st.arena.stop_reason(n)),
        (Status::Halt, Some("halt"))
    );
    drop(st);
    assert_eq!(g.aggregates().total_cost_usd, 0.0);
}
