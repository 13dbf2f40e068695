use std::sync::Arc;
use std::thread;

use super::*;
use crate::recorder::Kind;

fn contained(max_cost_usd: f64, max_steps: u64, max_retries_total: u64) -> Contained {
    let limits = Limits {
        max_cost_usd,
        max_steps,
        max_retries_total,
        timeout_ms: 0,
    };
    Contained::new(limits, "chain").expect("valid chain")
}

fn begin(c: &Contained, estimate: f64) -> Result<u64, Stop> {
    c.begin(None, Kind::Llm, "op", None, estimate, true, false)
        .expect("graph accepts the node")
}

fn succeed(c: &Contained, cost: f64) {
    let node = begin(c, 0.0).expect("admitted");
    c.succeed(node, true, cost).expect("closes");
}

#[test]
fn checks_run_in_documented_order() {
    assert_eq!(begin(&contained(1.0, 1, 0), 0.0), Err(Stop::Retries));
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
fn retries_count_exhaust_and_halt_with_provider_error() {
    let c = contained(1.0, 10, 2);
    let first = begin(&c, 0.0).unwrap();
    assert_eq!(
        c.fail(first, true, 0.0, true, Status::Error, GraphEnd::Fail("E")),
        Ok(1)
    );
    let second = begin(&c, 0.0).unwrap();
    assert_eq!(
        c.fail(second, true, 0.0, true, Status::Error, GraphEnd::Fail("E")),
        Ok(2)
    );
    assert_eq!(begin(&c, 0.0), Err(Stop::Retries));
    let records = c.records(0, 10);
    assert!(records[..2]
        .iter()
        .all(|r| r.status == Status::Error && r.retries == 1));
    let json = String::from_utf8(c.graph().snapshot_json()).unwrap();
    assert!(
        json.contains("\"stop_reason\": \"provider_error\""),
        "{json}"
    );
    assert_eq!(c.aggregates().total_retries, 2);
}

#[test]
fn closing_twice_or_unknown_nodes_is_an_error() {
    let c = contained(1.0, 10, 2);
    let node = begin(&c, 0.0).unwrap();
    c.succeed(node, true, 0.1).unwrap();
    assert!(c.succeed(node, true, 0.1).is_err());
    assert!(c.succeed(999, true, 0.1).is_err());
    assert!(c.succeed(c.root(), true, 0.1).is_err());
    assert!(c
        .fail(node, true, 0.0, true, Status::Error, GraphEnd::Fail("E"))
        .is_err());
    assert_eq!(c.counters().steps, 1);
}

#[test]
fn invalid_cost_leaves_the_call_open() {
    let c = contained(1.0, 10, 2);
    let node = begin(&c, 0.0).unwrap();
    assert!(c.succeed(node, true, f64::NAN).is_err());
    assert!(c.succeed(node, true, -1.0).is_err());
    assert_eq!(c.chain().in_flight(), 1);
    c.succeed(node, true, 0.25).unwrap();
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
    c.succeed(inner, false, 0.0).unwrap();
    c.succeed(outer, true, 0.0).unwrap();
    let after = c
        .begin(None, Kind::Tool, "", None, 0.0, true, true)
        .unwrap()
        .unwrap();
    c.succeed(after, false, 0.0).unwrap();
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
    assert_eq!(c.chain().cancel_cause(), Stop::Aborted.code());
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
                        c.succeed(node, true, 0.25).unwrap();
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
    b.succeed(in_b, true, 0.0).unwrap();
    let other = Arc::clone(&a);
    let elsewhere = thread::spawn(move || {
        let n = other
            .begin(None, Kind::Tool, "t", None, 0.0, true, true)
            .unwrap()
            .unwrap();
        other.succeed(n, true, 0.0).unwrap();
    });
    elsewhere.join().unwrap();
    a.succeed(outer, true, 0.0).unwrap();
    assert_eq!(b.records(0, 1)[0].parent, None);
    assert!(a.records(0, 2).iter().all(|r| r.parent.is_none()));
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
    c.fail(a, true, 0.4, false, Status::Halted, GraphEnd::Halt("x"))
        .unwrap();
    let again = begin(&c, 0.4).unwrap();
    c.succeed(b, true, 0.4).unwrap();
    c.succeed(again, true, 0.4).unwrap();
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
                        c.succeed(node, true, 0.25).unwrap();
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
    let c = Contained::new(limits, "chain").unwrap();
    thread::sleep(std::time::Duration::from_millis(5));
    assert_eq!(begin(&c, 0.0), Err(Stop::Timeout));
    assert_eq!(c.chain().cancel_cause(), Stop::Timeout.code());
    // An abort after the timeout keeps the first cause.
    assert!(c.chain().abort("late"));
    assert_eq!(c.chain().cancel_cause(), Stop::Timeout.code());
    assert_eq!(begin(&c, 0.0), Err(Stop::Aborted));
    let records = c.records(0, 10);
    assert_eq!(
        records.iter().map(|r| r.status).collect::<Vec<_>>(),
        [Status::Timeout, Status::Aborted]
    );
}
