//! `Contained`: a chain's limits fused with its call graph, so one call admits a wrap and
//! creates its node, and one call settles both. The chain keeps each finished call's record
//! (the graph may prune the node itself under `max_nodes`, docs/design.md §27).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

use super::chain::{Chain, CounterSnapshot, Limits, Reported, RetryVerdict, Stop};
use super::error::ContainmentError;
use super::nesting::{self, Owner};
use super::record::{cut_message, Record, Status};
use crate::ids::{id_string, NodeId};
use crate::recorder::graph::State;
use crate::recorder::{AggregatesView, Config, Graph, Kind, Spent, Terminal};
use crate::value::Value;
use parking_lot::MutexGuard;

/// Graph label of a call without an operation name.
pub const UNNAMED: &str = "unnamed";

/// How the graph node of a failed or stopped call ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphEnd<'a> {
    Fail(&'a str),
    Halt(&'a str),
}

/// A failed or stopped call, as the caller saw it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Failure<'a> {
    /// The estimate the call was admitted with (its reservation).
    pub cost_estimate: f64,
    /// Ask for a unit of the retry budget.
    pub retry: bool,
    /// Record status when the call does not consume a retry.
    pub status: Status,
    pub end: GraphEnd<'a>,
    /// The exception's message, cut to 1,000 code points in the record.
    pub message: Option<&'a str>,
}

/// A call refused at admission: why, and the node it was recorded as (halted with that reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub stop: Stop,
    pub node: NodeId,
}

/// How `Contained::fail` closed a call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Closed {
    /// The stop reason the retry budget imposes, if any.
    pub stop: Option<&'static str>,
    /// What the call reported before it ended, now charged to the chain (0 when nothing).
    pub charged_usd: f64,
}

pub struct Contained {
    chain: Chain,
    graph: Graph,
    root: NodeId,
    /// Tells this chain's entries apart in the per-thread nesting stack.
    key: u64,
    /// What each of its entries there carries for the embedding layer (`set_owner`).
    owner: OnceLock<Owner>,
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

fn not_open(node: NodeId) -> ContainmentError {
    ContainmentError::NotOpen(id_string(node))
}

impl Drop for Contained {
    /// A chain dropped with calls still open on this thread (never settled) leaves no entry
    /// behind; other threads' entries are skipped by their owner (`nesting::innermost_of`).
    fn drop(&mut self) {
        nesting::forget(self.key);
    }
}

impl Contained {
    /// `max_nodes` caps the chain's graph (0 = unbounded); pruning is the graph's.
    /// `root_metadata` is kept on the chain's root: its context (who and what it belongs to) and
    /// who runs it (its agent identity, docs/containment.md "Agent identity and policy views").
    pub fn new(
        limits: Limits,
        chain_id: &str,
        max_nodes: usize,
        root_metadata: Option<Value>,
    ) -> Result<Contained, ContainmentError> {
        let config = Config {
            max_nodes,
            ..Config::default()
        };
        let graph = Graph::new(chain_id, config)?;
        let root = graph.create_root("chain_root", root_metadata)?;
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        Ok(Contained {
            chain: Chain::new(limits),
            graph,
            root,
            key,
            owner: OnceLock::new(),
        })
    }

    pub fn chain(&self) -> &Chain {
        &self.chain
    }

    pub fn graph(&self) -> &Graph {
        &self.graph
    }

    pub fn root(&self) -> NodeId {
        self.root
    }

    /// Gives the chain the handle its entries in the per-thread stack of open calls carry
    /// (`nesting::innermost_of`); the first one given stays. Returns whether this one was kept.
    pub fn set_owner(&self, owner: Owner) -> bool {
        self.owner.set(owner).is_ok()
    }

    /// Whether the chain has its owner handle (`set_owner`).
    pub fn has_owner(&self) -> bool {
        self.owner.get().is_some()
    }

    /// Admits a call and creates its node (running when `dispatch`), or creates the node
    /// halted with the refusing stop reason and records the refusal.
    ///
    /// The parent is the innermost of the call of this chain open on this thread and
    /// `parent_hint` (an async caller's enclosing call), else the root. With `nest`, an
    /// admitted call becomes the parent of wraps made on this thread until it is closed.
    #[allow(clippy::too_many_arguments)]
    pub fn begin(
        &self,
        parent_hint: Option<NodeId>,
        kind: Kind,
        name: &str,
        model: Option<&str>,
        cost_estimate: f64,
        dispatch: bool,
        nest: bool,
    ) -> Result<Result<NodeId, Refusal>, ContainmentError> {
        // Both candidates are open ancestors of the caller; ids grow with creation, so the
        // larger one is the deeper (e.g. an async call inside a sync call's event loop).
        let parent = match (nesting::innermost(self.key), parent_hint) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        let admitted = self.chain.admit(cost_estimate);
        let graph_parent = parent.unwrap_or(self.root);
        let label = if name.is_empty() { UNNAMED } else { name };
        let running = admitted.is_ok() && dispatch;
        let made = self
            .graph
            .begin_node(graph_parent, kind, label, model, None, running, false);
        let node = match made {
            Ok((node, _)) => node,
            Err(e) => {
                if admitted.is_ok() {
                    // Give back the reservation of a call that never got a node.
                    self.chain.release(cost_estimate);
                }
                return Err(e.into());
            }
        };
        match admitted {
            Ok(()) => {
                if nest {
                    nesting::push(self.key, node, self.owner.get().cloned());
                }
                Ok(Ok(node))
            }
            Err(stop) => {
                self.graph.mark_halt(node, Some(stop.reason()), false)?;
                // The record says why with the chain's figures, as the refusal itself does.
                let estimate = (stop == Stop::Estimate).then_some(cost_estimate);
                let why = self.chain.describe(stop.reason(), estimate);
                self.keep_record(
                    self.graph.lock(),
                    node,
                    !name.is_empty(),
                    stop.status(),
                    Some(&why),
                );
                Ok(Err(Refusal { stop, node }))
            }
        }
    }

    /// Keeps the record of a finished call, copied from its node under `st` (the settle's own
    /// graph lock, released before the chain takes the record).
    fn keep_record(
        &self,
        st: MutexGuard<'_, State>,
        node: NodeId,
        named: bool,
        status: Status,
        message: Option<&str>,
    ) {
        let record = self.record_of(&st, node, named, status, message);
        drop(st);
        if let Some(record) = record {
            self.chain.push_record(record);
        }
    }

    /// A finished call's record, read under the caller's graph lock (none when the chain keeps
    /// no more records or the graph no longer has the node).
    fn record_of(
        &self,
        st: &State,
        node: NodeId,
        named: bool,
        status: Status,
        message: Option<&str>,
    ) -> Option<Record> {
        if self.chain.records_full() {
            return None;
        }
        let n = st.arena.get(node)?;
        let text = |sym: Option<_>| sym.map(|s| Box::from(st.names.resolve(s)));
        Some(Record {
            node,
            parent: n.parent_id().filter(|&p| p != self.root),
            kind: n.kind,
            name: if named {
                st.names.resolve(n.name).to_owned()
            } else {
                String::new()
            },
            start_ms: n.start_ms,
            end_ms: n.end_ms(),
            status,
            cost_usd: n.cost_usd,
            retries: n.retries,
            error_message: message.map(cut_message),
            tokens_in: n.tokens_in(),
            tokens_out: n.tokens_out(),
            model: text(n.model()),
            error_class: text(n.error_class()),
            stop_reason: st.arena.stop_reason(n).map(Box::from),
        })
    }

    /// `created → running` for a call admitted without `dispatch` once its gates passed.
    /// Sets `metadata[key] = true` on the call's node (open or settled, unless pruned).
    pub fn flag(&self, node: NodeId, key: &str) -> Result<(), ContainmentError> {
        self.graph
            .set_metadata_key(node, key, crate::value::Value::Bool(true))?;
        Ok(())
    }

    pub fn dispatch(&self, node: NodeId) -> Result<(), ContainmentError> {
        self.graph.mark_running(node, false)?;
        Ok(())
    }

    /// Adds usage an open call reports about itself (docs/design.md §20). Validated first;
    /// nothing changes on error.
    pub fn report(
        &self,
        node: NodeId,
        cost_usd: f64,
        tokens_in: Option<i64>,
        tokens_out: Option<i64>,
    ) -> Result<(), ContainmentError> {
        let cost_usd = crate::recorder::error::non_negative_finite("cost_usd", cost_usd)?;
        let tokens_in = crate::recorder::error::non_negative_int("tokens_in", tokens_in)?;
        let tokens_out = crate::recorder::error::non_negative_int("tokens_out", tokens_out)?;
        if !self.is_open(node) {
            return Err(not_open(node));
        }
        self.chain.report(
            node,
            Reported {
                cost_usd,
                tokens_in,
                tokens_out,
            },
        )
    }

    /// Removes and returns what an open call reported so far.
    pub fn take_report(&self, node: NodeId) -> Option<Reported> {
        self.chain.take_report(node)
    }

    /// Settles a completed call (docs/design.md §20): its cost is `actual` when given, else
    /// what it reported, else `cost_estimate`; its reservation is released. Returns the cost
    /// charged. On a cost that would overflow the chain's total the call is closed as an
    /// error without a step or a cost, and the error is returned.
    pub fn succeed(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
        actual: Option<Reported>,
    ) -> Result<f64, ContainmentError> {
        // One graph lock for the whole settle: the open check, the node's end and its record
        // (docs/recorder.md "Nodes and lifecycle").
        let mut st = self.graph.lock();
        if !self.open_in(&st, node) {
            return Err(not_open(node));
        }
        if let Some(a) = actual {
            crate::recorder::error::non_negative_finite("cost_usd", a.cost_usd)?;
        }
        let to_i64 = |t: Option<u64>| t.map(|v| i64::try_from(v).unwrap_or(i64::MAX));
        let settled = match self.chain.settle_success(node, cost_estimate, actual) {
            Ok(settled) => settled,
            Err(e) => {
                drop(st);
                self.close_failed(node, named, cost_estimate, "OverflowError")?;
                return Err(e);
            }
        };
        let marked = Terminal::success(
            settled.cost_usd,
            to_i64(settled.tokens_in),
            to_i64(settled.tokens_out),
        )
        .and_then(|t| self.graph.finish_locked(&mut st, node, &t, false));
        nesting::pop(self.key, node);
        marked?;
        self.keep_record(st, node, named, Status::Ok, None);
        Ok(settled.cost_usd)
    }

    fn close_failed(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
        class: &str,
    ) -> Result<(), ContainmentError> {
        let failure = Failure {
            cost_estimate,
            retry: false,
            status: Status::Error,
            end: GraphEnd::Fail(class),
            message: None,
        };
        self.fail(node, named, failure).map(|_| ())
    }

    /// Closes a call that failed or was stopped, charging what it reported before it ended
    /// (docs/design.md §30). With `retry`, one unit of the retry budget is consumed atomically
    /// with the check (docs/design.md §34): `stop` is `Some("provider_error")` when no unit was
    /// left (this failure stops the chain), `Some("retry_budget_exceeded")` when the chain was
    /// already stopped that way, `None` otherwise.
    pub fn fail(
        &self,
        node: NodeId,
        named: bool,
        failure: Failure<'_>,
    ) -> Result<Closed, ContainmentError> {
        // One graph lock for the whole settle, as `succeed`.
        let mut st = self.graph.lock();
        if !self.open_in(&st, node) {
            return Err(not_open(node));
        }
        nesting::pop(self.key, node);
        let (verdict, charged) =
            self.chain
                .settle_failure(node, failure.cost_estimate, failure.retry);
        let (stop, status) = match (failure.retry, verdict) {
            (false, _) => (None, failure.status),
            (true, RetryVerdict::Granted) => (None, Status::Error),
            (true, RetryVerdict::Drained) => (Some("provider_error"), Status::Error),
            (true, RetryVerdict::Exhausted) => (Some("retry_budget_exceeded"), Status::Halted),
        };
        let spent = charged.map_or(Spent::NONE, |r| Spent {
            cost_usd: r.cost_usd,
            tokens_in: r.tokens_in,
            tokens_out: r.tokens_out,
        });
        if verdict == RetryVerdict::Granted && failure.retry {
            self.graph.increment_retries_locked(&mut st, node)?;
        }
        let ending = match (stop, failure.end) {
            (Some(reason), GraphEnd::Fail(class)) => {
                Terminal::halt(Some(reason), Some(class), spent)
            }
            (Some(reason), _) | (None, GraphEnd::Halt(reason)) => {
                Terminal::halt(Some(reason), None, spent)
            }
            (None, GraphEnd::Fail(class)) => Terminal::failure(class, None, spent),
        };
        self.graph.finish_locked(&mut st, node, &ending, false)?;
        self.keep_record(st, node, named, status, failure.message);
        Ok(Closed {
            stop,
            charged_usd: spent.cost_usd,
        })
    }

    /// Ends the chain's root node when the chain is closed: `halt` with the chain's first stop
    /// reason, `fail` with the class of an exception that left the chain's block, else
    /// `success` (at no cost: the calls below it carry the chain's cost). A closed root stays as
    /// it is.
    pub fn close_root(
        &self,
        stop_reason: Option<&str>,
        error_class: Option<&str>,
    ) -> Result<(), ContainmentError> {
        let root = self.root;
        match (stop_reason, error_class) {
            (Some(reason), _) => self.graph.mark_halt(root, Some(reason), false),
            (None, Some(class)) => self.graph.mark_failure(root, class, None, false),
            (None, None) => self.graph.mark_success(root, 0.0, None, None, false),
        }?;
        Ok(())
    }

    /// Adds keys to a call's node metadata (captured content); open or finished, while the
    /// graph still holds it.
    pub fn annotate(&self, node: NodeId, metadata: Value) -> Result<(), ContainmentError> {
        self.graph.annotate(node, metadata)?;
        Ok(())
    }

    pub fn is_open(&self, node: NodeId) -> bool {
        self.open_in(&self.graph.lock(), node)
    }

    /// `is_open` under the caller's graph lock.
    fn open_in(&self, st: &State, node: NodeId) -> bool {
        node != self.root && st.arena.get(node).is_some_and(|n| !n.status.is_terminal())
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.chain.counters()
    }

    pub fn aggregates(&self) -> AggregatesView {
        self.graph.aggregates()
    }

    /// Finished calls `start..stop` in completion order.
    pub fn records(&self, start: usize, stop: usize) -> Vec<Record> {
        self.chain.records(start, stop)
    }
}
