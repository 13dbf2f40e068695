//! Recording finished calls: one step equals `begin_node(running=True)` + `mark_*`, a batch is
//! checked whole, and a refused call or batch changes nothing.

use super::graph::{Config, Graph, Spent};
use super::kind::{Kind, Status};
use super::record::FinishedCall;
use super::RecorderError;
use crate::ids::{id_string, NodeId};
use crate::value::Value;

fn graph(max_nodes: usize) -> Graph {
    Graph::with_max_nodes("chain-1", max_nodes).unwrap()
}

fn call(parent: NodeId, status: Status) -> FinishedCall<'static> {
    FinishedCall {
        parent,
        kind: Kind::Llm,
        name: "plan",
        model: Some("m"),
        status,
        cost_usd: 0.0,
        tokens_in: None,
        tokens_out: None,
        started_ms: Some(1_000),
        ended_ms: Some(1_250),
        error_class: None,
        stop_reason: None,
        metadata: None,
    }
}

/// Every field of every node but the times, and the divergence state: what must be equal
/// whichever way the calls were recorded.
fn state(g: &Graph) -> String {
    let st = g.lock();
    let mut out = format!("{:?} pruned={} ", g.aggregates(), g.pruned_count());
    for id in 1..=64 {
        if let Some(n) = st.arena.get(id) {
            let name = |s: Option<u32>| s.map(|s| st.names.resolve(s).to_owned());
            out += &format!(
                "[{id} p={} d={} {:?} {:?} {} {:?} {} {:?} {:?} {:?} {:?} {:?} r={}]",
                n.parent,
                n.depth,
                n.kind,
                n.status,
                st.names.resolve(n.name),
                name(n.model()),
                n.cost_usd,
                n.tokens_in(),
                n.tokens_out(),
                name(n.error_class()),
                st.arena.stop_reason(n),
                st.arena.metadata(n),
                n.retries,
            );
        }
    }
    // Which signals fired, for which node; their rates depend on the times.
    let signals: Vec<_> = st
        .divergence
        .pending
        .iter()
        .map(|e| format!("{e:?}").split([' ', ',']).next().map(str::to_owned))
        .collect();
    out + &format!("{signals:?}")
}

/// The same call through the three-step path.
fn three_steps(g: &Graph, c: &FinishedCall<'_>) -> String {
    let (id, _) = g
        .begin_node(
            &id_string(c.parent),
            c.kind,
            c.name,
            c.model,
            c.metadata.clone(),
            false,
            false,
        )
        .unwrap();
    let id = id_string(id);
    g.mark_running(&id, false).unwrap();
    let spent = Spent {
        cost_usd: c.cost_usd,
        tokens_in: c.tokens_in.map(|n| n as u64),
        tokens_out: c.tokens_out.map(|n| n as u64),
    };
    match c.status {
        Status::Success => {
            g.mark_success(&id, c.cost_usd, c.tokens_in, c.tokens_out, false)
                .unwrap();
        }
        Status::Fail => {
            g.mark_failure_charged(&id, c.error_class.unwrap(), c.stop_reason, spent, false)
                .unwrap();
        }
        _ => {
            g.mark_halt_charged(&id, c.stop_reason, c.error_class, spent, false)
                .unwrap();
        }
    }
    id
}

fn every_status(root: NodeId) -> Vec<FinishedCall<'static>> {
    let mut ok = call(root, Status::Success);
    ok.cost_usd = 0.25;
    ok.tokens_in = Some(10);
    ok.tokens_out = Some(7);
    ok.metadata = Some(Value::Object(vec![("k".into(), Value::Int(1))]));
    let mut tool = call(root, Status::Success);
    tool.kind = Kind::Tool;
    tool.name = "search";
    tool.model = None;
    let mut failed = call(root, Status::Fail);
    failed.error_class = Some("RateLimitError");
    failed.stop_reason = Some("429");
    failed.cost_usd = 0.01;
    let mut halted = call(root, Status::Halt);
    halted.error_class = Some("Timeout");
    halted.tokens_in = Some(3);
    let bare_halt = call(root, Status::Halt);
    vec![ok, tool, failed, halted, bare_halt]
}

#[test]
fn one_step_equals_begin_running_and_mark_for_every_status() {
    let (a, b, c) = (graph(0), graph(0), graph(0));
    for g in [&a, &b, &c] {
        g.create_root("run", None).unwrap();
    }
    // Times left to the clock, as the three steps take them.
    let mut calls = every_status(1);
    for c in &mut calls {
        (c.started_ms, c.ended_ms) = (None, None);
    }
    for call in &calls {
        three_steps(&a, call);
        let r = b.record_call(&mut call.clone(), false, false).unwrap();
        assert!(r.finished.applied);
    }
    let batch = c.record_calls(&mut calls.clone(), false, false).unwrap();
    assert_eq!((batch.first, batch.len, batch.hooked.len()), (2, 5, 0));
    let hooked = a.record_calls(&mut calls.clone(), false, true).unwrap();
    let ids: Vec<_> = hooked.hooked.iter().map(|r| r.id).collect();
    assert_eq!(ids, [7, 8, 9, 10, 11]);
    for call in &calls {
        three_steps(&b, call);
        three_steps(&c, call);
    }
    assert_eq!(state(&a), state(&b));
    assert_eq!(state(&a), state(&c));
    assert!(state(&a).contains(r#"[Some("CostRate"), Some("TokenVelocity")"#));
    let st = b.lock();
    assert_eq!(st.arena.stop_reason(st.arena.get(6).unwrap()), Some("halt"));
}

#[test]
fn recorded_calls_feed_divergence_like_dispatched_ones() {
    let (a, b) = (graph(0), graph(0));
    let mut c = call(1, Status::Success);
    c.kind = Kind::Tool;
    c.name = "web_search";
    for g in [&a, &b] {
        g.create_root("run", None).unwrap();
    }
    for _ in 0..3 {
        three_steps(&a, &c);
    }
    b.record_calls(&mut [c.clone(), c.clone(), c.clone()], false, false)
        .unwrap();
    assert_eq!(b.aggregates().divergence_emitted_count, 1);
    assert_eq!(state(&a), state(&b));
}

#[test]
fn the_hooks_data_is_that_of_the_three_steps() {
    let g = graph(0);
    g.create_root("run", None).unwrap();
    let mut c = call(1, Status::Halt);
    c.stop_reason = Some("budget");
    c.metadata = Some(Value::Object(vec![("k".into(), Value::Int(1))]));
    let r = g.record_call(&mut c, true, true).unwrap();
    let started = r.started.unwrap();
    assert_eq!((started.id, started.name.as_str()), (2, "plan"));
    assert!(started.metadata.is_some());
    assert_eq!(r.finished.reason.as_deref(), Some("budget"));
    assert_eq!(r.finished.duration_ms, 250);
    let event = r.finished.event.unwrap();
    assert_eq!((event.status, event.depth), (Status::Halt, 1));
    assert_eq!(event.elapsed_ms, Some(250.0));
    let quiet = g
        .record_call(&mut call(1, Status::Success), false, false)
        .unwrap();
    assert!(quiet.started.is_none() && quiet.finished.event.is_none());
}

#[test]
fn bad_calls_name_the_argument_and_change_nothing() {
    let g = graph(0);
    g.create_root("run", None).unwrap();
    let before = state(&g);
    let mut cases: Vec<(FinishedCall<'static>, &str)> = Vec::new();
    let mut c = call(1, Status::Success);
    c.cost_usd = -1.0;
    cases.push((c, "cost_usd must be a finite number >= 0; got -1"));
    let mut c = call(1, Status::Success);
    c.cost_usd = f64::NAN;
    cases.push((c, "cost_usd must be a finite number >= 0; got NaN"));
    let mut c = call(1, Status::Success);
    c.tokens_out = Some(-3);
    cases.push((c, "tokens_out must be >= 0; got -3"));
    cases.push((
        call(1, Status::Running),
        "status must be 'success', 'fail' or 'halt' (a recorded call has finished); got \"running\"",
    ));
    let mut c = call(1, Status::Success);
    c.ended_ms = Some(999);
    cases.push((
        c,
        "ended_at must be >= started_at; got ended_at=999 < started_at=1000",
    ));
    let mut c = call(1, Status::Success);
    c.started_ms = Some(-1);
    cases.push((c, "started_at must be epoch milliseconds >= 0; got -1"));
    cases.push((
        call(1, Status::Fail),
        "error_class is required when status is 'fail' (the class of the failure)",
    ));
    let mut c = call(1, Status::Success);
    c.error_class = Some("E");
    cases.push((c, "error_class must be None when status is 'success'"));
    let mut c = call(1, Status::Success);
    c.stop_reason = Some("r");
    cases.push((c, "stop_reason must be None when status is 'success'"));
    let mut c = call(1, Status::Success);
    c.metadata = Some(Value::Object(vec![(
        "x".into(),
        Value::Float(f64::INFINITY),
    )]));
    cases.push((
        c,
        "metadata must be strict JSON: NaN and infinite floats are not allowed (at metadata[\"x\"])",
    ));
    cases.push((call(9, Status::Success), "Parent node not found: 'n000009'"));
    for (c, message) in cases {
        let err = g.record_call(&mut c.clone(), true, true).unwrap_err();
        assert_eq!(err.to_string(), message);
        let err = g
            .record_calls(&mut [call(1, Status::Success), c], true, true)
            .unwrap_err();
        assert!(
            matches!(err, RecorderError::Row { index: 1, .. }),
            "{err:?}"
        );
        if let RecorderError::Row { error, .. } = &err {
            assert_eq!(err.code(), error.code());
        }
        assert!(err.to_string().starts_with("rows[1]."), "{err}");
        assert_eq!(state(&g), before);
    }
    assert_eq!(g.len(), 1);
}

#[test]
fn a_batch_whose_totals_would_overflow_changes_nothing() {
    let g = graph(0);
    g.create_root("run", None).unwrap();
    let mut big = call(1, Status::Success);
    big.cost_usd = 1e308;
    let err = g
        .record_calls(
            &mut [big.clone(), call(1, Status::Success), big.clone()],
            false,
            false,
        )
        .unwrap_err();
    assert!(err
        .to_string()
        .starts_with("rows[2].cost_usd would make total_cost_usd non-finite"));
    let mut many = call(1, Status::Success);
    many.tokens_out = Some(i64::MAX);
    let err = g
        .record_calls(&mut [many.clone(), many], false, false)
        .unwrap_err();
    assert!(
        err.to_string().starts_with("rows[1].tokens_out would make"),
        "{err}"
    );
    assert_eq!((g.len(), g.aggregates().total_cost_usd), (1, 0.0));
    // A failed call's cost stays on its node and out of the totals (docs/design.md §30).
    let mut failed = big.clone();
    failed.status = Status::Fail;
    failed.error_class = Some("E");
    g.record_calls(&mut [big, failed.clone(), failed], false, false)
        .unwrap();
    assert_eq!(g.aggregates().total_cost_usd, 1e308);
}

#[test]
fn times_default_to_now_and_an_end_before_the_start_is_refused() {
    let g = graph(0);
    g.create_root("run", None).unwrap();
    let mut c = call(1, Status::Success);
    (c.started_ms, c.ended_ms) = (None, None);
    let before = super::graph::now_ms();
    let id = g.record_call(&mut c.clone(), false, false).unwrap().id;
    c.started_ms = Some(5);
    let from_five = g.record_call(&mut c.clone(), false, false).unwrap().id;
    let far = before + 3_600_000;
    c.started_ms = Some(far);
    let future = g.record_call(&mut c, false, false).unwrap().id;
    let st = g.lock();
    let n = st.arena.get(id).unwrap();
    assert!(n.start_ms >= before && n.end_ms() == Some(n.start_ms));
    let n = st.arena.get(from_five).unwrap();
    assert!(n.start_ms == 5 && n.end_ms().unwrap() >= before);
    let n = st.arena.get(future).unwrap();
    assert_eq!((n.start_ms, n.end_ms()), (far, Some(far)));
}

#[test]
fn max_nodes_prunes_as_the_three_steps_do_and_keeps_the_batch_parents() {
    let (a, b) = (graph(4), graph(4));
    for g in [&a, &b] {
        g.create_root("run", None).unwrap();
    }
    for _ in 0..10 {
        three_steps(&a, &call(1, Status::Success));
        b.record_call(&mut call(1, Status::Success), false, false)
            .unwrap();
    }
    assert_eq!(state(&a), state(&b));
    assert_eq!((b.len(), b.pruned_count()), (4, 7));

    // Nodes 2 and 3 are the oldest terminal nodes and the parents of the batch: one call at a
    // time, the first row would evict node 3 before its children came; the batch keeps both.
    let g = graph(3);
    g.create_root("run", None).unwrap();
    for _ in 0..2 {
        g.record_call(&mut call(1, Status::Success), false, false)
            .unwrap();
    }
    let mut rows = vec![
        call(2, Status::Success),
        call(3, Status::Success),
        call(3, Status::Success),
    ];
    let ids: Vec<_> = g
        .record_calls(&mut rows, true, false)
        .unwrap()
        .hooked
        .iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(ids, [4, 5, 6]);
    let st = g.lock();
    for id in [1, 2, 3, 6] {
        assert!(st.arena.get(id).is_some(), "{id}");
    }
    assert_eq!(st.arena.get(6).unwrap().depth, 2);
}

#[test]
fn an_empty_batch_records_nothing() {
    let g = graph(0);
    g.create_root("run", None).unwrap();
    assert!(g
        .record_calls(&mut [], true, true)
        .unwrap()
        .hooked
        .is_empty());
    assert_eq!(g.len(), 1);
}

#[test]
fn a_graph_without_a_root_has_no_parent() {
    let g = Graph::new("c", Config::default()).unwrap();
    let err = g
        .record_call(&mut call(1, Status::Success), false, false)
        .unwrap_err();
    assert_eq!(err, RecorderError::ParentNotFound("n000001".into()));
}
