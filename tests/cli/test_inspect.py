"""`chainwarden inspect`: the summary of each kind of saved run agrees with what the engine recorded."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from run_fixtures import HOSTILE, save_containment_run, save_dag_run, save_graph_run

from chainwarden.cli import main
from chainwarden.cli.console import print_summary
from chainwarden.cli.export import context_snapshot_json
from chainwarden.cli.html_report import render_html
from chainwarden.cli.mermaid import run_to_mermaid
from chainwarden.cli.runfile import RunFileError, parse_run
from chainwarden.cli.summary import summarize


def inspect_json(path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    assert main(["inspect", str(path), "--json"]) == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out)
    return summary


def test_execution_graph_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g, path = save_graph_run(tmp_path / "run.json")
    s = inspect_json(path, capsys)
    agg = g.aggregates()
    assert (s["source"], s["id"], s["nodes"]) == ("execution-graph", "fixture-chain", len(g))
    assert s["by_kind"] == {"system": 1, "llm": 2, "tool": 3}
    assert s["by_kind_status"]["tool"] == {"success": 1, "fail": 1, "halt": 1}
    assert s["cost_usd"] == agg["total_cost_usd"]
    assert (s["tokens_in"], s["tokens_out"]) == (420, agg["total_tokens_out"])
    assert s["amplification"] == {
        k: agg[k] for k in ("llm_calls_per_root", "tool_calls_per_root", "retries_per_root")
    }
    assert [c["name"] for c in s["most_expensive"]] == ["answer", "plan"]
    assert len(s["slowest"]) == 5
    halts = {h["name"]: (h["status"], h["reason"]) for h in s["halts"]}
    assert halts == {
        "query_metrics": ("fail", "TimeoutError: metrics backend timed out"),
        HOSTILE: ("halt", "budget_exceeded"),
    }
    assert s["divergence_count"] == agg["divergence_emitted_count"] == len(s["divergence_events"])


def test_containment_summary_names_the_halt_and_its_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    s = inspect_json(save_containment_run(tmp_path / "ctx.json"), capsys)
    assert (s["source"], s["id"], s["nodes"]) == ("containment", "fixture-ctx", 4)
    assert s["by_status"] == {"ok": 3, "halted": 1}
    assert s["cost_usd"] == pytest.approx(0.20)
    [halt] = s["halts"]
    assert halt["name"] == "draft"
    assert halt["reason"].startswith("budget_exceeded: ")
    assert [e["decision"] for e in s["safety_events"] if e["event_type"] == "budget_exceeded"] == ["HALT"]


def test_dag_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, path = save_dag_run(tmp_path / "dag.json")
    s = inspect_json(path, capsys)
    assert (s["source"], s["id"], s["nodes"]) == ("dag", "fixture-dag", 4)
    assert s["by_kind_status"]["task"] == {"finished": 1, "errored": 1, "skipped": 1}
    halts = {h["id"]: h["status"] for h in s["halts"]}
    assert halts == {"t-rome": "errored", "compare": "skipped"}
    assert next(h for h in s["halts"] if h["id"] == "t-rome")["reason"] == "weather service timed out"


def test_plain_output_is_aligned_text_without_markup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, path = save_graph_run(tmp_path / "run.json")
    assert main(["inspect", str(path), "--plain"]) == 0
    out = capsys.readouterr().out
    assert "== halts and failures ==" in out
    assert HOSTILE in out  # printed as written: rich markup like [red] is not interpreted
    assert "\x1b[" not in out


def test_rich_tables_show_names_literally(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _, path = save_graph_run(tmp_path / "run.json")
    doc = json.loads(path.read_bytes())
    doc["chain_id"] = "[/bold] closes nothing"  # invalid rich markup in the table title
    path.write_text(json.dumps(doc))
    assert main(["inspect", str(path), "--rich"]) == 0
    out = capsys.readouterr().out
    assert "halts and failures" in out and "query_metrics" in out
    assert "[red]bold[/red]" in " ".join(out.split())  # a markup-looking name is shown, not applied
    assert "[/bold] closes nothing" in " ".join(out.split())


_SCALAR = st.none() | st.booleans() | st.integers(-(10**400), 10**400) | st.floats() | st.text(max_size=8)
_VALUE = st.recursive(
    _SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
_NODE = st.fixed_dictionaries(
    {"node_id": st.text(max_size=4)},
    optional={
        k: _VALUE
        for k in (
            "parent_id",
            "kind",
            "name",
            "status",
            "start_ts_ms",
            "end_ts_ms",
            "cost_usd",
            "tokens_in",
            "tokens_out",
            "stop_reason",
            "error_class",
            "retries_used",
            "model",
        )
    },
)


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.dictionaries(st.text(max_size=4), _NODE, max_size=6),
    aggregates=st.dictionaries(
        st.sampled_from(["total_cost_usd", "llm_calls_per_root", "divergence_emitted_count"]), _VALUE
    ),
    divergence=st.lists(st.dictionaries(st.text(max_size=6), _VALUE, max_size=3), max_size=3),
)
def test_any_snapshot_shaped_file_is_summarized_or_refused_never_a_crash(
    nodes: dict[str, Any], aggregates: dict[str, Any], divergence: list[dict[str, Any]]
) -> None:
    """Odd values (NaN, huge ints, nested objects where strings belong) give valid JSON output or a
    RunFileError, and every renderer copes with whatever was accepted."""
    doc = {
        "chain_id": "x",
        "root_id": None,
        "nodes": nodes,
        "aggregates": aggregates,
        "divergence_events": divergence,
    }
    try:
        run = parse_run(json.dumps(doc))
    except RunFileError:
        return
    json.dumps(summarize(run), allow_nan=False)
    print_summary(summarize(run), io.StringIO(), rich=False)
    render_html(run)
    run_to_mermaid(run)


def test_exporting_something_else_than_a_context_snapshot_is_refused() -> None:
    with pytest.raises(TypeError, match="snapshot must be a ContextSnapshot, got dict"):
        context_snapshot_json({"chain_id": "x"})  # type: ignore[arg-type]


def test_a_saved_context_snapshot_is_strict_json(tmp_path: Path) -> None:
    doc = json.loads(save_containment_run(tmp_path / "ctx.json").read_bytes())
    assert doc["events"][-1]["decision"] == "HALT"  # enums by value
    assert [n["status"] for n in doc["nodes"]] == ["ok", "ok", "halted", "ok"]
    assert doc["nodes"][0]["start_ts"].endswith("+00:00")  # timestamps in ISO 8601 with their zone


def _shaped(keys: tuple[str, ...]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries({}, optional=dict.fromkeys(keys, _VALUE))


@settings(max_examples=60, deadline=None)
@given(
    nodes=st.lists(
        _shaped(
            (
                "node_id",
                "node_type",
                "state",
                "input",
                "metadata",
                "started_at",
                "finished_at",
                "compressed_at",
            )
        ),
        max_size=5,
    ),
    edges=st.lists(_shaped(("from_node_id", "to_node_id", "edge_type", "compressed_at")), max_size=5),
    records=st.lists(
        _shaped(
            ("node_id", "parent_id", "kind", "operation_name", "status", "start_ts", "end_ts", "cost_usd")
        ),
        max_size=5,
    ),
    events=st.lists(_shaped(("event_type", "decision", "reason", "hook", "metadata")), max_size=4),
)
def test_any_dag_or_containment_shaped_file_is_summarized_or_refused(
    nodes: list[dict[str, Any]],
    edges: list[dict[str, Any]],
    records: list[dict[str, Any]],
    events: list[dict[str, Any]],
) -> None:
    for doc in (
        {"format": "chainwarden.dag", "graph_id": "g", "nodes": nodes, "edges": edges},
        {"chain_id": "c", "step_count": 1, "nodes": records, "events": events, "graph_summary": None},
    ):
        try:
            run = parse_run(json.dumps(doc))
        except RunFileError:
            continue
        json.dumps(summarize(run), allow_nan=False)
        print_summary(summarize(run), io.StringIO(), rich=False)
        render_html(run)
        with contextlib.suppress(RunFileError):  # a DAG's Mermaid is the engine's: it may refuse the file
            run_to_mermaid(run)


def _context_run() -> Any:
    from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext  # noqa: PLC0415

    meta = ChainMetadata(
        request_id="r",
        chain_id="c",
        user_id="u-7",
        session_id="s-3",
        tags={"env": "prod"},
        attributes={"n": [1]},
    )
    with ExecutionContext(ExecutionConfig(1.0, 5, 1), metadata=meta) as ctx:
        ctx.wrap_llm_call(lambda: None)
    return ctx


@pytest.mark.parametrize("form", ["graph", "containment"])
def test_inspect_shows_the_runs_context_from_either_snapshot(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], form: str
) -> None:
    ctx = _context_run()
    path = tmp_path / "run.json"
    path.write_bytes(
        ctx.get_graph_snapshot_json() if form == "graph" else context_snapshot_json(ctx.get_snapshot())
    )
    s = inspect_json(path, capsys)
    expected = {"user_id": "u-7", "session_id": "s-3", "tags": {"env": "prod"}, "attributes": {"n": [1]}}
    assert s["context"] == expected
    assert main(["inspect", str(path), "--plain"]) == 0
    plain = capsys.readouterr().out
    assert "== context ==" in plain and "env=prod" in plain and "s-3" in plain and "attribute n  [1]" in plain
