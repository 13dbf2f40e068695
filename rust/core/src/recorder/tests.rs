//! Graph-level behaviour: lifecycle, aggregates, pruning and the JSON encoding.

use super::graph::{Config, Graph};
use super::ids::id_string;
use super::kind::{Kind, Status};
use super::RecorderError;
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
    let meta = Value::Dict(vec![("q".into(), Value::Str("ünï".into()))]);
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
