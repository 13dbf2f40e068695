//! `Chain` on its own: the counters and limits below `Contained`. These tests kill the mutants of
//! `chain.rs` that only the Python suite used to notice (docs/testing.md, "Mutation testing").

use std::thread;
use std::time::{Duration, Instant};

use super::*;
use crate::recorder::Kind;

fn chain(max_cost_usd: f64, timeout_ms: u64) -> Chain {
    Chain::new(Limits {
        max_cost_usd,
        max_steps: 100,
        max_retries_total: 10,
        timeout_ms,
    })
}

fn record(node: u64) -> Record {
    Record {
        node,
        parent: None,
        kind: Kind::Llm,
        name: "op".into(),
        start_ms: 0,
        end_ms: None,
        status: Status::Ok,
        cost_usd: 0.0,
        retries: 0,
        error_message: None,
        tokens_in: None,
        tokens_out: None,
        model: None,
        error_class: None,
        stop_reason: None,
    }
}

#[test]
fn a_far_timeout_admits_and_a_passed_one_refuses() {
    // The clock is compared in milliseconds. After a millisecond of a one-second timeout, nanoseconds
    // times a million, or modulo a million (about 60,000 here), would already have passed the limit.
    let far = chain(1.0, 1_000);
    thread::sleep(Duration::from_millis(1));
    assert_eq!(far.admit(0.0), Ok(()));
    let near = chain(1.0, 1);
    thread::sleep(Duration::from_millis(3));
    assert_eq!(near.admit(0.0), Err(Stop::Timeout));
}

#[test]
fn an_estimate_that_reaches_the_ceiling_exactly_is_admitted() {
    // docs/design.md §20: admitted while spent + reserved + estimate <= max (with the float tolerance).
    let c = chain(1.0, 0);
    assert_eq!(c.admit(1.0 + BUDGET_EPSILON), Ok(()));
    assert_eq!(c.reserved_usd(), 1.0 + BUDGET_EPSILON);
    let d = chain(1.0, 0);
    assert_eq!(d.admit(1.0 + 3.0 * BUDGET_EPSILON), Err(Stop::Estimate));
    assert_eq!(d.reserved_usd(), 0.0);
}

#[test]
fn a_released_reservation_is_given_back() {
    let c = chain(1.0, 0);
    assert_eq!(c.admit(0.75), Ok(()));
    assert_eq!((c.in_flight(), c.reserved_usd()), (1, 0.75));
    assert_eq!(c.admit(0.5), Err(Stop::Estimate));
    c.release(0.75);
    assert_eq!((c.in_flight(), c.reserved_usd()), (0, 0.0));
    assert_eq!(c.admit(0.5), Ok(()));
}

#[test]
fn records_stop_at_the_cap_and_say_so() {
    let c = chain(1.0, 0);
    for node in 0..(MAX_RECORDS as u64 - 1) {
        c.push_record(record(node));
    }
    assert!(!c.records_full());
    c.push_record(record(MAX_RECORDS as u64 - 1));
    assert!(c.records_full());
    for node in 0..5 {
        c.push_record(record(MAX_RECORDS as u64 + node));
    }
    assert_eq!(c.counters().records, MAX_RECORDS);
    assert_eq!(
        c.records(MAX_RECORDS - 1, usize::MAX)[0].node,
        MAX_RECORDS as u64 - 1
    );
}

#[test]
fn abort_is_seen_and_happens_once() {
    let c = chain(1.0, 0);
    assert!(!c.is_aborted());
    assert!(c.abort("stop"));
    assert!(c.is_aborted());
    assert!(!c.abort("again"));
    assert_eq!(c.counters().abort_reason.as_deref(), Some("stop"));
    assert_eq!(c.admit(0.0), Err(Stop::Aborted));
}

#[test]
fn child_costs_add_up_and_cross_the_ceiling_once() {
    let c = chain(1.0, 0);
    assert_eq!(c.add_cost(0.0).unwrap(), (0.0, false)); // zero is a valid cost
    assert_eq!(c.add_cost(0.25).unwrap(), (0.25, false));
    assert_eq!(c.add_cost(0.5).unwrap(), (0.75, false));
    // Within the float tolerance of the ceiling counts as reaching it.
    let (total, crossed) = c.add_cost(0.25 - BUDGET_EPSILON / 2.0).unwrap();
    assert!(crossed && (total - (1.0 - BUDGET_EPSILON / 2.0)).abs() < 1e-15);
    // Only the call that pushed the chain over reports the crossing.
    assert!(!c.add_cost(0.5).unwrap().1);
    assert!(c.add_cost(-0.1).is_err());
    assert!(c.add_cost(f64::INFINITY).is_err() && c.add_cost(f64::NAN).is_err());
    assert!((c.counters().cost_usd - 1.5).abs() < BUDGET_EPSILON); // refusals change nothing
    assert_eq!(c.admit(0.0), Err(Stop::Budget));
}

#[test]
fn elapsed_time_is_in_milliseconds() {
    let outer = Instant::now();
    let c = chain(1.0, 0);
    thread::sleep(Duration::from_millis(5));
    let elapsed = c.counters().elapsed_ms;
    assert!(elapsed >= 5.0, "{elapsed}");
    assert!(
        elapsed <= outer.elapsed().as_secs_f64() * 1000.0,
        "{elapsed}"
    );
}

#[test]
fn a_stop_is_described_with_the_chain_figures_for_its_limit() {
    let c = chain(1.0, 0);
    assert_eq!(c.admit(0.25), Ok(()));
    assert_eq!(
        c.describe("budget_exceeded", Some(0.8)),
        "spent $0.0000 + $0.2500 reserved by calls in flight + this call's estimate $0.8000 would \
         pass the $1.0000 ceiling"
    );
    assert_eq!(
        c.describe("budget_exceeded", None),
        "spent $0.0000 ($0.2500 reserved by calls in flight) of the $1.0000 ceiling"
    );
    assert_eq!(
        c.describe("step_limit_exceeded", None),
        "0 steps (+1 in flight) of the limit of 100"
    );
    assert_eq!(
        c.describe("provider_error", None),
        "0 of 10 retries used, and a failure found none left"
    );
    assert_eq!(
        c.describe("timeout", None),
        "the call's own timeout_ms ran out"
    );
    assert!(c.abort("user pressed stop"));
    assert_eq!(c.describe("aborted", None), "aborted: user pressed stop");
    assert!(c
        .describe("circuit_open", None)
        .starts_with("spent $0.0000 of $1.0000, 0 of 100 steps"));
}
