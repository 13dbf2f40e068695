"""Random operation sequences applied to chainwarden's and veronica-core's ExecutionGraph
must leave both in the same observable state: snapshots, divergence events, hook calls."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import hypothesis.strategies as st
from hypothesis import HealthCheck, given, settings
from veronica_core.containment import ExecutionGraph as RefGraph

from chainwarden import ExecutionGraph

TIMESTAMPS = ("start_ts_ms", "end_ts_ms")
KINDS = ("llm", "tool", "system", "memory_read", "memory_write")
NAMES = ("plan", "search", "fetch", "summarize")


def comparable_snapshot(snap: dict[str, Any]) -> dict[str, Any]:
    nodes = {nid: {k: v for k, v in n.items() if k not in TIMESTAMPS} for nid, n in snap["nodes"].items()}
    return {"root_id": snap["root_id"], "nodes": nodes, "aggregates": snap["aggregates"]}


def comparable_event(e: dict[str, Any]) -> dict[str, Any]:
    # Rates divide by wall-clock milliseconds; the thresholds below make *whether* they fire
    # independent of timing, but not the measured rate itself.
    return {k: v for k, v in e.items() if k not in ("chain_id", "cost_rate", "token_velocity")}


@dataclass
class Recorder:
    """Observer and subscriber at once; records every callback in order."""

    calls: list[tuple[Any, ...]] = field(default_factory=list)

    def on_node_start(self, node_id: str, operation: str, metadata: dict[str, Any]) -> None:
        self.calls.append(("start", node_id, operation, metadata))

    def on_node_complete(self, node_id: str, cost_usd: float, duration_ms: float) -> None:
        self.calls.append(("complete", node_id, cost_usd))

    def on_node_failed(self, node_id: str, error: str) -> None:
        self.calls.append(("failed", node_id, error))

    def on_decision(self, node_id: str, decision: str, reason: str) -> None:
        self.calls.append(("decision", node_id, decision, reason))

    def __call__(self, event: Any) -> None:
        fields = ("node_id", "status", "kind", "name", "cost_usd", "tokens_in", "tokens_out", "depth")
        fields += ("model", "error_class", "stop_reason")
        self.calls.append(("event", *(getattr(event, f) for f in fields)))


node_ref = st.integers(min_value=0, max_value=40)
metadata = st.one_of(
    st.none(),
    st.dictionaries(
        st.sampled_from(["k", "q", "ü"]), st.one_of(st.integers(-5, 5), st.text(max_size=3)), max_size=2
    ),
)
ops = st.lists(
    st.one_of(
        st.tuples(
            st.just("begin"),
            node_ref,
            st.sampled_from(KINDS),
            st.sampled_from(NAMES),
            st.sampled_from([None, "m1"]),
            metadata,
        ),
        st.tuples(st.just("running"), node_ref),
        st.tuples(
            st.just("success"),
            node_ref,
            st.sampled_from([0, 0.0, 0.5, 3.0]),
            st.sampled_from([None, 0, 12]),
            st.sampled_from([None, 0, 5, 1000]),
        ),
        st.tuples(
            st.just("failure"),
            node_ref,
            st.sampled_from(["TimeoutError", "E"]),
            st.sampled_from([None, "boom"]),
        ),
        st.tuples(st.just("halt"), node_ref, st.sampled_from([None, "", "cost ceiling exceeded"])),
        st.tuples(st.just("retry"), node_ref),
        st.tuples(st.just("drain")),
    ),
    max_size=60,
)


def pick(ids: list[str], i: int) -> str:
    # Index past the end addresses an id that never existed.
    return ids[i] if i < len(ids) else f"n{900000 + i:06d}"


def reference_would_evict(ref: RefGraph, max_nodes: int) -> str | None:
    """The node veronica-core's pre-insert pruning removes, if any."""
    snap = ref.snapshot()
    if max_nodes == 0 or len(snap["nodes"]) < max_nodes:
        return None
    for nid, n in snap["nodes"].items():
        if nid != snap["root_id"] and n["status"] in ("success", "fail", "halt"):
            return nid
    return None


def call_both(ours: ExecutionGraph, ref: RefGraph, method: str, *args: Any) -> Any:
    results = []
    for g in (ours, ref):
        try:
            results.append(("ok", getattr(g, method)(*args)))
        except KeyError as exc:
            results.append(("KeyError", str(exc)))
    assert results[0] == results[1], (method, args)
    return results[0]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=ops, max_nodes=st.sampled_from([0, 0, 3, 6]), root_meta=metadata)
def test_random_sequences_match_reference(ops: list[tuple[Any, ...]], max_nodes: int, root_meta: Any) -> None:
    thresholds = {"cost_rate_threshold_usd_per_sec": 1e-3, "token_velocity_threshold": 1e-3}
    hooks_ours, hooks_ref = Recorder(), Recorder()
    ours = ExecutionGraph(chain_id="c", observers=[hooks_ours], max_nodes=max_nodes, **thresholds)
    ref = RefGraph(chain_id="c", observers=[hooks_ref], max_nodes=max_nodes, **thresholds)
    ours.add_subscriber(hooks_ours)
    ref.add_subscriber(hooks_ref)
    ids = [call_both(ours, ref, "create_root", "agent_run", root_meta)[1]]
    for op in ops:
        name, args = op[0], op[1:]
        if name == "begin":
            parent = pick(ids, args[0])
            evict = reference_would_evict(ref, max_nodes)
            if evict is not None and (parent == evict or parent not in ours):
                # Known deviation (tested on its own): the reference prunes before it checks
                # the parent, so it can evict the parent or prune on a failing call.
                continue
            status, result = call_both(ours, ref, "begin_node", parent, *args[1:])
            if status == "ok":
                ids.append(result)
        elif name == "drain":
            got = [comparable_event(e) for e in ours.drain_divergence_events()]
            want = [comparable_event(e) for e in ref.drain_divergence_events()]
            assert got == want
        else:
            method = {
                "running": "mark_running",
                "success": "mark_success",
                "failure": "mark_failure",
                "halt": "mark_halt",
                "retry": "increment_retries",
            }[name]
            call_both(ours, ref, method, pick(ids, args[0]), *args[1:])
        assert comparable_snapshot(ours.snapshot()) == comparable_snapshot(ref.snapshot())
    assert [comparable_event(e) for e in ours.drain_divergence_events()] == [
        comparable_event(e) for e in ref.drain_divergence_events()
    ]
    assert hooks_ours.calls == hooks_ref.calls
    assert ours.pruned_count == ref.pruned_count
    assert len(ours) == len(ref.snapshot()["nodes"])


def test_default_thresholds_and_node_ids_match_reference() -> None:
    ours, ref = ExecutionGraph(), RefGraph()
    for g in (ours, ref):
        root = g.create_root("agent_run", metadata={"request_id": "req-001"})
        for i in range(12):
            n = g.begin_node(root, "llm" if i % 3 else "tool", f"step_{i % 4}", model="m")
            g.mark_running(n)
            g.mark_success(n, cost_usd=0.0, tokens_in=1, tokens_out=0)
    assert comparable_snapshot(ours.snapshot()) == comparable_snapshot(ref.snapshot())
    assert list(ours.snapshot()["nodes"])[-1] == "n000013"
    assert ours.snapshot()["chain_id"] != ref.snapshot()["chain_id"]  # both random UUIDs
