//! The call graph of one agent chain: arena, lifecycle, aggregates, divergence and pruning
//! behind one lock, with aggregates mirrored into atomics for lock-free reads.

use parking_lot::{Mutex, MutexGuard};

use super::aggregates::{Aggregates, AggregatesView};
use super::arena::Arena;
use super::divergence::{Divergence, DivergenceEvent};
use super::error::{
    finite_metadata, non_negative_finite, non_negative_int, positive_finite, RecorderError,
};
use super::events::{Finished, NodeEvent, Started};
use super::evictable::Evictable;
use super::intern::{Interner, Sym};
use super::kind::{Kind, Status};
use super::node::Node;
use super::node_ref::NodeRef;
use crate::ids::{id_string, NodeId};
use crate::value::Value;

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub cost_rate_threshold_usd_per_sec: f64,
    pub token_velocity_threshold: f64,
    /// 0 = unlimited.
    pub max_nodes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cost_rate_threshold_usd_per_sec: 0.10,
            token_velocity_threshold: 500.0,
            max_nodes: 0,
        }
    }
}

pub struct State {
    pub arena: Arena,
    pub names: Interner,
    pub root: Option<NodeId>,
    pub(super) counter: NodeId,
    /// Terminal non-root nodes, oldest first; kept only when pruning is on.
    pub(super) evictable: Evictable,
    pub divergence: Divergence,
}

impl State {
    pub(super) fn new() -> State {
        State {
            arena: Arena::default(),
            names: Interner::default(),
            root: None,
            counter: 0,
            evictable: Evictable::default(),
            divergence: Divergence::default(),
        }
    }

    /// Records a dispatch for divergence detection, keeping the interner's count of the
    /// symbols the detector holds (window slots, reported signatures) exact.
    pub(super) fn dispatch(&mut self, kind: Kind, name: Sym) {
        let refs = self.divergence.observe_dispatch(kind, name);
        // A loop repeating one label swaps a slot for the same symbol: no count changes.
        if refs.left_window != Some(name) {
            self.names.retain(name);
            if let Some(s) = refs.left_window {
                self.names.release(s);
            }
        }
        if let Some(s) = refs.reported {
            self.names.retain(s);
        }
    }

    /// Evicts a node and frees what only it referenced (docs/design.md §27).
    fn evict(&mut self, id: NodeId) -> bool {
        let Some(n) = self.arena.prune(id) else {
            return false;
        };
        for sym in [Some(n.name), n.model(), n.error_class()]
            .into_iter()
            .flatten()
        {
            self.names.release(sym);
        }
        true
    }
}

/// Runs a blocking wait. Embedders with a global interpreter lock pass a function that
/// releases it around the call, so a thread waiting for the graph never stalls the thread
/// that holds it. The wait only blocks until the lock is free (it returns no guard), so it is
/// `Sync` and can run on whatever the embedder's release mechanism requires.
pub type BlockingSection = fn(&(dyn Fn() + Sync));

fn run_inline(f: &(dyn Fn() + Sync)) {
    f();
}

pub struct Graph {
    chain_id: Box<str>,
    config: Config,
    state: Mutex<State>,
    agg: Aggregates,
    blocking: BlockingSection,
}

pub use crate::clock::now_ms;

/// The parts of a terminal transition that differ between success, fail and halt.
/// What a call that did not succeed was charged before it ended (docs/design.md §30).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    pub cost_usd: f64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
}

impl Spent {
    pub const NONE: Spent = Spent {
        cost_usd: 0.0,
        tokens_in: None,
        tokens_out: None,
    };
}

/// How an open node ends: its terminal status and what goes on it.
pub struct Terminal<'a> {
    pub status: Status,
    pub cost_usd: f64,
    pub tokens_in: Option<u64>,
    pub tokens_out: Option<u64>,
    pub error_class: Option<&'a str>,
    pub stop_reason: Option<&'a str>,
}

impl<'a> Terminal<'a> {
    /// `mark_success`'s ending, its numbers checked.
    pub fn success(
        cost_usd: f64,
        tokens_in: Option<i64>,
        tokens_out: Option<i64>,
    ) -> Result<Terminal<'static>, RecorderError> {
        Ok(Terminal {
            status: Status::Success,
            cost_usd: non_negative_finite("cost_usd", cost_usd)?,
            tokens_in: non_negative_int("tokens_in", tokens_in)?,
            tokens_out: non_negative_int("tokens_out", tokens_out)?,
            error_class: None,
            stop_reason: None,
        })
    }

    /// `mark_failure`'s ending, keeping what the call was charged (docs/design.md §30).
    pub fn failure(error_class: &'a str, stop_reason: Option<&'a str>, spent: Spent) -> Self {
        Terminal {
            status: Status::Fail,
            cost_usd: spent.cost_usd,
            tokens_in: spent.tokens_in,
            tokens_out: spent.tokens_out,
            error_class: Some(error_class),
            stop_reason,
        }
    }

    /// `mark_halt`'s ending, keeping what the call was charged (docs/design.md §30).
    pub fn halt(stop_reason: Option<&'a str>, error_class: Option<&'a str>, spent: Spent) -> Self {
        // An empty reason is as good as none: the node still says why it stopped.
        let reason = stop_reason.filter(|r| !r.is_empty()).unwrap_or("halt");
        Terminal {
            status: Status::Halt,
            cost_usd: spent.cost_usd,
            tokens_in: spent.tokens_in,
            tokens_out: spent.tokens_out,
            error_class,
            stop_reason: Some(reason),
        }
    }
}

/// What the rest of a terminal transition needs from the node [`Graph::end_node`] ended.
pub(super) struct Ended {
    kind: Kind,
    retries: u32,
    duration_ms: i64,
}

/// Where a new node goes: under `parent` (0 for the root) at `depth`, started at `start_ms`.
pub(super) struct Placed {
    pub parent: NodeId,
    pub depth: u32,
    pub start_ms: i64,
}

impl Graph {
    pub fn new(chain_id: impl Into<Box<str>>, config: Config) -> Result<Graph, RecorderError> {
        positive_finite(
            "cost_rate_threshold_usd_per_sec",
            config.cost_rate_threshold_usd_per_sec,
        )?;
        positive_finite("token_velocity_threshold", config.token_velocity_threshold)?;
        Ok(Graph {
            chain_id: chain_id.into(),
            config,
            state: Mutex::new(State::new()),
            agg: Aggregates::default(),
            blocking: run_inline,
        })
    }

    /// A graph capped at `max_nodes` (0 = unlimited) with the default thresholds.
    pub fn with_max_nodes(
        chain_id: impl Into<Box<str>>,
        max_nodes: usize,
    ) -> Result<Graph, RecorderError> {
        Graph::new(
            chain_id,
            Config {
                max_nodes,
                ..Config::default()
            },
        )
    }

    pub(super) fn agg(&self) -> &Aggregates {
        &self.agg
    }

    pub fn with_blocking_section(mut self, blocking: BlockingSection) -> Graph {
        self.blocking = blocking;
        self
    }

    /// Every access goes through here: uncontended it is one CAS, contended the wait runs
    /// inside the embedder's blocking section.
    pub fn lock(&self) -> MutexGuard<'_, State> {
        loop {
            if let Some(guard) = self.state.try_lock() {
                return guard;
            }
            (self.blocking)(&|| drop(self.state.lock()));
        }
    }

    pub fn chain_id(&self) -> &str {
        &self.chain_id
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Lock-free.
    pub fn aggregates(&self) -> AggregatesView {
        self.agg.view()
    }

    /// Live node count; lock-free.
    pub fn len(&self) -> usize {
        self.agg.live_nodes() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nodes evicted by pruning since construction; lock-free.
    pub fn pruned_count(&self) -> u64 {
        self.agg.pruned()
    }

    pub fn root_id(&self) -> Option<NodeId> {
        self.lock().root
    }

    pub fn create_root(
        &self,
        name: &str,
        metadata: Option<Value>,
    ) -> Result<NodeId, RecorderError> {
        finite_metadata(metadata.as_ref())?;
        let mut st = self.lock();
        if let Some(root) = st.root {
            return Err(RecorderError::RootExists(id_string(root)));
        }
        self.make_room(&mut st, |_| false);
        let name = st.names.intern(name);
        let id = self.insert(
            &mut st,
            Placed {
                parent: 0,
                depth: 0,
                start_ms: now_ms(),
            },
            Kind::System,
            name,
            None,
            metadata,
            Status::Created,
        );
        st.root = Some(id);
        Ok(id)
    }

    /// Adds a child of `parent_id`; with `running`, also performs `mark_running` under the
    /// same lock (one native call on the hot path).
    #[allow(clippy::too_many_arguments)]
    pub fn begin_node(
        &self,
        parent_id: impl NodeRef,
        kind: Kind,
        name: &str,
        model: Option<&str>,
        metadata: Option<Value>,
        running: bool,
        want_start: bool,
    ) -> Result<(NodeId, Option<Box<Started>>), RecorderError> {
        finite_metadata(metadata.as_ref())?;
        let mut st = self.lock();
        let parent = parent_id
            .id()
            .and_then(|p| st.arena.get(p).map(|n| (p, n.depth)));
        let Some((parent, parent_depth)) = parent else {
            return Err(RecorderError::ParentNotFound(parent_id.text()));
        };
        // The parent is never the node evicted here, so its depth still holds.
        self.make_room(&mut st, |id| id == parent);
        let depth = parent_depth.saturating_add(1);
        let name = st.names.intern(name);
        let model = model.map(|m| st.names.intern(m));
        let status = if running {
            Status::Running
        } else {
            Status::Created
        };
        let at = Placed {
            parent,
            depth,
            start_ms: now_ms(),
        };
        let id = self.insert(&mut st, at, kind, name, model, metadata, status);
        self.agg.raise_max_depth(depth);
        let mut started = None;
        if running {
            st.dispatch(kind, name);
            self.agg
                .set_divergence_emitted(st.divergence.emitted_count());
            if want_start {
                started = Some(Self::started(&st, id));
            }
        }
        Ok((id, started))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert(
        &self,
        st: &mut State,
        at: Placed,
        kind: Kind,
        name: Sym,
        model: Option<Sym>,
        metadata: Option<Value>,
        status: Status,
    ) -> NodeId {
        self.insert_with(st, at, kind, name, model, metadata, |node, _| {
            node.status = status
        })
    }

    /// [`Graph::insert`], the new node's status and ending written by `shape` before it is
    /// placed.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn insert_with(
        &self,
        st: &mut State,
        at: Placed,
        kind: Kind,
        name: Sym,
        model: Option<Sym>,
        metadata: Option<Value>,
        shape: impl FnOnce(&mut Node, &mut Interner),
    ) -> NodeId {
        st.counter += 1;
        let id = st.counter;
        let metadata = metadata.filter(|m| !matches!(m, Value::Object(d) if d.is_empty()));
        let mut node = Node::new(id, at.parent, at.start_ms, kind, name, model);
        node.depth = at.depth;
        shape(&mut node, &mut st.names);
        st.arena.push(node, metadata);
        self.agg.set_live_nodes(st.arena.len());
        id
    }

    /// With `max_nodes` reached, evicts the oldest terminal node, never the root and never
    /// a node `keep` names (the parent about to receive a child; in a batch, every parent
    /// the batch still needs). If every node is in flight the graph grows past the limit
    /// rather than block live work.
    pub(super) fn make_room(&self, st: &mut State, keep: impl Fn(NodeId) -> bool) {
        if self.config.max_nodes == 0 || st.arena.len() < self.config.max_nodes {
            return;
        }
        let mut kept = Vec::new();
        while let Some(id) = st.evictable.pop() {
            if keep(id) {
                kept.push(id);
                continue;
            }
            st.evict(id);
            self.agg.add_pruned();
            self.agg.set_live_nodes(st.arena.len());
            break;
        }
        st.evictable.extend(kept);
    }

    fn node_mut(arena: &mut Arena, node_id: impl NodeRef) -> Result<&mut Node, RecorderError> {
        node_id
            .id()
            .and_then(|id| arena.get_mut(id))
            .ok_or_else(|| RecorderError::NodeNotFound(node_id.text()))
    }

    pub(super) fn started(st: &State, id: NodeId) -> Box<Started> {
        let node = st.arena.get(id).expect("node exists under the lock");
        Box::new(Started {
            id,
            name: st.names.resolve(node.name).to_owned(),
            metadata: st.arena.metadata(node).cloned(),
        })
    }

    /// Sets `metadata[key] = value` on an existing node, whatever its status: what is learnt of a
    /// call only when it ends (e.g. that its provider reported no usage, docs/design.md §30).
    pub fn set_metadata_key(
        &self,
        node_id: impl NodeRef,
        key: &str,
        value: Value,
    ) -> Result<(), RecorderError> {
        let mut st = self.lock();
        match node_id.id() {
            Some(id) if st.arena.set_metadata_key(id, key, value) => Ok(()),
            _ => Err(RecorderError::NodeNotFound(node_id.text())),
        }
    }

    /// `created → running`; every call (even a no-op) counts as a dispatch for divergence.
    pub fn mark_running(
        &self,
        node_id: impl NodeRef,
        want_start: bool,
    ) -> Result<Option<Box<Started>>, RecorderError> {
        let mut st = self.lock();
        let node = Self::node_mut(&mut st.arena, node_id)?;
        let transitioned = node.status == Status::Created;
        if transitioned {
            node.status = Status::Running;
        }
        let (id, kind, name) = (node.id, node.kind, node.name);
        st.dispatch(kind, name);
        self.agg
            .set_divergence_emitted(st.divergence.emitted_count());
        Ok((transitioned && want_start).then(|| Self::started(&st, id)))
    }

    pub fn mark_success(
        &self,
        node_id: impl NodeRef,
        cost_usd: f64,
        tokens_in: Option<i64>,
        tokens_out: Option<i64>,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        let t = Terminal::success(cost_usd, tokens_in, tokens_out)?;
        self.finish(node_id, &t, want_event)
    }

    pub fn mark_failure(
        &self,
        node_id: impl NodeRef,
        error_class: &str,
        stop_reason: Option<&str>,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        self.mark_failure_charged(node_id, error_class, stop_reason, Spent::NONE, want_event)
    }

    /// `mark_failure` of a call that was charged before it failed (docs/design.md §30): the
    /// node keeps its cost and tokens; the aggregates still add successes only (§2).
    pub fn mark_failure_charged(
        &self,
        node_id: impl NodeRef,
        error_class: &str,
        stop_reason: Option<&str>,
        spent: Spent,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        let t = Terminal::failure(error_class, stop_reason, spent);
        self.finish(node_id, &t, want_event)
    }

    pub fn mark_halt(
        &self,
        node_id: impl NodeRef,
        stop_reason: Option<&str>,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        self.mark_halt_charged(node_id, stop_reason, None, Spent::NONE, want_event)
    }

    /// `mark_halt` of a call that was charged before it was stopped (docs/design.md §30), naming
    /// the class of the failure that stopped it, if one did.
    pub fn mark_halt_charged(
        &self,
        node_id: impl NodeRef,
        stop_reason: Option<&str>,
        error_class: Option<&str>,
        spent: Spent,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        let t = Terminal::halt(stop_reason, error_class, spent);
        self.finish(node_id, &t, want_event)
    }

    fn finish(
        &self,
        node_id: impl NodeRef,
        t: &Terminal<'_>,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        self.finish_locked(&mut self.lock(), node_id, t, want_event)
    }

    /// Ends a node under the caller's lock: the caller that also reads the node (or decides how
    /// it ends) under that lock takes it once per settle (docs/recorder.md "Nodes and
    /// lifecycle"). A node already ended is left as it is (`applied` false).
    pub fn finish_locked(
        &self,
        st: &mut State,
        node_id: impl NodeRef,
        t: &Terminal<'_>,
        want_event: bool,
    ) -> Result<Finished, RecorderError> {
        let node = Self::node_mut(&mut st.arena, node_id)?;
        if node.status.is_terminal() {
            return Ok(Finished::default());
        }
        let id = node.id;
        let totals = self.totals_after(t)?;
        Ok(self.settle(st, id, t, totals, now_ms(), want_event))
    }

    /// The terminal transition of open node `id`, with the totals already checked: the one
    /// place a node ends, whether marked or recorded finished (docs/recorder.md).
    pub(super) fn settle(
        &self,
        st: &mut State,
        id: NodeId,
        t: &Terminal<'_>,
        totals: Option<(f64, Option<u64>)>,
        end: i64,
        want_event: bool,
    ) -> Finished {
        let State { arena, names, .. } = st;
        let node = arena
            .get_mut(id)
            .expect("an open node exists under the lock");
        let ended = Self::end_node(names, node, t, end);
        self.settled(st, id, ended, t, totals, want_event)
    }

    /// The fields a terminal transition writes on the node itself; the rest is
    /// [`Graph::settled`]'s.
    // Always inlined: `settle` (every `mark_*`) and `apply` (every recorded call) each pay one
    // call for the whole transition, as before it was shared.
    #[inline(always)]
    pub(super) fn end_node(
        names: &mut Interner,
        node: &mut Node,
        t: &Terminal<'_>,
        end: i64,
    ) -> Ended {
        // Interned only once the transition is certain: a rejected or no-op call must not
        // leave a reference behind.
        let error_class = t.error_class.map(|e| names.intern(e));
        node.status = t.status;
        node.set_end_ms(end);
        node.set_error_class(error_class);
        // A failed or halted call keeps what it was charged before it ended (§30); only a
        // success adds to the aggregates (§2).
        node.cost_usd = t.cost_usd;
        node.set_tokens(t.tokens_in, t.tokens_out);
        Ended {
            kind: node.kind,
            retries: node.retries,
            // Saturating: a loaded snapshot may carry any start time.
            duration_ms: end.saturating_sub(node.start_ms).max(1),
        }
    }

    /// What follows [`Graph::end_node`] once the node is in the arena: its stop reason, the
    /// aggregates, divergence, pruning and the event.
    #[inline(always)]
    pub(super) fn settled(
        &self,
        st: &mut State,
        id: NodeId,
        ended: Ended,
        t: &Terminal<'_>,
        totals: Option<(f64, Option<u64>)>,
        want_event: bool,
    ) -> Finished {
        let Ended {
            kind,
            retries,
            duration_ms,
        } = ended;
        if let Some(reason) = t.stop_reason {
            st.arena.set_stop_reason(id, reason);
        }

        self.agg.add_retries(u64::from(retries));
        match kind {
            Kind::Llm => self.agg.add_llm_call(),
            Kind::Tool => self.agg.add_tool_call(),
            _ => {}
        }
        if let Some((cost, tokens)) = totals {
            self.agg.set_cost(cost);
            if let Some(n) = tokens {
                self.agg.set_tokens_out(n);
            }
            st.divergence.observe_completion(
                id,
                t.cost_usd,
                t.tokens_out,
                duration_ms,
                self.config.cost_rate_threshold_usd_per_sec,
                self.config.token_velocity_threshold,
            );
            self.agg
                .set_divergence_emitted(st.divergence.emitted_count());
        }
        if self.config.max_nodes > 0 && st.root != Some(id) {
            st.evictable.push(id);
        }
        let event = want_event.then(|| Box::new(Self::event(st, id)));
        Finished {
            applied: true,
            duration_ms,
            reason: t.stop_reason.map(Into::into),
            event,
        }
    }

    fn event(st: &State, id: NodeId) -> NodeEvent {
        let n = st.arena.get(id).expect("node exists under the lock");
        let name = |s: Option<Sym>| s.map(|s| st.names.resolve(s).to_owned());
        NodeEvent {
            id,
            status: n.status,
            kind: n.kind,
            name: st.names.resolve(n.name).to_owned(),
            cost_usd: n.cost_usd,
            tokens_in: n.tokens_in(),
            tokens_out: n.tokens_out(),
            depth: n.depth,
            elapsed_ms: n.end_ms().map(|e| e.saturating_sub(n.start_ms) as f64),
            model: name(n.model()),
            error_class: name(n.error_class()),
            stop_reason: st.arena.stop_reason(n).map(Into::into),
        }
    }

    /// Adds the top-level keys of `metadata` (an object) to a node's metadata, at any status:
    /// what a call carried is sometimes known only once it ran (captured content,
    /// docs/recorder.md "Annotations"). Nothing changes on error.
    pub fn annotate(&self, node_id: impl NodeRef, metadata: Value) -> Result<(), RecorderError> {
        if !matches!(metadata, Value::Object(_)) {
            return Err(RecorderError::InvalidMetadata("must be a dict".into()));
        }
        finite_metadata(Some(&metadata))?;
        let mut st = self.lock();
        let id = node_id
            .id()
            .filter(|&id| st.arena.get(id).is_some())
            .ok_or_else(|| RecorderError::NodeNotFound(node_id.text()))?;
        st.arena.merge_metadata(id, metadata);
        Ok(())
    }

    pub fn increment_retries(&self, node_id: impl NodeRef) -> Result<(), RecorderError> {
        self.increment_retries_locked(&mut self.lock(), node_id)
    }

    /// `increment_retries` under the caller's lock (see [`Graph::finish_locked`]).
    pub fn increment_retries_locked(
        &self,
        st: &mut State,
        node_id: impl NodeRef,
    ) -> Result<(), RecorderError> {
        let node = Self::node_mut(&mut st.arena, node_id)?;
        node.retries = node.retries.saturating_add(1);
        Ok(())
    }

    /// Takes the pending divergence events, each with the signature name resolved.
    pub fn drain_divergence_events(&self) -> Vec<(DivergenceEvent, Option<String>)> {
        let mut st = self.lock();
        let events = std::mem::take(&mut st.divergence.pending);
        events
            .into_iter()
            .map(|e| {
                let name = match &e {
                    DivergenceEvent::Pattern { name, .. } => {
                        Some(st.names.resolve(*name).to_owned())
                    }
                    _ => None,
                };
                (e, name)
            })
            .collect()
    }
}
