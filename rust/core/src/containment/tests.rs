use std::sync::Arc;
use std::thread;

use super::*;

fn limits(max_cost_usd: f64, max_steps: u64, max_retries_total: u64) -> Limits {
    Limits {
        max_cost_usd,
        max_steps,
        max_retries_total,
        timeout_ms: 0,
    }
}

fn rec(kind: Kind) -> Record {
    Chain::new_record("n".into(), None, kind, "op".into())
}

fn succeed(chain: &Chain, cost: f64) {
    chain.enter(0.0).expect("admitted");
    let mut r = rec(Kind::Llm);
    r.cost_usd = cost;
    chain.leave(r, Outcome::Success);
}

#[test]
fn checks_run_in_documented_order() {
    let chain = Chain::new(limits(1.0, 1, 0));
    // Retry budget of 0 refuses, but the step and cost limits are checked first.
    assert_eq!(chain.enter(0.0), Err(Stop::Retries));
    let chain = Chain::new(limits(1.0, 0, 0));
    assert_eq!(chain.enter(0.0), Err(Stop::Steps));
    let chain = Chain::new(limits(0.0, 0, 0));
    assert_eq!(chain.enter(0.0), Err(Stop::Budget));
    assert!(chain.abort("stop"));
    assert_eq!(chain.enter(0.0), Err(Stop::Aborted));
}

#[test]
fn cost_ceiling_tolerates_float_accumulation() {
    let chain = Chain::new(limits(1.0, 100, 5));
    for _ in 0..10 {
        succeed(&chain, 0.1);
    }
    assert_eq!(chain.enter(0.0), Err(Stop::Budget));
    assert_eq!(chain.counters().steps, 10);
}

#[test]
fn estimate_is_checked_after_every_limit() {
    let chain = Chain::new(limits(1.0, 10, 5));
    succeed(&chain, 0.5);
    assert_eq!(chain.enter(0.6), Err(Stop::Estimate));
    assert!(chain.enter(0.5).is_ok());
}

#[test]
fn retries_count_and_exhaust() {
    let chain = Chain::new(limits(1.0, 10, 2));
    for expected in 1..=2 {
        chain.enter(0.0).unwrap();
        assert_eq!(chain.leave(rec(Kind::Tool), Outcome::Retry), expected);
    }
    assert_eq!(chain.enter(0.0), Err(Stop::Retries));
    let records = chain.records(0, 10);
    assert_eq!(records.len(), 2);
    assert!(records
        .iter()
        .all(|r| r.status == Status::Error && r.retries == 1));
}

#[test]
fn abort_is_first_wins_and_keeps_reason() {
    let chain = Chain::new(limits(1.0, 10, 5));
    assert!(chain.abort("first"));
    assert!(!chain.abort("second"));
    assert_eq!(chain.counters().abort_reason.as_deref(), Some("first"));
    assert_eq!(chain.cancel_cause(), Stop::Aborted.code());
}

#[test]
fn concurrent_callers_never_overshoot_the_step_limit() {
    let chain = Arc::new(Chain::new(limits(1e9, 1000, 5)));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let chain = Arc::clone(&chain);
            thread::spawn(move || {
                let mut admitted = 0u64;
                for _ in 0..500 {
                    if chain.enter(0.0).is_ok() {
                        let mut r = rec(Kind::Llm);
                        r.cost_usd = 0.25;
                        chain.leave(r, Outcome::Success);
                        admitted += 1;
                    }
                }
                admitted
            })
        })
        .collect();
    let admitted: u64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    let c = chain.counters();
    assert_eq!(admitted, 1000);
    assert_eq!(c.steps, 1000);
    assert_eq!(c.cost_usd, 250.0);
    assert_eq!(chain.in_flight(), 0);
}

#[test]
fn records_are_capped_but_counters_are_not() {
    let chain = Chain::new(limits(1e9, u64::MAX, 5));
    for _ in 0..MAX_RECORDS + 5 {
        succeed(&chain, 0.0);
    }
    assert_eq!(chain.record_count(), MAX_RECORDS);
    assert_eq!(chain.counters().steps, (MAX_RECORDS + 5) as u64);
}
