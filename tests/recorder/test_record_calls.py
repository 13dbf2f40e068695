"""`record_call` / `record_calls`: a finished call in one native call, equal to
`begin_node` + `mark_running` + `mark_success` / `mark_failure` / `mark_halt`; a batch checked whole."""

from __future__ import annotations

import math
import re
import types
from collections.abc import Iterator
from typing import Any

import pytest

from chainwarden import ExecutionGraph, NodeEvent

from ._state import frozen

NODE_TS = re.compile(rb'"(start_ts_ms|end_ts_ms|snapshot_ts_ms)": \d+')


def without_times(g: ExecutionGraph) -> bytes:
    return NODE_TS.sub(b"", g.snapshot_json())


class Recorder:
    """Every observer call and subscriber event, in order; durations only checked >= 1."""

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def on_node_start(self, node_id: str, name: str, metadata: dict[str, Any]) -> None:
        self.calls.append(("start", node_id, name, metadata))

    def on_node_complete(self, node_id: str, cost: float, duration_ms: float) -> None:
        assert duration_ms >= 1
        self.calls.append(("complete", node_id, cost))

    def on_node_failed(self, node_id: str, error: str) -> None:
        self.calls.append(("failed", node_id, error))

    def on_decision(self, node_id: str, decision: str, reason: str) -> None:
        self.calls.append(("decision", node_id, decision, reason))

    def event(self, e: NodeEvent) -> None:
        assert e.elapsed_ms is not None and e.elapsed_ms >= 0
        self.calls.append(
            ("event", e.node_id, e.status, e.kind, e.name, e.cost_usd, e.tokens_in, e.tokens_out)
        )
        self.calls.append(("event+", e.depth, e.chain_id, e.model, e.error_class, e.stop_reason))


def observed(chain_id: str = "c") -> tuple[ExecutionGraph, Recorder, str]:
    rec = Recorder()
    g = ExecutionGraph(chain_id=chain_id, observers=[rec])
    g.add_subscriber(rec.event)
    return g, rec, g.create_root("run")


# One call per terminal status (and kinds), as (record_call keyword arguments, the three-step path).
CALLS: list[dict[str, Any]] = [
    {
        "kind": "llm",
        "name": "plan",
        "model": "m",
        "cost_usd": 0.25,
        "tokens_in": 10,
        "tokens_out": 7,
        "metadata": {"k": [1, 2.5, None], "t": (1, "x")},
    },
    {"kind": "tool", "name": "search", "cost_usd": 0},
    {"kind": "memory_read", "name": "recall", "cost_usd": 0.0, "tokens_out": 3},
    {"kind": "llm", "name": "boom", "cost_usd": 0.0, "status": "fail", "error_class": "RateLimitError"},
    {"kind": "llm", "name": "x", "cost_usd": 0.0, "status": "fail", "error_class": "E", "stop_reason": "429"},
    {"kind": "llm", "name": "stop", "cost_usd": 0.0, "status": "halt", "stop_reason": "cost_ceiling"},
    {"kind": "tool", "name": "stop2", "cost_usd": 0.0, "status": "halt"},
]


def three_steps(g: ExecutionGraph, parent: str, call: dict[str, Any]) -> str:
    n = g.begin_node(
        parent, call["kind"], call["name"], model=call.get("model"), metadata=call.get("metadata")
    )
    g.mark_running(n)
    status = call.get("status", "success")
    if status == "success":
        g.mark_success(n, call["cost_usd"], call.get("tokens_in"), call.get("tokens_out"))
    elif status == "fail":
        g.mark_failure(n, call["error_class"], call.get("stop_reason"))
    else:
        g.mark_halt(n, call.get("stop_reason"))
    return n


def signals(g: ExecutionGraph) -> list[tuple[Any, ...]]:
    return [(e["event_type"], e.get("detection_mode"), e.get("node_id")) for e in g.drain_divergence_events()]


def test_record_call_equals_the_three_step_path_for_every_status_with_the_same_hooks() -> None:
    a, seen_a, root = observed()
    b, seen_b, _ = observed()
    for call in CALLS * 2:
        three_steps(a, root, call)
        b.record_call(root, **call)
    assert without_times(a) == without_times(b)
    assert a.aggregates() == b.aggregates()
    assert seen_a.calls == seen_b.calls
    kinds = [c[0] for c in seen_b.calls[:9]]
    assert kinds == ["start", "complete", "event", "event+", "start", "complete", "event", "event+", "start"]
    assert ("decision", "n000007", "HALT", "cost_ceiling") in seen_b.calls
    assert ("failed", "n000008", "halt") in seen_b.calls
    assert signals(a) == signals(b) != []
    node = b.node("n000002")
    assert (node["status"], node["cost_usd"], node["tokens_in"], node["tokens_out"]) == (
        "success",
        0.25,
        10,
        7,
    )
    assert node["metadata"] == {"k": [1, 2.5, None], "t": (1, "x")}


def test_record_calls_equals_record_call_one_by_one_and_returns_the_ids_in_row_order() -> None:
    a, seen_a, root = observed()
    b, seen_b, _ = observed()
    rows = [
        {"parent": root, "started_at": 1_000 + i, "ended_at": 2_000 + i, **c} for i, c in enumerate(CALLS)
    ]
    one_by_one = [a.record_call(**row) for row in rows]
    assert b.record_calls(rows) == one_by_one == [f"n{i:06d}" for i in range(2, 9)]
    assert without_times(a) == without_times(b)
    assert NODE_TS.findall(a.snapshot_json())[:-1] == NODE_TS.findall(b.snapshot_json())[:-1]
    assert seen_a.calls == seen_b.calls
    assert b.node("n000003")["start_ts_ms"] == 1_001 and b.node("n000003")["end_ts_ms"] == 2_001


def test_rows_may_be_any_mappings_from_any_iterable() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")

    def rows() -> Iterator[Any]:
        yield types.MappingProxyType({"parent": root, "kind": "tool", "name": "a", "cost_usd": 0.5})
        yield {"parent": root, "kind": "llm", "name": "b", "cost_usd": 1, "tokens_out": None, "model": None}

    assert g.record_calls(rows()) == ["n000002", "n000003"]
    assert g.record_calls([]) == []
    assert g.aggregates()["total_cost_usd"] == 1.5


def test_the_times_are_the_callers_and_default_to_now() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    n = g.record_call(
        root, "llm", "a", cost_usd=0.0, started_at=1_700_000_000_000, ended_at=1_700_000_002_500
    )
    assert (g.node(n)["start_ts_ms"], g.node(n)["end_ts_ms"]) == (1_700_000_000_000, 1_700_000_002_500)
    now = g.node(root)["start_ts_ms"]
    n = g.record_call(root, "llm", "b", cost_usd=0.0)
    assert g.node(n)["start_ts_ms"] == g.node(n)["end_ts_ms"] >= now
    n = g.record_call(root, "llm", "c", cost_usd=0.0, started_at=5)
    assert g.node(n)["start_ts_ms"] == 5 and g.node(n)["end_ts_ms"] >= now


def test_a_failed_or_halted_call_keeps_its_cost_out_of_the_totals() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    n = g.record_call(root, "llm", "a", cost_usd=0.5, tokens_out=9, status="fail", error_class="Timeout")
    h = g.record_call(root, "llm", "b", cost_usd=0.25, status="halt", error_class="BudgetExceeded")
    assert (g.node(n)["cost_usd"], g.node(n)["tokens_out"], g.node(h)["error_class"]) == (
        0.5,
        9,
        "BudgetExceeded",
    )
    assert g.node(h)["stop_reason"] == "halt"
    agg = g.aggregates()
    assert (agg["total_cost_usd"], agg["total_tokens_out"], agg["total_llm_calls"]) == (0.0, 0, 2)


BAD_CALLS: list[tuple[dict[str, Any], type[Exception], str]] = [
    ({"cost_usd": -1}, ValueError, "cost_usd must be a finite number >= 0; got -1"),
    ({"cost_usd": math.nan}, ValueError, "cost_usd must be a finite number >= 0; got NaN"),
    ({"cost_usd": "0.1"}, TypeError, "cost_usd must be a number (int or float), not str"),
    ({"cost_usd": True}, TypeError, "cost_usd must be a number (int or float), not bool"),
    ({"tokens_in": -1}, ValueError, "tokens_in must be >= 0; got -1"),
    ({"tokens_out": 1.5}, TypeError, "tokens_out must be an int or None, not float"),
    ({"tokens_out": 2**64}, ValueError, "tokens_out is out of range"),
    (
        {"kind": "agent"},
        ValueError,
        "kind must be one of 'llm', 'tool', 'system', 'memory_read', 'memory_write'",
    ),
    ({"kind": 3}, TypeError, "kind must be a str, not int"),
    (
        {"status": "running"},
        ValueError,
        "status must be 'success', 'fail' or 'halt' (a recorded call has finished)",
    ),
    ({"status": "ok"}, ValueError, "status must be one of 'created', 'running', 'success', 'fail', 'halt'"),
    ({"status": None}, TypeError, "status must be a str, not NoneType"),
    ({"status": "fail"}, ValueError, "error_class is required when status is 'fail'"),
    ({"error_class": "E"}, ValueError, "error_class must be None when status is 'success'"),
    ({"stop_reason": "r"}, ValueError, "stop_reason must be None when status is 'success'"),
    (
        {"started_at": 10, "ended_at": 9},
        ValueError,
        "ended_at must be >= started_at; got ended_at=9 < started_at=10",
    ),
    ({"started_at": -1}, ValueError, "started_at must be epoch milliseconds >= 0; got -1"),
    ({"ended_at": 1.0}, TypeError, "ended_at must be an int or None, not float"),
    (
        {"metadata": {"x": [math.inf]}},
        ValueError,
        'metadata must be strict JSON: NaN and infinite floats are not allowed (at metadata["x"][0])',
    ),
    ({"metadata": [1]}, TypeError, "metadata must be a dict or None, not list"),
    ({"metadata": {"x": object()}}, TypeError, "metadata: object is not JSON data"),
    ({"parent": "n000099"}, KeyError, "Parent node not found: 'n000099'"),
    ({"parent": "root"}, KeyError, "Parent node not found: 'root'"),
]


def _graph_with_history() -> tuple[ExecutionGraph, str]:
    g = ExecutionGraph(chain_id="c", max_nodes=3)
    root = g.create_root("run")
    for _ in range(3):
        g.record_call(root, "tool", "t", cost_usd=0.125, tokens_out=1)
    g.begin_node(root, "llm", "open", running=True)
    return g, root


def built_at_run_time(kwargs: dict[str, Any]) -> dict[str, Any]:
    """The same keywords as new (not interned) strings: the call takes `record_call`'s general entry
    (docs/recorder.md "Recording finished calls")."""
    return {"".join(list(k)): v for k, v in kwargs.items()}


ENTRIES = {"plain": lambda kwargs: kwargs, "general": built_at_run_time}


@pytest.mark.parametrize("entry", ENTRIES)
@pytest.mark.parametrize(("change", "error", "message"), BAD_CALLS)
def test_a_bad_argument_raises_a_typed_error_naming_it_and_changes_nothing(
    change: dict[str, Any], error: type[Exception], message: str, entry: str
) -> None:
    g, root = _graph_with_history()
    before = frozen(g)
    call = ENTRIES[entry]({"parent": root, "kind": "llm", "name": "n", "cost_usd": 0.5, **change})
    with pytest.raises(error) as raised:
        g.record_call(**call)
    assert message in str(raised.value)
    assert frozen(g) == before


@pytest.mark.parametrize(("change", "error", "message"), BAD_CALLS)
def test_a_bad_row_in_the_middle_of_a_batch_names_its_index_and_field_and_changes_nothing(
    change: dict[str, Any], error: type[Exception], message: str
) -> None:
    g, root = _graph_with_history()
    before = frozen(g)
    good = {"parent": root, "kind": "llm", "name": "n", "cost_usd": 0.5}
    with pytest.raises(error) as raised:
        g.record_calls([good, good, {**good, **change}, good])
    text = str(raised.value)
    if "parent" in change:
        assert text == f'"rows[2].parent: {message}"'
    else:
        # The message of the same call alone, after the row's index.
        assert text.startswith(f"rows[2].{message}"), text
    assert frozen(g) == before


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ("rows", "rows must be an iterable of mappings"),
        ({"parent": "n000001"}, "rows must be an iterable of mappings"),
        (3, "rows must be an iterable of mappings (dicts of record_call's arguments), not int"),
        ([None], "rows[0] must be a mapping of record_call's arguments (a dict), not NoneType"),
        ([{"kind": "llm", "name": "a", "cost_usd": 0}], "rows[0] is missing the required field 'parent'"),
        (
            [{"parent": "n000001", "kind": "llm", "name": "a"}],
            "rows[0] is missing the required field 'cost_usd'",
        ),
        (
            [{"parent": "n000001", "kind": "llm", "name": "a", "cost_usd": 0, "costusd": 1}],
            "rows[0] has an unknown field 'costusd'; the fields are record_call's arguments: parent, kind",
        ),
        ([{1: 2}], "rows[0] keys must be str, not int"),
        ([{"parent": "n000001", "kind": "llm", "name": None, "cost_usd": 0}], "rows[0].name must be a str"),
    ],
)
def test_rows_that_are_not_rows_are_a_type_error_and_change_nothing(rows: Any, message: str) -> None:
    g, _ = _graph_with_history()
    before = frozen(g)
    with pytest.raises(TypeError) as raised:
        g.record_calls(rows)
    assert message in str(raised.value)
    assert frozen(g) == before


def test_a_batch_whose_totals_would_overflow_changes_nothing() -> None:
    g, root = _graph_with_history()
    before = frozen(g)
    big = {"parent": root, "kind": "llm", "name": "n", "cost_usd": 1e308}
    with pytest.raises(ValueError, match=r"^rows\[1\]\.cost_usd would make total_cost_usd non-finite"):
        g.record_calls([big, big])
    assert frozen(g) == before


def test_max_nodes_prunes_as_the_three_step_path_does() -> None:
    a = ExecutionGraph(chain_id="c", max_nodes=50)
    b = ExecutionGraph(chain_id="c", max_nodes=50)
    c = ExecutionGraph(chain_id="c", max_nodes=50)
    root = a.create_root("run")
    b.create_root("run")
    c.create_root("run")
    calls = [{"kind": "tool", "name": f"t{i}", "cost_usd": 0.5, "metadata": {"i": i}} for i in range(500)]
    for call in calls:
        three_steps(a, root, call)
        b.record_call(root, **call)
    c.record_calls({"parent": root, **call} for call in calls)
    assert without_times(a) == without_times(b) == without_times(c)
    assert (len(c), c.pruned_count, c.aggregates()["total_tool_calls"]) == (50, 451, 500)
    assert c.aggregates()["total_cost_usd"] == 250.0


def test_a_batch_keeps_the_parents_it_names() -> None:
    g = ExecutionGraph(max_nodes=3)
    root = g.create_root("run")
    first = g.record_call(root, "llm", "a", cost_usd=0.0)
    second = g.record_call(root, "llm", "b", cost_usd=0.0)
    # One at a time, the first row would evict `second` before its children are recorded.
    rows = [{"parent": p, "kind": "tool", "name": "t", "cost_usd": 0.0} for p in (first, second, second)]
    ids = g.record_calls(rows)
    assert first in g and second in g and ids[-1] in g
    assert g.node(ids[-1])["parent_id"] == second
    with pytest.raises(KeyError):
        g.record_call(ids[0], "tool", "t", cost_usd=0.0)  # evicted by the last row, as documented


def test_a_recorded_call_under_a_recorded_call_has_its_depth() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    parent = g.record_call(root, "llm", "plan", cost_usd=0.0)
    child = g.record_call(parent, "tool", "search", cost_usd=0.0)
    assert g.node(child)["parent_id"] == parent
    assert g.aggregates()["max_depth"] == 2


def test_hooks_that_fail_do_not_undo_the_batch() -> None:
    def bad(event: NodeEvent) -> None:
        raise ValueError("subscriber bug")

    g = ExecutionGraph()
    g.add_subscriber(bad)
    root = g.create_root("run")
    rows = [{"parent": root, "kind": "llm", "name": "a", "cost_usd": 0.5}] * 3
    assert len(g.record_calls(rows)) == 3
    assert g.aggregates()["total_cost_usd"] == 1.5


class Text(str):
    pass


class Int(int):
    pass


def test_every_form_of_a_call_records_the_same_node_with_the_same_hooks() -> None:
    # Plain calls are read straight from the interpreter's arguments; keywords built at run time,
    # subclasses of str / int / float, and arguments given by keyword take the general entry.
    forms: list[Any] = [
        lambda g, root, c: g.record_call(
            root, c["kind"], c["name"], **{k: v for k, v in c.items() if k not in ("kind", "name")}
        ),
        lambda g, root, c: g.record_call(**built_at_run_time({"parent": root, **c})),
        lambda g, root, c: g.record_call(parent=root, **c),
        lambda g, root, c: g.record_call(
            Text(root),
            Text(c["kind"]),
            Text(c["name"]),
            **{
                k: (Int(v) if type(v) is int else Text(v) if type(v) is str else v)
                for k, v in c.items()
                if k not in ("kind", "name")
            },
        ),
    ]
    graphs = []
    for form in forms:
        g, seen, root = observed()
        ids = [form(g, root, c) for c in CALLS]
        assert ids == [f"n{i:06d}" for i in range(2, 2 + len(CALLS))]
        assert all(type(i) is str for i in ids)
        graphs.append((without_times(g), g.aggregates(), seen.calls, signals(g)))
    assert all(g == graphs[0] for g in graphs[1:])


def test_a_call_the_plain_entry_cannot_read_gets_the_general_entrys_error() -> None:
    g = ExecutionGraph()
    root = g.create_root("run")
    with pytest.raises(TypeError, match="missing 1 required keyword argument: 'cost_usd'"):
        g.record_call(root, "llm", "x")
    with pytest.raises(TypeError, match="unexpected keyword argument 'costusd'"):
        g.record_call(root, "llm", "x", costusd=1.0)
    with pytest.raises(TypeError, match="multiple values for argument 'kind'"):
        g.record_call(root, "llm", "x", cost_usd=1.0, kind="llm")
    with pytest.raises(TypeError, match="takes 3 positional arguments but 4 were given"):
        g.record_call(root, "llm", "x", 1.0)  # type: ignore[misc]
    with pytest.raises(TypeError, match="model"):
        g.record_call(root, "llm", "x", cost_usd=1.0, model=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="surrogates not allowed"):
        g.record_call(root, "llm", "\ud800", cost_usd=1.0)
    with pytest.raises(TypeError):
        ExecutionGraph.record_call(object(), root, "llm", "x", cost_usd=1.0)  # type: ignore[arg-type]
    assert len(g) == 1
    assert ExecutionGraph.record_call.__text_signature__ is not None
    assert "cost_usd" in ExecutionGraph.record_call.__text_signature__


class Row(dict[str, Any]):
    pass


def test_every_form_of_a_row_records_the_same_nodes_with_the_same_hooks() -> None:
    # A plain dict's fields are found by their keys' addresses when the keys are the interned field
    # names (keys written in the source); keys built at run time, a kind built at run time, dict
    # subclasses and a mix of both kinds of key in one row are read by name: the same nodes either way.
    def mixed(row: dict[str, Any]) -> dict[str, Any]:
        return {("".join(list(k)) if i % 2 else k): v for i, (k, v) in enumerate(row.items())}

    forms: list[Any] = [
        lambda row: row,
        built_at_run_time,
        mixed,
        lambda row: {**row, "kind": "".join(list(row["kind"]))},
        Row,
    ]
    graphs = []
    for form in forms:
        g, seen, root = observed()
        rows = [
            form({"parent": root, "started_at": 1_000 + i, "ended_at": 2_000 + i, **c})
            for i, c in enumerate(CALLS)
        ]
        assert g.record_calls(rows) == [f"n{i:06d}" for i in range(2, 2 + len(CALLS))]
        graphs.append((without_times(g), g.aggregates(), seen.calls, signals(g)))
    assert all(g == graphs[0] for g in graphs[1:])


@pytest.mark.parametrize("key", ["costusd", "".join(["cost", "usd"]), 7])
def test_an_unknown_key_among_known_ones_is_refused_by_name_and_changes_nothing(key: Any) -> None:
    g, root = _graph_with_history()
    before = frozen(g)
    good = {"parent": root, "kind": "llm", "name": "n", "cost_usd": 0.5}
    with pytest.raises(TypeError) as raised:
        g.record_calls([good, {**good, key: 1, "tokens_in": 3}])
    expected = "rows[1] keys must be str, not int" if key == 7 else f"rows[1] has an unknown field {key!r}"
    assert expected in str(raised.value)
    assert frozen(g) == before


def test_calls_under_parents_given_as_new_strs_each_time_go_under_the_parent_each_names() -> None:
    # The plain entry remembers the last parent `str` object it read; parents rebuilt on every call
    # (new objects, whose addresses the allocator reuses) and alternating parents each find their own.
    g = ExecutionGraph()
    root = g.create_root("run")
    child = g.record_call(root, "llm", "child", cost_usd=0.0)
    for i in range(200):
        parent = "".join(["n", "00000", "1" if i % 3 else "2"])
        node = g.record_call(parent, "tool", "t", cost_usd=0.0)
        assert g.node(node)["parent_id"] == (root if i % 3 else child)
    with pytest.raises(KeyError):
        g.record_call("".join(["n", "999999"]), "tool", "t", cost_usd=0.0)
    assert g.record_call(root, "llm", "x", cost_usd=0.0) in g
