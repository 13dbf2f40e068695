use std::sync::Arc;
use std::thread;

use super::*;
use crate::ids::NodeId;
use crate::recorder::Kind;

fn contained(max_cost_usd: f64, max_steps: u64, max_retries_total: u64) -> Contained {
    let limits = Limits {
        max_cost_usd,
        max_steps,
        max_retries_total,
        timeout_ms: 0,
    };
    Contained::new(limits, "chain", 0, None).expect("valid chain")
}

fn begin(c: &Contained, estimate: f64) -> Result<u64, Stop> {
    c.begin(None, Kind::Llm, "op", None, estimate, true, false)
        .expect("graph accepts the node")
        .map_err(|refused| refused.stop)
}

fn succeed(c: &Contained, cost: f64) {
    let node = begin(c, 0.0).expect("admitted");
    c.succeed(node, true, 0.0, Some(actual(cost)))
        .expect("closes");
}

fn actual(cost_usd: f64) -> Reported {
    Reported {
        cost_usd,
        ..Reported::default()
    }
}

fn failure(cost_estimate: f64, retry: bool, status: Status, end: GraphEnd<'_>) -> Failure<'_> {
    Failure {
        cost_estimate,
        retry,
        status,
        end,
        message: None,
    }
}

fn retry_fail(c: &Contained, node: u64) -> Option<&'static str> {
    c.fail(
        node,
        true,
        failure(0.0, true, Status::Error, GraphEnd::Fail("E")),
    )
    .expect("open")
    .stop
}

/// A chain whose retry budget is spent and stopped by one more failure.
fn retries_stopped(max_steps: u64) -> Contained {
    let c = contained(1.0, max_steps, 0);
    let node = begin(&c, 0.0).expect("a budget of 0 retries still admits calls");
    assert_eq!(retry_fail(&c, node), Some("provider_error"));
    c
}

#[test]
fn checks_run_in_documented_order() {
    assert_eq!(begin(&retries_stopped(1), 0.0), Err(Stop::Retries));
    assert_eq!(begin(&contained(1.0, 0, 0), 0.0), Err(Stop::Steps));
    let c = contained(0.0, 0, 0);
    assert_eq!(begin(&c, 0.0), Err(Stop::Budget));
    assert!(c.chain().abort("stop"));
    assert_eq!(begin(&c, 0.0), Err(Stop::Aborted));
}

#[test]
fn refused_calls_become_halt_nodes_and_records() {
    let c = contained(1.0, 0, 5);
    assert_eq!(begin(&c, 0.0), Err(Stop::Steps));
    let records = c.records(0, 10);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status, Status::Halted);
    let agg = c.aggregates();
    assert_eq!(agg.total_llm_calls, 1);
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(
        json.contains("\"stop_reason\": \"step_limit_exceeded\""),
        "{json}"
    );
}

#[test]
fn cost_ceiling_tolerates_float_accumulation() {
    let c = contained(1.0, 100, 5);
    for _ in 0..10 {
        succeed(&c, 0.1);
    }
    assert_eq!(begin(&c, 0.0), Err(Stop::Budget));
    assert_eq!(c.counters().steps, 10);
    assert!((c.aggregates().total_cost_usd - 1.0).abs() < 1e-9);
}

#[test]
fn estimate_is_checked_after_every_limit() {
    let c = contained(1.0, 10, 5);
    succeed(&c, 0.5);
    assert_eq!(begin(&c, 0.6), Err(Stop::Estimate));
    assert!(begin(&c, 0.5).is_ok());
    let c = contained(0.3, 10, 5);
    succeed(&c, 0.1);
    succeed(&c, 0.1);
    assert!(begin(&c, 0.1).is_ok(), "0.2 + 0.1 fits under 0.3");
}

#[test]
fn a_budget_of_n_retries_retries_n_failures_then_the_next_failure_stops_the_chain() {
    let c = contained(1.0, 10, 2);
    for used in 1..=2 {
        let node = begin(&c, 0.0).unwrap();
        assert_eq!(retry_fail(&c, node), None, "failure {used} is retried");
        assert_eq!(c.counters().retries, used);
    }
    // docs/design.md §34: the budget is spent, yet a call may still run and succeed.
    succeed(&c, 0.1);
    let third = begin(&c, 0.0).unwrap();
    assert_eq!(retry_fail(&c, third), Some("provider_error"));
    assert_eq!(c.counters().retries, 2, "no unit was left to take");
    assert_eq!(begin(&c, 0.0), Err(Stop::Retries));
    let records = c.records(0, 10);
    assert!(records[..2]
        .iter()
        .all(|r| r.status == Status::Error && r.retries == 1));
    assert_eq!(records[3].status, Status::Error);
    assert_eq!(
        records[3].retries, 0,
        "the stopping failure was not retried"
    );
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(
        json.contains("\"stop_reason\": \"provider_error\""),
        "{json}"
    );
    assert_eq!(c.aggregates().total_retries, 2);
}

#[test]
fn a_failed_call_is_charged_what_it_reported_before_failing() {
    let c = contained(1.0, 10, 5);
    let node = begin(&c, 0.1).unwrap();
    let used = Reported {
        cost_usd: 0.3,
        tokens_in: Some(100),
        tokens_out: None,
    };
    c.report(node, 0.3, Some(100), None).unwrap();
    let closed = c
        .fail(
            node,
            true,
            failure(0.1, true, Status::Error, GraphEnd::Fail("E")),
        )
        .unwrap();
    assert_eq!(closed.charged_usd, used.cost_usd);
    let counters = c.counters();
    assert_eq!((counters.cost_usd, counters.steps), (0.3, 0));
    assert_eq!(c.chain().reserved_usd(), 0.0);
    assert_eq!(c.records(0, 1)[0].cost_usd, 0.3);
    // The graph node keeps the charge; the aggregates add successes only (docs/design.md §2).
    assert_eq!(c.aggregates().total_cost_usd, 0.0);
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(json.contains("\"tokens_in\": 100"), "{json}");
    // Three such failures pass the ceiling: the chain refuses the next call.
    for _ in 0..3 {
        let node = begin(&c, 0.0).unwrap();
        c.report(node, 0.3, None, None).unwrap();
        let halted = failure(0.0, false, Status::Halted, GraphEnd::Halt("pipeline_halt"));
        assert_eq!(c.fail(node, true, halted).unwrap().charged_usd, 0.3);
    }
    assert_eq!(begin(&c, 0.0), Err(Stop::Budget));
}

#[test]
fn a_failure_without_a_report_is_charged_nothing() {
    let c = contained(1.0, 10, 5);
    let node = begin(&c, 0.4).unwrap();
    let closed = c
        .fail(
            node,
            true,
            failure(0.4, true, Status::Error, GraphEnd::Fail("E")),
        )
        .unwrap();
    assert_eq!(
        closed,
        Closed {
            stop: None,
            charged_usd: 0.0
        }
    );
    assert_eq!(c.counters().cost_usd, 0.0);
}

#[test]
fn closing_twice_or_unknown_nodes_is_an_error() {
    let c = contained(1.0, 10, 2);
    let node = begin(&c, 0.0).unwrap();
    c.succeed(node, true, 0.1, None).unwrap();
    assert!(c.succeed(node, true, 0.1, None).is_err());
    assert!(c.succeed(999, true, 0.1, None).is_err());
    assert!(c.succeed(c.root(), true, 0.1, None).is_err());
    assert!(c
        .fail(
            node,
            true,
            failure(0.0, true, Status::Error, GraphEnd::Fail("E"))
        )
        .is_err());
    assert_eq!(c.counters().steps, 1);
}

#[test]
fn invalid_cost_leaves_the_call_open() {
    let c = contained(1.0, 10, 2);
    let node = begin(&c, 0.0).unwrap();
    assert!(c.succeed(node, true, 0.0, Some(actual(f64::NAN))).is_err());
    assert!(c.succeed(node, true, 0.0, Some(actual(-1.0))).is_err());
    assert_eq!(c.chain().in_flight(), 1);
    c.succeed(node, true, 0.0, Some(actual(0.25))).unwrap();
    assert_eq!(c.counters().cost_usd, 0.25);
}

#[test]
fn nested_calls_hang_under_their_parent() {
    let c = contained(1.0, 10, 2);
    let outer = c
        .begin(None, Kind::Llm, "op", None, 0.0, true, true)
        .unwrap()
        .unwrap();
    // The open outer call is deeper than the hinted root, so it wins.
    let inner = c
        .begin(Some(c.root()), Kind::Tool, "", None, 0.0, true, true)
        .unwrap()
        .unwrap();
    c.succeed(inner, false, 0.0, None).unwrap();
    c.succeed(outer, true, 0.0, None).unwrap();
    let after = c
        .begin(None, Kind::Tool, "", None, 0.0, true, true)
        .unwrap()
        .unwrap();
    c.succeed(after, false, 0.0, None).unwrap();
    let records = c.records(0, 10);
    assert_eq!(records[2].parent, None);
    assert_eq!(records[0].parent, Some(outer));
    assert_eq!(records[0].name, "");
    assert_eq!(records[1].parent, None);
    assert_eq!(records[1].name, "op");
    assert_eq!(c.aggregates().max_depth, 2);
}

#[test]
fn abort_is_first_wins_and_keeps_reason() {
    let c = contained(1.0, 10, 5);
    assert!(c.chain().abort("first"));
    assert!(!c.chain().abort("second"));
    assert_eq!(c.counters().abort_reason.as_deref(), Some("first"));
    assert_eq!(c.chain().cancel_cause(), Some(Stop::Aborted));
}

#[test]
fn concurrent_callers_never_overshoot_the_step_limit() {
    let c = Arc::new(contained(1e9, 1000, 5));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let c = Arc::clone(&c);
            thread::spawn(move || {
                let mut admitted = 0u64;
                for _ in 0..500 {
                    if let Ok(node) = begin(&c, 0.0) {
                        c.succeed(node, true, 0.25, None).unwrap();
                        admitted += 1;
                    }
                }
                admitted
            })
        })
        .collect();
    let admitted: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let counters = c.counters();
    assert_eq!(admitted, 1000);
    assert_eq!(counters.steps, 1000);
    assert_eq!(counters.cost_usd, 250.0);
    assert_eq!(c.chain().in_flight(), 0);
    assert_eq!(c.aggregates().total_llm_calls, 4000);
}

#[test]
fn records_are_capped_but_counters_are_not() {
    let c = contained(1e9, u64::MAX, 5);
    for _ in 0..MAX_RECORDS + 5 {
        succeed(&c, 0.0);
    }
    assert_eq!(c.counters().records, MAX_RECORDS);
    assert_eq!(c.counters().steps, (MAX_RECORDS + 5) as u64);
}

#[test]
fn nesting_is_per_thread_and_per_chain() {
    let a = Arc::new(contained(1.0, 100, 2));
    let b = contained(1.0, 100, 2);
    let outer = a
        .begin(None, Kind::Llm, "a", None, 0.0, true, true)
        .unwrap()
        .unwrap();
    let in_b = b
        .begin(None, Kind::Llm, "b", None, 0.0, true, true)
        .unwrap()
        .unwrap();
    b.succeed(in_b, true, 0.0, None).unwrap();
    let other = Arc::clone(&a);
    let elsewhere = thread::spawn(move || {
        let n = other
            .begin(None, Kind::Tool, "t", None, 0.0, true, true)
            .unwrap()
            .unwrap();
        other.succeed(n, true, 0.0, None).unwrap();
    });
    elsewhere.join().unwrap();
    a.succeed(outer, true, 0.0, None).unwrap();
    assert_eq!(b.records(0, 1)[0].parent, None);
    assert!(a.records(0, 2).iter().all(|r| r.parent.is_none()));
}

fn open_sync(c: &Contained, name: &str) -> NodeId {
    c.begin(None, Kind::Llm, name, None, 0.0, true, true)
        .unwrap()
        .unwrap()
}

/// The owner names of this thread's open calls, innermost first, that carry one.
fn owners_open() -> (usize, Option<&'static str>) {
    nesting::innermost_of(|owner, _| owner.downcast_ref::<&'static str>().copied())
}

#[test]
fn entries_carry_their_chain_owner_and_pop_once() {
    let a = contained(1.0, 100, 2);
    let b = contained(1.0, 100, 2);
    assert!(a.set_owner(Arc::new("a")));
    assert!(!a.set_owner(Arc::new("again")), "the first owner stays");
    assert!(b.set_owner(Arc::new("b")));
    let outer = open_sync(&a, "outer");
    let mid = open_sync(&b, "mid");
    assert_eq!(owners_open(), (2, Some("b")));
    b.succeed(mid, true, 0.0, None).unwrap();
    assert_eq!(owners_open(), (1, Some("a")));
    a.succeed(outer, true, 0.0, None).unwrap();
    assert_eq!(owners_open(), (0, None));
}

#[test]
fn settling_a_call_forgets_the_calls_left_open_inside_it() {
    let a = contained(1.0, 100, 2);
    let b = contained(1.0, 100, 2);
    let outer = open_sync(&a, "outer");
    let _leaked = open_sync(&b, "leaked");
    let _leaked_too = open_sync(&a, "leaked_too");
    assert_eq!(nesting::depth(), 3);
    a.succeed(outer, true, 0.0, None).unwrap();
    assert_eq!(nesting::depth(), 0);
    let next = open_sync(&a, "next");
    a.succeed(next, true, 0.0, None).unwrap();
    let parents: Vec<_> = a.records(0, 10).iter().map(|r| r.parent).collect();
    assert_eq!(
        parents,
        vec![None, None],
        "the leaked call is not the next wrap's parent"
    );
}

#[test]
fn a_chain_dropped_with_calls_open_leaves_no_entry_on_its_thread() {
    let a = contained(1.0, 100, 2);
    let b = contained(1.0, 100, 2);
    b.set_owner(Arc::new("b"));
    let outer = open_sync(&b, "outer");
    open_sync(&a, "leaked");
    drop(a);
    assert_eq!(owners_open(), (1, Some("b")));
    b.succeed(outer, true, 0.0, None).unwrap();
    assert_eq!(nesting::depth(), 0);
}

#[test]
fn estimates_of_calls_in_flight_are_reserved() {
    let c = contained(1.0, 100, 5);
    let a = begin(&c, 0.4).unwrap();
    let b = begin(&c, 0.4).unwrap();
    assert_eq!(
        begin(&c, 0.4),
        Err(Stop::Estimate),
        "0.8 reserved + 0.4 > 1.0"
    );
    c.fail(
        a,
        true,
        failure(0.4, false, Status::Halted, GraphEnd::Halt("x")),
    )
    .unwrap();
    let again = begin(&c, 0.4).unwrap();
    c.succeed(b, true, 0.4, None).unwrap();
    c.succeed(again, true, 0.4, None).unwrap();
    assert_eq!(c.counters().cost_usd, 0.8);
    assert_eq!(begin(&c, 0.3), Err(Stop::Estimate));
    assert!(begin(&c, 0.2).is_ok());
}

#[test]
fn concurrent_estimated_calls_never_overshoot_the_ceiling() {
    let c = Arc::new(contained(10.0, u64::MAX, 5));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let c = Arc::clone(&c);
            thread::spawn(move || {
                for _ in 0..100 {
                    if let Ok(node) = begin(&c, 0.25) {
                        c.succeed(node, true, 0.25, None).unwrap();
                    }
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    assert_eq!(c.counters().cost_usd, 10.0);
    assert_eq!(c.counters().steps, 40);
}

#[test]
fn timeout_is_noticed_at_admission_and_becomes_the_cancel_cause() {
    let limits = Limits {
        max_cost_usd: 1.0,
        max_steps: 10,
        max_retries_total: 2,
        timeout_ms: 1,
    };
    let c = Contained::new(limits, "chain", 0, None).unwrap();
    thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(begin(&c, 0.0), Err(Stop::Timeout));
    assert_eq!(c.chain().cancel_cause(), Some(Stop::Timeout));
    // An abort after the timeout keeps the first cause.
    assert!(c.chain().abort("late"));
    assert_eq!(c.chain().cancel_cause(), Some(Stop::Timeout));
    assert_eq!(begin(&c, 0.0), Err(Stop::Aborted));
    let records = c.records(0, 10);
    assert_eq!(
        records.iter().map(|r| r.status).collect::<Vec<_>>(),
        [Status::Timeout, Status::Aborted]
    );
}

#[test]
fn actual_cost_replaces_the_estimate_and_the_next_call_is_refused() {
    // docs/design.md §20: a $0.50 ceiling, a call estimated at 0 that really cost $1.00.
    let c = contained(0.5, 100, 5);
    let node = begin(&c, 0.0).unwrap();
    c.report(node, 1.0, Some(10), Some(20)).unwrap();
    assert_eq!(c.succeed(node, true, 0.0, None), Ok(1.0));
    assert_eq!(c.counters().cost_usd, 1.0);
    assert_eq!(c.chain().reserved_usd(), 0.0);
    assert_eq!(begin(&c, 0.0), Err(Stop::Budget));
    assert_eq!(c.aggregates().total_tokens_out, 20);
}

#[test]
fn reports_add_up_and_are_validated_without_changing_anything() {
    let c = contained(100.0, 100, 5);
    let node = begin(&c, 0.1).unwrap();
    c.report(node, 0.25, None, Some(5)).unwrap();
    c.report(node, 0.5, Some(1), Some(5)).unwrap();
    assert!(c.report(node, f64::NAN, None, None).is_err());
    assert!(c.report(node, -1.0, None, None).is_err());
    assert!(c.report(node, 0.0, Some(-1), None).is_err());
    assert!(
        c.report(node, 0.0, None, Some(i64::MAX)).is_err(),
        "overflow"
    );
    assert!(c.report(c.root(), 1.0, None, None).is_err());
    let taken = c.take_report(node).unwrap();
    assert_eq!(
        (taken.cost_usd, taken.tokens_in, taken.tokens_out),
        (0.75, Some(1), Some(10))
    );
    assert_eq!(
        c.succeed(node, true, 0.1, None),
        Ok(0.1),
        "nothing left: the estimate"
    );
    assert!(c.report(node, 1.0, None, None).is_err(), "closed");
}

#[test]
fn a_total_that_would_overflow_closes_the_call_without_counting_it() {
    let c = contained(f64::MAX, 100, 5);
    succeed(&c, 1e308);
    let node = begin(&c, 0.0).unwrap();
    assert!(c.succeed(node, true, 0.0, Some(actual(1e308))).is_err());
    let counters = c.counters();
    assert_eq!((counters.steps, counters.cost_usd), (1, 1e308));
    assert_eq!(c.chain().in_flight(), 0);
    assert_eq!(c.records(1, 2)[0].status, Status::Error);
    assert!(c.chain().add_cost(1e308).is_err());
    assert!(c.chain().add_cost(-1.0).is_err());
}

#[test]
fn reservations_count_until_settled_and_overshoot_is_bounded() {
    let c = contained(1.0, 100, 5);
    let a = begin(&c, 0.5).unwrap();
    let b = begin(&c, 0.5).unwrap();
    assert!(begin(&c, 0.0).is_ok(), "a zero estimate still fits");
    assert_eq!(begin(&c, 0.01), Err(Stop::Estimate));
    // Both in flight really cost 0.75: the overshoot is their actual minus their estimates.
    c.succeed(a, true, 0.5, Some(actual(0.75))).unwrap();
    c.succeed(b, true, 0.5, Some(actual(0.75))).unwrap();
    assert_eq!(c.counters().cost_usd, 1.5);
    assert_eq!(begin(&c, 0.0), Err(Stop::Budget));
}

#[test]
fn concurrent_failures_never_take_retries_past_the_budget() {
    let c = Arc::new(contained(1e9, u64::MAX, 50));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let c = Arc::clone(&c);
            thread::spawn(move || {
                let mut stops = 0;
                for _ in 0..200 {
                    if let Ok(node) = begin(&c, 0.0) {
                        if retry_fail(&c, node).is_some() {
                            stops += 1;
                        }
                    }
                }
                stops
            })
        })
        .collect();
    let stops: u32 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(c.counters().retries, 50);
    assert!(stops >= 1);
    let graph_retries: u32 = c.records(0, MAX_RECORDS).iter().map(|r| r.retries).sum();
    assert_eq!(u64::from(graph_retries), 50);
    assert_eq!(c.aggregates().total_retries, 50);
}

#[test]
fn records_survive_graph_pruning_and_keep_error_messages() {
    let limits = Limits {
        max_cost_usd: 1e9,
        max_steps: u64::MAX,
        max_retries_total: u64::MAX,
        timeout_ms: 0,
    };
    let c = Contained::new(limits, "chain", 10, None).unwrap();
    for i in 0..50 {
        let node = begin(&c, 0.0).unwrap();
        if i % 2 == 0 {
            c.succeed(node, true, 0.0, Some(actual(0.5))).unwrap();
        } else {
            let long = "é".repeat(1500);
            let f = Failure {
                message: Some(&long),
                ..failure(0.0, true, Status::Error, GraphEnd::Fail("E"))
            };
            c.fail(node, true, f).unwrap();
        }
    }
    assert!(c.graph().lock().arena.len() <= 11);
    let records = c.records(0, 100);
    assert_eq!(records.len(), 50);
    assert_eq!(records[0].cost_usd, 0.5);
    let message = records[1].error_message.as_deref().unwrap();
    assert_eq!(message.chars().count(), MAX_ERROR_MESSAGE);
    assert_eq!(records[1].retries, 1);
}

#[test]
fn the_root_keeps_the_chain_context_and_calls_take_annotations() {
    let limits = Limits {
        max_cost_usd: 1.0,
        max_steps: 10,
        max_retries_total: 1,
        timeout_ms: 0,
    };
    let context = crate::value::Value::Object(vec![(
        "session_id".into(),
        crate::value::Value::Str("s-9".into()),
    )]);
    let c = Contained::new(limits, "chain", 0, Some(context)).unwrap();
    let node = begin(&c, 0.0).expect("admitted");
    let content = crate::value::Value::Object(vec![(
        "content".into(),
        crate::value::Value::Str("in".into()),
    )]);
    c.annotate(node, content).unwrap();
    c.succeed(node, true, 0.0, None).unwrap();
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(json.contains(r#""session_id": "s-9""#), "{json}");
    assert!(json.contains(r#""content": "in""#), "{json}");
    assert!(c.annotate(99, crate::value::Value::empty_object()).is_err());
}

#[test]
fn memory_calls_are_steps_with_their_own_kind() {
    let c = contained(1.0, 2, 1);
    for kind in [Kind::MemoryRead, Kind::MemoryWrite] {
        let node = c
            .begin(None, kind, "recall", None, 0.0, true, false)
            .expect("graph accepts the node")
            .expect("admitted");
        c.succeed(node, true, 0.0, None).expect("closes");
    }
    let refused = c
        .begin(None, Kind::MemoryRead, "recall", None, 0.0, true, false)
        .expect("graph accepts the node");
    assert_eq!(refused.map_err(|r| r.stop), Err(Stop::Steps));
    let kinds: Vec<Kind> = c.records(0, 3).iter().map(|r| r.kind).collect();
    assert_eq!(
        kinds,
        [Kind::MemoryRead, Kind::MemoryWrite, Kind::MemoryRead]
    );
    assert_eq!(c.counters().steps, 2);
    let aggregates = c.aggregates();
    assert_eq!(
        (aggregates.total_llm_calls, aggregates.total_tool_calls),
        (0, 0)
    );
}

#[test]
fn the_root_keeps_its_metadata() {
    let limits = Limits {
        max_cost_usd: 1.0,
        max_steps: 1,
        max_retries_total: 1,
        timeout_ms: 0,
    };
    let meta = vec![(
        "agent_id".into(),
        crate::value::Value::Str("planner".into()),
    )];
    let c = Contained::new(limits, "chain", 0, Some(crate::value::Value::Object(meta)))
        .expect("valid chain");
    let json = String::from_utf8(c.graph().snapshot_json()).expect("utf-8");
    assert!(json.contains(r#""agent_id": "planner""#), "{json}");
}

#[test]
fn flag_sets_metadata_on_open_and_settled_calls() {
    let c = contained(1.0, 10, 1);
    let open = begin(&c, 0.0).expect("admitted");
    c.flag(open, "usage_missing").expect("open node");
    c.succeed(open, true, 0.0, None).expect("closes");
    c.flag(open, "settled_too")
        .expect("settled node still exists");
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(
        json.contains(r#""metadata": {"usage_missing": true, "settled_too": true}"#),
        "{json}"
    );
    assert!(c.flag(9_999, "usage_missing").is_err());
}

#[test]
fn the_root_is_closed_with_the_chain_once() {
    let root_status = |c: &Contained| {
        let st = c.graph().lock();
        st.arena.get(c.root()).unwrap().status
    };
    let c = contained(1.0, 10, 5);
    succeed(&c, 0.1);
    c.close_root(None, None).unwrap();
    assert_eq!(root_status(&c), crate::recorder::Status::Success);
    c.close_root(Some("timeout"), None).unwrap();
    assert_eq!(
        root_status(&c),
        crate::recorder::Status::Success,
        "closed once"
    );
    assert!(
        (c.aggregates().total_cost_usd - 0.1).abs() < 1e-12,
        "the root adds no cost"
    );
    let c = contained(1.0, 10, 5);
    c.close_root(Some("budget_exceeded"), Some("ValueError"))
        .unwrap();
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(
        json.contains("\"stop_reason\": \"budget_exceeded\""),
        "{json}"
    );
    let c = contained(1.0, 10, 5);
    c.close_root(None, Some("ValueError")).unwrap();
    assert_eq!(root_status(&c), crate::recorder::Status::Fail);
}
