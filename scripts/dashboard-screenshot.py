"""Regenerates docs/img/dashboard.png and docs/img/dashboard-dag.png, the pictures of `chainwarden serve`.

    .venv/bin/python scripts/dashboard-screenshot.py [--chromium /usr/bin/chromium]

Builds a SQLite ledger with a week of simulated runs (run records with their users, sessions and tags, and
their receipts), a directory with a saved run file and a SQLite DAG store with a job graph half run by a
worker, serves them with uvicorn on 127.0.0.1 and photographs the runs view (one run selected) and the live
DAG through Debian's chromium and Playwright."""

from __future__ import annotations

import argparse
import random
import socket
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import uvicorn
from playwright.sync_api import sync_playwright

from chainwarden import ExecutionGraph
from chainwarden.billing import Pricing, RunRecord, SqliteLedger, UsageFact
from chainwarden.dag import ExecutionResult, Runner, Store
from chainwarden.ui.app import create_app

IMG = Path(__file__).resolve().parents[1] / "docs" / "img"
USERS = ("alice", "bob", "carol", "dave", "erin")
MODELS = (
    ("gpt-4o", "0.012"),
    ("gpt-4o-mini", "0.0009"),
    ("claude-sonnet-4-6", "0.015"),
    ("claude-haiku-4-5", "0.002"),
)


def ledger(path: Path) -> None:
    rng = random.Random(11)
    start = datetime(2026, 11, 18, 8, 0, tzinfo=UTC)
    with SqliteLedger(path) as led:
        for account in ("acct-acme", "acct-globex", "acct-initech"):
            led.create_account(account, balance_credits=10**9)
        for i in range(60):
            at = start + timedelta(hours=rng.randint(0, 24 * 7), minutes=rng.randint(0, 59))
            account = rng.choice(("acct-acme", "acct-acme", "acct-globex", "acct-initech"))
            user = rng.choice(USERS)
            status = "error" if rng.random() < 0.12 else "ok"
            context = {
                "user_id": user,
                "session_id": f"sess-{rng.randint(100, 140)}",
                "tags": rng.sample(["beta", "eu", "us", "batch", "chat"], 2),
            }
            run_id = f"run-{i:04d}"
            calls = rng.randint(1, 6)
            for unit in range(calls):
                model, base = rng.choice(MODELS)
                fact = UsageFact(
                    run_id=run_id,
                    attempt=0,
                    source="inproc",
                    billing_account_id=account,
                    virtual_key_id="vk-1",
                    usage_unit_id=f"u{unit}",
                    model=model,
                    input_tokens=rng.randint(200, 4000),
                    output_tokens=rng.randint(20, 600),
                    cost_usd=Decimal(base) * rng.randint(1, 9),
                )
                led.commit_usage_fact(fact, call_index=unit, pricing=Pricing(markup=1.5))
            led.record_run(
                RunRecord(
                    run_id=run_id,
                    attempt=0,
                    graph_id=rng.choice(("inproc:support", "inproc:research")),
                    billing_account_id=account,
                    virtual_key_id="vk-1",
                    model="gpt-4o",
                    status=status,
                    started_at=at,
                    ended_at=at + timedelta(seconds=rng.randint(2, 90)),
                    prompt_tokens=rng.randint(500, 9000),
                    completion_tokens=rng.randint(50, 900),
                    error="aborted" if status == "error" else None,
                    context=context,
                )
            )


def run_file(directory: Path) -> None:
    g = ExecutionGraph(chain_id="nightly-eval")
    root = g.create_root("eval_run", metadata={"user_id": "ci", "tags": ["nightly"]})
    for i in range(40):
        call = g.begin_node(root, "llm", f"case_{i}", model="gpt-4o-mini", running=True)
        if i % 13 == 5:
            g.mark_failure(call, "RateLimitError", stop_reason="429 from the provider")
        else:
            g.mark_success(call, 0.0009, tokens_in=400, tokens_out=60)
    g.mark_success(root, 0.0)
    (directory / "nightly-eval.json").write_bytes(g.snapshot_json())


def dag(url: str) -> None:
    with Store.open(url) as store:
        g = store.create_graph("report-jobs")
        with g.mutate() as m:
            m.create_node("user_message", "finished", content="weekly report", node_id="ask")
            for name in ("sales", "churn", "support", "infra"):
                m.create_node("task", input={"name": f"query_{name}"}, node_id=name)
                m.create_edge("ask", name, "dependency")
            m.create_node("task", input={"name": "write_report"}, node_id="report")
            for name in ("sales", "churn", "support", "infra"):
                m.create_edge(name, "report", "dependency")

        def tool(node: dict, context: list) -> ExecutionResult:
            if node["node_id"] == "support":
                raise ConnectionError("ticket API unreachable")
            return ExecutionResult.finished(output={"rows": 42})

        Runner(g, {"task": tool}).tick(2)  # sales and churn run; support, infra wait
        g.claim(1)  # a worker is on one more


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        ledger(root / "ledger.sqlite3")
        (root / "runs").mkdir()
        run_file(root / "runs")
        store = f"sqlite:///{root / 'dag.sqlite3'}"
        dag(store)
        app = create_app(ledger=str(root / "ledger.sqlite3"), store=store, runs=str(root / "runs"))
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        while not server.started:
            time.sleep(0.05)
        try:
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
                page = browser.new_page(viewport={"width": 1400, "height": 860}, device_scale_factor=1)
                page.goto(f"http://127.0.0.1:{port}/")
                page.wait_for_selector("html[data-ready='1']")
                page.click("#runs tbody tr >> nth=2")
                page.wait_for_selector("html[data-busy='0']")
                page.wait_for_timeout(200)
                page.screenshot(path=str(IMG / "dashboard.png"))
                page.click("nav button[data-tab=dags]")
                page.click("#graphs button[data-graph=report-jobs]")
                page.wait_for_selector("#dag [data-id=report]")
                page.screenshot(path=str(IMG / "dashboard-dag.png"))
                browser.close()
        finally:
            server.should_exit = True
            thread.join(timeout=10)
    for name in ("dashboard.png", "dashboard-dag.png"):
        print(f"wrote {IMG / name} ({(IMG / name).stat().st_size:,} bytes)")


if __name__ == "__main__":
    main_()
