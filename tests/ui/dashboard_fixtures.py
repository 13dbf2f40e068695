"""What the dashboard tests read: a real SQLite ledger with run records and receipts, a directory of run files
saved the way users save them, and a SQLite DAG store; and a uvicorn server on 127.0.0.1 in a thread."""

from __future__ import annotations

import dataclasses
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import uvicorn

from chainwarden import ExecutionGraph
from chainwarden.billing import Pricing, RunRecord, SqliteLedger, UsageFact
from chainwarden.cli.export import context_snapshot_json
from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.dag import Store

T0 = datetime(2026, 11, 20, 9, 0, tzinfo=UTC)
# Shown as text in the page, never run (the browser test watches for a dialog).
HOSTILE = '<img src=x onerror=alert(1)> & "quoted"'


@dataclasses.dataclass
class Sources:
    ledger: Path
    runs: Path
    store: str


def _record(
    run_id: str, account: str, at: datetime, context: dict[str, Any], status: str = "ok"
) -> RunRecord:
    return RunRecord(
        run_id=run_id,
        attempt=0,
        graph_id="inproc:agent",
        billing_account_id=account,
        virtual_key_id="vk-1",
        model="gpt-4o",
        status=status,
        started_at=at,
        ended_at=at + timedelta(seconds=2),
        prompt_tokens=100,
        completion_tokens=20,
        context=context,
    )


def _fact(run_id: str, account: str, unit: str, model: str, cost: str) -> UsageFact:
    return UsageFact(
        run_id=run_id,
        attempt=0,
        source="inproc",
        billing_account_id=account,
        virtual_key_id="vk-1",
        usage_unit_id=unit,
        model=model,
        input_tokens=50,
        output_tokens=10,
        cost_usd=Decimal(cost),
    )


def make_sources(directory: Path) -> Sources:
    ledger_path = directory / "ledger.sqlite3"
    pricing = Pricing(markup=1.0)
    with SqliteLedger(ledger_path) as ledger:
        ledger.create_account("acct-a", balance_credits=10_000_000)
        ledger.create_account("acct-b", balance_credits=10_000_000)
        runs = [
            ("run-1", "acct-a", T0, {"user_id": "alice", "session_id": "s-1", "tags": ["beta"]}, "ok"),
            ("run-2", "acct-a", T0 + timedelta(days=1), {"user_id": "bob", "tags": {"env": "prod"}}, "error"),
            ("run-3", "acct-b", T0 + timedelta(days=2), {"user_id": HOSTILE, "session_id": "s-1"}, "ok"),
        ]
        for run_id, account, at, context, status in runs:
            ledger.record_run(_record(run_id, account, at, context, status))
        facts = [
            ("run-1", "acct-a", "u1", "gpt-4o", "0.010"),
            ("run-1", "acct-a", "u2", "gpt-4o-mini", "0.002"),
            ("run-2", "acct-a", "u1", "gpt-4o", "0.020"),
            ("run-3", "acct-b", "u1", "claude-haiku-4-5", "0.005"),
        ]
        for i, (run_id, account, unit, model, cost) in enumerate(facts):
            ledger.commit_usage_fact(_fact(run_id, account, unit, model, cost), call_index=i, pricing=pricing)
    runs_dir = directory / "runs"
    (runs_dir / "nested").mkdir(parents=True)
    graph = ExecutionGraph(chain_id="file-graph")
    root = graph.create_root("agent", metadata={"user_id": "carol", "tags": ["nightly"]})
    call = graph.begin_node(root, "llm", "plan", model="gpt-4o", running=True)
    graph.mark_success(call, 0.25, tokens_in=300, tokens_out=40)
    failed = graph.begin_node(root, "tool", "search", running=True)
    graph.mark_failure(failed, "TimeoutError", stop_reason="search backend timed out")
    graph.mark_success(root, 0.0)
    (runs_dir / "graph-run.json").write_bytes(graph.snapshot_json())
    meta = ChainMetadata(request_id="r", chain_id="ctx-run", user_id="dave", session_id="s-9", tags=["beta"])
    with ExecutionContext(ExecutionConfig(1.0, 5, 1), metadata=meta) as ctx:
        ctx.wrap_llm_call(lambda: None, WrapOptions("draft", cost_estimate_hint=0.05))
    (runs_dir / "nested" / "ctx-run.json").write_bytes(context_snapshot_json(ctx.get_snapshot()))
    (runs_dir / "notes.json").write_text('{"not": "a run"}')
    store_url = f"sqlite:///{directory / 'dag.sqlite3'}"
    with Store.open(store_url) as store:
        g = store.create_graph("jobs")
        with g.mutate() as m:
            m.create_node("user_message", "finished", content="count", node_id="ask")
            for name in ("t1", "t2"):
                m.create_node("task", input={"name": "sql"}, node_id=name)
                m.create_edge("ask", name, "dependency")
    return Sources(ledger_path, runs_dir, store_url)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextmanager
def serving(app: Any) -> Iterator[str]:
    """``app`` served by uvicorn on 127.0.0.1 in a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, name="dashboard-under-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("the dashboard did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
