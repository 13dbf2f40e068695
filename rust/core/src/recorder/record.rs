//! Recording calls that already finished (docs/recorder.md "Recording finished calls"): each
//! node is created, dispatched and ended under one lock, left exactly as `begin_node(running=True)`
//! then `mark_success` / `mark_failure` / `mark_halt` would leave it, with the caller's times.
//! A batch is checked whole before anything changes, so a bad row changes nothing.

use rustc_hash::FxHashSet;

use super::aggregates::{cost_total, tokens_out_total};
use super::error::{finite_metadata, non_negative_finite, non_negative_int, RecorderError};
use super::events::{Finished, Started};
use super::graph::{now_ms, Graph, Placed, State, Terminal};
use super::kind::{Kind, Status};
use crate::ids::{id_string, NodeId};
use crate::value::Value;

/// One finished call, as the caller describes it.
#[derive(Clone, Debug, PartialEq)]
pub struct FinishedCall<'a> {
    pub parent: NodeId,
    pub kind: Kind,
    pub name: &'a str,
    pub model: Option<&'a str>,
    /// `success`, `fail` or `halt`.
    pub status: Status,
    /// What the call cost; a failed or halted call keeps it on its node (docs/design.md §30)
    /// and only a success adds it to the totals (as `mark_*` do).
    pub cost_usd: f64,
    pub tokens_in: Option<i64>,
    pub tokens_out: Option<i64>,
    /// Epoch milliseconds; the start defaults to the end, the end to now.
    pub started_ms: Option<i64>,
    pub ended_ms: Option<i64>,
    /// Required for `fail`, allowed for `halt`, refused for `success`.
    pub error_class: Option<&'a str>,
    /// Allowed for `fail` and `halt` (whose default is `"halt"`, as `mark_halt`'s).
    pub stop_reason: Option<&'a str>,
    pub metadata: Option<Value>,
}

/// A recorded call: its id, and what the hooks need (as `begin_node` / `mark_*` return them).
#[derive(Debug)]
pub struct Recorded {
    pub id: NodeId,
    pub started: Option<Box<Started>>,
    pub finished: Finished,
}

/// A call whose fields were checked: its terminal transition and its times.
struct Checked<'a> {
    terminal: Terminal<'a>,
    start: i64,
    end: i64,
}

fn invalid(field: &'static str, reason: String) -> RecorderError {
    RecorderError::InvalidArgument { field, reason }
}

fn millis(field: &'static str, v: Option<i64>) -> Result<Option<i64>, RecorderError> {
    match v {
        Some(ms) if ms < 0 => Err(RecorderError::InvalidNumber {
            field,
            reason: format!("must be epoch milliseconds >= 0; got {ms}"),
        }),
        _ => Ok(v),
    }
}

impl<'a> FinishedCall<'a> {
    /// Every check that does not need the graph, in argument order.
    fn check(&self, now: i64) -> Result<Checked<'a>, RecorderError> {
        let cost_usd = non_negative_finite("cost_usd", self.cost_usd)?;
        let tokens_in = non_negative_int("tokens_in", self.tokens_in)?;
        let tokens_out = non_negative_int("tokens_out", self.tokens_out)?;
        if !self.status.is_terminal() {
            return Err(invalid(
                "status",
                format!(
                    "must be 'success', 'fail' or 'halt' (a recorded call has finished); got {:?}",
                    self.status.as_str()
                ),
            ));
        }
        let started = millis("started_at", self.started_ms)?;
        let ended = millis("ended_at", self.ended_ms)?;
        let end = ended.unwrap_or_else(|| now.max(started.unwrap_or(0)));
        let start = started.unwrap_or(end);
        if end < start {
            return Err(invalid(
                "ended_at",
                format!("must be >= started_at; got ended_at={end} < started_at={start}"),
            ));
        }
        let (error_class, stop_reason) = match self.status {
            Status::Success => {
                if self.error_class.is_some() {
                    return Err(invalid(
                        "error_class",
                        "must be None when status is 'success'".into(),
                    ));
                }
                if self.stop_reason.is_some() {
                    return Err(invalid(
                        "stop_reason",
                        "must be None when status is 'success'".into(),
                    ));
                }
                (None, None)
            }
            Status::Fail => match self.error_class {
                Some(class) => (Some(class), self.stop_reason),
                None => {
                    return Err(invalid(
                        "error_class",
                        "is required when status is 'fail' (the class of the failure)".into(),
                    ))
                }
            },
            // As `mark_halt`: an empty reason is as good as none.
            _ => (
                self.error_class,
                Some(self.stop_reason.filter(|r| !r.is_empty()).unwrap_or("halt")),
            ),
        };
        finite_metadata(self.metadata.as_ref())?;
        Ok(Checked {
            terminal: Terminal {
                status: self.status,
                cost_usd,
                tokens_in,
                tokens_out,
                error_class,
                stop_reason,
            },
            start,
            end,
        })
    }
}

fn parent_depth(st: &State, parent: NodeId) -> Result<u32, RecorderError> {
    st.arena
        .get(parent)
        .map(|n| n.depth)
        .ok_or_else(|| RecorderError::ParentNotFound(id_string(parent)))
}

/// What `record_calls` recorded: the rows got the consecutive ids `first..first + len`, and
/// `hooked` holds each row's hook data, in row order, when the caller asked for it.
#[derive(Debug)]
pub struct Batch {
    pub first: NodeId,
    pub len: usize,
    pub hooked: Vec<Recorded>,
}

impl Graph {
    /// The totals after a call ends with `t`, or the error that refuses it before anything
    /// changes (docs/design.md §23).
    pub(super) fn totals_after(
        &self,
        t: &Terminal<'_>,
    ) -> Result<Option<(f64, Option<u64>)>, RecorderError> {
        if t.status != Status::Success {
            return Ok(None);
        }
        let cost = self.agg().cost_after(t.cost_usd)?;
        let tokens = t
            .tokens_out
            .map(|n| self.agg().tokens_out_after(n))
            .transpose()?;
        Ok(Some((cost, tokens)))
    }

    /// Records one finished call in one step; the graph is unchanged on error. The call is
    /// borrowed (it is large, and the bindings build it in place); its metadata moves out.
    pub fn record_call(
        &self,
        call: &mut FinishedCall<'_>,
        want_start: bool,
        want_event: bool,
    ) -> Result<Recorded, RecorderError> {
        let checked = call.check(now_ms())?;
        let mut st = self.lock();
        let depth = parent_depth(&st, call.parent)?;
        let totals = self.totals_after(&checked.terminal)?;
        let parent = call.parent;
        let keep = |id: NodeId| id == parent;
        Ok(self.apply(
            &mut st, call, depth, &checked, totals, keep, want_start, want_event,
        ))
    }

    /// Records a batch of finished calls under one lock, in order. Every row is checked (its
    /// fields, its parent, the totals it brings) before the first is recorded: a bad row is an
    /// error naming its index and changes nothing. Parents must exist before the batch; none
    /// of them is evicted by `max_nodes` while the batch is recorded. Nothing is kept per row
    /// between the two passes but the parent's depth: a batch of log lines should cost little
    /// more memory than its rows.
    pub fn record_calls(
        &self,
        calls: &mut [FinishedCall<'_>],
        want_start: bool,
        want_event: bool,
    ) -> Result<Batch, RecorderError> {
        let now = now_ms();
        let mut st = self.lock();
        let view = self.agg().view();
        let (mut cost, mut tokens) = (view.total_cost_usd, view.total_tokens_out);
        let mut depths = Vec::with_capacity(calls.len());
        for (i, call) in calls.iter().enumerate() {
            let c = call.check(now).map_err(|e| e.in_row(i))?;
            depths.push(parent_depth(&st, call.parent).map_err(|e| e.in_row(i))?);
            if c.terminal.status == Status::Success {
                cost = cost_total(cost, c.terminal.cost_usd).map_err(|e| e.in_row(i))?;
                if let Some(n) = c.terminal.tokens_out {
                    tokens = tokens_out_total(tokens, n).map_err(|e| e.in_row(i))?;
                }
            }
        }
        let parents: FxHashSet<NodeId> = if self.config().max_nodes > 0 {
            calls.iter().map(|c| c.parent).collect()
        } else {
            FxHashSet::default()
        };
        let keep = |id: NodeId| parents.contains(&id);
        let hooks = want_start || want_event;
        let mut hooked = Vec::with_capacity(if hooks { calls.len() } else { 0 });
        let first = st.counter + 1;
        for (i, (call, depth)) in calls.iter_mut().zip(depths).enumerate() {
            // The same checks as above on an unchanged graph (the totals advance exactly as
            // they were summed there): they pass.
            let c = call.check(now).map_err(|e| e.in_row(i))?;
            let totals = self.totals_after(&c.terminal).map_err(|e| e.in_row(i))?;
            let r = self.apply(
                &mut st, call, depth, &c, totals, keep, want_start, want_event,
            );
            if hooks {
                hooked.push(r);
            }
        }
        Ok(Batch {
            first,
            len: calls.len(),
            hooked,
        })
    }

    /// Creates, dispatches and ends one checked call: `begin_node(running=True)` and the
    /// terminal `mark_*`, run back to back under the caller's lock. The metadata moves out.
    #[allow(clippy::too_many_arguments)]
    fn apply(
        &self,
        st: &mut State,
        call: &mut FinishedCall<'_>,
        depth: u32,
        checked: &Checked<'_>,
        totals: Option<(f64, Option<u64>)>,
        keep: impl Fn(NodeId) -> bool,
        want_start: bool,
        want_event: bool,
    ) -> Recorded {
        self.make_room(st, keep);
        let depth = depth.saturating_add(1);
        let name = st.names.intern(call.name);
        let model = call.model.map(|m| st.names.intern(m));
        let at = Placed {
            parent: call.parent,
            depth,
            start_ms: checked.start,
        };
        let metadata = call.metadata.take();
        // The node is placed already ended (the dispatch below reads only its kind and name,
        // `started` its name and metadata): the same fields `settle` writes, without looking
        // up again the node just placed.
        let mut ended = None;
        let id = self.insert_with(st, at, call.kind, name, model, metadata, |node, names| {
            ended = Some(Self::end_node(names, node, &checked.terminal, checked.end));
        });
        let ended = ended.expect("insert_with shapes the node it places");
        self.agg().raise_max_depth(depth);
        st.dispatch(call.kind, name);
        self.agg()
            .set_divergence_emitted(st.divergence.emitted_count());
        let started = want_start.then(|| Self::started(st, id));
        let finished = self.settled(st, id, ended, &checked.terminal, totals, want_event);
        Recorded {
            id,
            started,
            finished,
        }
    }
}
