//! `Contained`: a chain's limits fused with its call graph, so one call admits a wrap and
//! creates its node, and one call closes both. The graph node is the record of the call;
//! the chain only keeps the completion order and the outcome.

use std::sync::atomic::{AtomicU64, Ordering};

use super::chain::{Chain, CounterSnapshot, Done, Limits, Outcome, Stop};
use super::nesting;
use super::record::{Record, Status};
use crate::recorder::events::Finished;
use crate::recorder::ids::{format_id, NodeId};
use crate::recorder::{AggregatesView, Config, Graph, Kind, RecorderError};

/// Graph label of a call without an operation name.
pub const UNNAMED: &str = "unnamed";

/// How the graph node of a failed or stopped call ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphEnd<'a> {
    Fail(&'a str),
    Halt(&'a str),
}

pub struct Contained {
    chain: Chain,
    graph: Graph,
    root: NodeId,
    /// Tells this chain's entries apart in the per-thread nesting stack.
    key: u64,
}

static NEXT_KEY: AtomicU64 = AtomicU64::new(1);

fn with_id<T>(node: NodeId, f: impl FnOnce(&str) -> T) -> T {
    f(format_id(node, &mut [0; 24]))
}

fn not_open(node: NodeId) -> RecorderError {
    RecorderError::NodeNotFound(with_id(node, str::to_owned))
}

impl Contained {
    pub fn new(limits: Limits, chain_id: &str) -> Result<Contained, RecorderError> {
        let graph = Graph::new(chain_id, Config::default())?;
        let root = graph.create_root("chain_root", None)?;
        let key = NEXT_KEY.fetch_add(1, Ordering::Relaxed);
        Ok(Contained {
            chain: Chain::new(limits),
            graph,
            root,
            key,
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
    ) -> Result<Result<NodeId, Stop>, RecorderError> {
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
        let made = with_id(graph_parent, |p| {
            self.graph
                .begin_node(p, kind, label, model, None, running, false)
        });
        let node = match made {
            Ok((node, _)) => node,
            Err(e) => {
                if admitted.is_ok() {
                    // Give back the reservation of a call that never got a node.
                    self.chain.release(cost_estimate);
                }
                return Err(e);
            }
        };
        match admitted {
            Ok(()) => {
                if nest {
                    nesting::push(self.key, node);
                }
                Ok(Ok(node))
            }
            Err(stop) => {
                with_id(node, |id| {
                    self.graph.mark_halt(id, Some(stop.reason()), false)
                })?;
                let named = !name.is_empty();
                self.chain.record_refusal(Done {
                    node,
                    status: stop.status(),
                    named,
                });
                Ok(Err(stop))
            }
        }
    }

    /// `created → running` for a call admitted without `dispatch` once its gates passed.
    pub fn dispatch(&self, node: NodeId) -> Result<(), RecorderError> {
        with_id(node, |id| self.graph.mark_running(id, false)).map(|_| ())
    }

    fn check_open(&self, node: NodeId, finished: &Finished) -> Result<(), RecorderError> {
        if finished.applied {
            Ok(())
        } else {
            Err(not_open(node))
        }
    }

    /// Closes a completed call; its cost is the estimate it was admitted with.
    pub fn succeed(&self, node: NodeId, named: bool, cost_usd: f64) -> Result<(), RecorderError> {
        if node == self.root {
            return Err(not_open(node));
        }
        let finished = with_id(node, |id| {
            self.graph.mark_success(id, cost_usd, None, None, false)
        })?;
        self.check_open(node, &finished)?;
        nesting::pop(self.key, node);
        self.chain
            .leave(node, named, cost_usd, Outcome::Success(cost_usd));
        Ok(())
    }

    /// Closes a call that failed or was stopped (`cost_estimate`: the estimate it was admitted
    /// with). With `retry`, one unit of the retry budget is
    /// consumed; if that drains it, the node halts with `provider_error` whatever `end` says.
    /// Returns the chain's retries used afterwards.
    pub fn fail(
        &self,
        node: NodeId,
        named: bool,
        cost_estimate: f64,
        retry: bool,
        status: Status,
        end: GraphEnd<'_>,
    ) -> Result<u64, RecorderError> {
        if !self.is_open(node) {
            return Err(not_open(node));
        }
        nesting::pop(self.key, node);
        let outcome = if retry {
            Outcome::Retry
        } else {
            Outcome::Stopped(status)
        };
        let retries = self.chain.leave(node, named, cost_estimate, outcome);
        let drained = retry && retries >= self.chain.limits().max_retries_total;
        with_id(node, |id| {
            if retry {
                self.graph.increment_retries(id)?;
            }
            match (drained, end) {
                (true, _) => self.graph.mark_halt(id, Some("provider_error"), false),
                (false, GraphEnd::Halt(reason)) => self.graph.mark_halt(id, Some(reason), false),
                (false, GraphEnd::Fail(class)) => self.graph.mark_failure(id, class, None, false),
            }
        })?;
        Ok(retries)
    }

    fn is_open(&self, node: NodeId) -> bool {
        node != self.root
            && self
                .graph
                .lock()
                .arena
                .get(node)
                .is_some_and(|n| !n.status.is_terminal())
    }

    pub fn counters(&self) -> CounterSnapshot {
        self.chain.counters()
    }

    pub fn aggregates(&self) -> AggregatesView {
        self.graph.aggregates()
    }

    /// Finished calls `start..stop` in completion order, joined with their graph nodes.
    pub fn records(&self, start: usize, stop: usize) -> Vec<Record> {
        let done = self.chain.done(start, stop);
        let st = self.graph.lock();
        done.into_iter()
            .filter_map(|d| {
                let n = st.arena.get(d.node)?;
                let name = if d.named {
                    st.names.resolve(n.name).to_owned()
                } else {
                    String::new()
                };
                Some(Record {
                    node: d.node,
                    parent: n.parent_id().filter(|&p| p != self.root),
                    kind: n.kind,
                    name,
                    start_ms: n.start_ms,
                    end_ms: n.end_ms(),
                    status: d.status,
                    cost_usd: n.cost_usd,
                    retries: n.retries,
                })
            })
            .collect()
    }
}
