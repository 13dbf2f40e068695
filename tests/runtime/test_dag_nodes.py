"""DAG nodes executed through the port: each execution a run `dag.<graph>.<node>` under the node's attempt,
billed once; the node's output is the run's content; failures and refusals error the node with their code or
stop reason; `chainwarden inspect --reconcile` links every receipt to its node and recorded call."""

from __future__ import annotations

import json
import sqlite3
from contextlib import closing
from decimal import Decimal
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from runtime_helpers import request

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.cli.app import cli
from chainwarden.dag import Runner, Store, WorkerPool
from chainwarden.runtime import (
    AiRuntime,
    CreditPolicy,
    InProcGraphExecutor,
    LlmResult,
    RunContext,
    RunLimits,
    dag_node_executor,
)
from chainwarden.runtime.dag_node import conversation

SEEN: list[list[dict[str, Any]]] = []


async def echo(ctx: RunContext) -> str:
    """Answers with the number of turns it was given; one billed call per run."""
    SEEN.append(ctx.request.messages)

    async def call() -> LlmResult:
        return LlmResult(
            content=f"turns={len(ctx.request.messages)}",
            usage_unit_id=f"msg-{ctx.run_id}-{ctx.attempt}",
            input_tokens=10,
            output_tokens=2,
            cost_usd=Decimal("0.0001"),
        )

    return (await ctx.call_llm(call, cost_estimate_hint=0.0002)).content


def chat_graph(store: Store, graph_id: str = "chat") -> None:
    g = store.create_graph(graph_id)
    with g.mutate() as m:
        m.create_node("user_message", "finished", content="Hello", node_id="u1")
        m.create_node("agent_message", node_id="a1")
        m.create_edge("u1", "a1", "sequence")
        m.create_node("user_message", "finished", content="And then?", node_id="u2")
        m.create_node("agent_message", node_id="a2")
        m.create_edge("a1", "u2", "sequence")
        m.create_edge("u2", "a2", "sequence")
        m.create_edge("a1", "a2", "sequence")  # the second turn waits for the first answer


async def test_a_runner_executes_agent_nodes_as_runs_billed_once(tmp_path: Path) -> None:
    SEEN.clear()
    store_url = f"sqlite:///{tmp_path / 'dag.db'}"
    with Store.open(store_url) as store, SqliteLedger(tmp_path / "ledger.db") as ledger:
        chat_graph(store)
        runtime = AiRuntime({"inproc": InProcGraphExecutor(echo)}, ledger, Pricing(markup=1.0))
        executor = dag_node_executor(
            runtime, "inproc:chat", billing_account_id="acct-1", virtual_key_id="vk-1", model="m"
        )
        stats = await Runner(store.load("chat"), {"agent_message": executor}).arun_until_idle()
        assert stats.outcomes == {"finished": 2}
        g = store.load("chat")
        assert g.node("a1")["output"] == {
            "content": "turns=1",
            "run_id": "dag.chat.a1",
            "attempt": 0,
            "usage": {"prompt_tokens": 10, "completion_tokens": 2},
        }
        assert g.node("a2")["output"]["content"] == "turns=3"
        # The default messages: the node's causal context as a chat, full outputs.
        assert SEEN[1] == [
            {"role": "user", "content": "Hello"},
            {"role": "assistant", "content": "turns=1"},
            {"role": "user", "content": "And then?"},
        ]
        assert sorted(r.source_reference for r in ledger.receipts()) == [
            "dag.chat.a1/0/msg-dag.chat.a1-0",
            "dag.chat.a2/0/msg-dag.chat.a2-0",
        ]
        assert {(r.run_id, r.attempt, r.status) for r in ledger.runs()} == {
            ("dag.chat.a1", 0, "ok"),
            ("dag.chat.a2", 0, "ok"),
        }
        runtime.close()
    result = CliRunner().invoke(
        cli,
        ["inspect", "--reconcile", "--ledger", str(tmp_path / "ledger.db"), "--store", store_url, "--json"],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.output)
    assert report["clean"] and report["nodes_billed"] == 2 and report["charged_credits"] == 2_000
    assert [(r["node_id"], r["call_index"]) for r in report["receipts"]] == [("a1", 0), ("a2", 0)]


async def test_a_node_re_executed_after_its_lease_ran_out_bills_under_its_next_attempt(
    tmp_path: Path,
) -> None:
    with Store.open(f"sqlite:///{tmp_path / 'dag.db'}") as store, SqliteLedger(tmp_path / "l.db") as ledger:
        chat_graph(store)
        g = store.load("chat")
        # A worker claimed a1 and died: its lease runs out, the store counts an attempt.
        assert g.claim(1, worker_id="dead", lease_s=30) == ["a1"]
        until = g.node("a1")["metadata"]["lease_expires_at"]
        assert g.reclaim_expired(now=until + 1) == ["a1"]
        runtime = AiRuntime({"inproc": InProcGraphExecutor(echo)}, ledger)
        executor = dag_node_executor(
            runtime, "inproc:chat", billing_account_id="a", virtual_key_id="v", model="m"
        )
        await Runner(store.load("chat"), {"agent_message": executor}).arun_until_idle()
        assert [(r.run_id, r.attempt) for r in ledger.receipts(run_id="dag.chat.a1")] == [("dag.chat.a1", 1)]
        assert store.load("chat").node("a1")["output"]["attempt"] == 1
        runtime.close()


async def test_failures_and_refusals_error_the_node_with_their_code_or_stop_reason(tmp_path: Path) -> None:
    async def broken(ctx: RunContext) -> str:
        raise RuntimeError("graph bug")

    with Store.open(f"sqlite:///{tmp_path / 'dag.db'}") as store, SqliteLedger(tmp_path / "l.db") as ledger:
        ledger.create_account("poor", balance_credits=1_500)
        for gid in ("g-broken", "g-ceiling", "g-credits"):
            chat_graph(store, gid)
        cases = {
            "g-broken": AiRuntime({"inproc": InProcGraphExecutor(broken)}, ledger),
            # The second node's call would pass the run's $0.0001 ceiling with its estimate.
            "g-ceiling": AiRuntime(
                {"inproc": InProcGraphExecutor(echo, limits=RunLimits(max_cost_usd=0.0001))}, ledger
            ),
            # 1,500 credits: the first node holds 2,000 for its call: refused.
            "g-credits": AiRuntime(
                {"inproc": InProcGraphExecutor(echo)},
                ledger,
                Pricing(markup=1.0),
                credit_policy=CreditPolicy(),
            ),
        }
        errors = {}
        for gid, runtime in cases.items():
            account = "poor" if gid == "g-credits" else "acct-1"
            executor = dag_node_executor(
                runtime, "inproc:chat", billing_account_id=account, virtual_key_id="v", model="m"
            )
            await Runner(store.load(gid), {"agent_message": executor}).arun_until_idle()
            errors[gid] = store.load(gid).node("a1")["metadata"].get("error")
            runtime.close()
        assert errors == {
            "g-broken": "internal",
            "g-ceiling": "budget_exceeded",
            "g-credits": "insufficient_credits",
        }
        assert ledger.balance("poor") == 1_500


def test_a_worker_pool_serves_agent_nodes_through_the_runtime(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'dag.db'}"
    with Store.open(url) as store, SqliteLedger(tmp_path / "l.db") as ledger:
        for i in range(3):
            chat_graph(store, f"chat-{i}")
        runtime = AiRuntime({"inproc": InProcGraphExecutor(echo)}, ledger)
        executor = dag_node_executor(
            runtime, "inproc:chat", billing_account_id="a", virtual_key_id="v", model="m"
        )
        stats = WorkerPool(store, {"agent_message": executor}, concurrency=4, poll_s=0.05).run(
            until_idle=True
        )
        assert stats.outcomes == {"finished": 6}
        assert len(ledger.receipts()) == 6
        runtime.close()


async def test_reconcile_reports_what_does_not_match(tmp_path: Path) -> None:
    store_url = f"sqlite:///{tmp_path / 'dag.db'}"
    ledger_path = tmp_path / "ledger.db"
    with Store.open(store_url) as store, SqliteLedger(ledger_path) as ledger:
        chat_graph(store)
        runtime = AiRuntime({"inproc": InProcGraphExecutor(echo)}, ledger)
        executor = dag_node_executor(
            runtime, "inproc:chat", billing_account_id="a", virtual_key_id="v", model="m"
        )
        await Runner(store.load("chat"), {"agent_message": executor}).arun_until_idle()
        runtime.close()
    # A charge lost, another changed, one billed outside any run.
    with closing(sqlite3.connect(ledger_path)) as db, db:
        db.execute("DELETE FROM charge_receipts WHERE run_id = 'dag.chat.a1'")
        db.execute("UPDATE charge_receipts SET charged_credits = 1 WHERE run_id = 'dag.chat.a2'")
        db.execute(
            "INSERT INTO charge_receipts (source_system, source_reference, run_id, attempt, usage_unit_id, "
            "billing_account_id, virtual_key_id, charged_credits, created_at) VALUES ('inproc', "
            "'dag.chat.zz/0/x', 'dag.chat.zz', 0, 'x', 'a', 'v', 5, '2025-01-01T00:00:00+00:00')"
        )
    db.close()
    result = CliRunner().invoke(
        cli, ["inspect", "--reconcile", "chat", "--ledger", str(ledger_path), "--store", store_url, "--json"]
    )
    assert result.exit_code == 1
    report = json.loads(result.output)
    assert [c["node_id"] for c in report["calls_without_receipts"]] == ["a1"]
    assert [
        (m["node_id"], m["charged_credits"], m["expected_credits"]) for m in report["cost_mismatches"]
    ] == [("a2", 1, 2_000)]
    assert report["receipts_without_calls"] == [] and report["receipts_without_nodes"] == []
    everything = CliRunner().invoke(
        cli, ["inspect", "--reconcile", "--ledger", str(ledger_path), "--store", store_url, "--plain"]
    )
    assert everything.exit_code == 1
    assert "receipts without nodes" in everything.output and "dag.chat.zz/0/x" in everything.output
    bad = CliRunner().invoke(cli, ["inspect", "--reconcile", "--ledger", str(ledger_path)])
    assert bad.exit_code == 2 and "--store" in bad.output


def test_conversation_maps_the_context_to_a_chat() -> None:
    context = [
        {
            "node_id": "s",
            "node_type": "summary",
            "state": "finished",
            "payload": {"output": {"content": "earlier"}},
        },
        {
            "node_id": "u",
            "node_type": "user_message",
            "state": "finished",
            "payload": {"input": {"content": "q"}},
        },
        {
            "node_id": "t",
            "node_type": "task",
            "state": "finished",
            "payload": {"input": {"name": "search"}, "output": {"result": {"hits": 2}}},
        },
        {"node_id": "x", "node_type": "agent_message", "state": "errored", "payload": {"output": {}}},
        {"node_id": "a", "node_type": "agent_message", "state": "running", "payload": {}},
    ]
    assert conversation({"node_id": "a"}, context) == [
        {"role": "user", "content": "Summary of the conversation so far: earlier"},
        {"role": "user", "content": "q"},
        {"role": "user", "content": 'Result of search: {"hits": 2}'},
    ]
    assert request().run_id is None  # the helpers stay importable
