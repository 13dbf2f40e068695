"""`chainwarden inspect LEDGER`: the runs of a ledger (SQLite file or PostgreSQL URL), one run's receipts."""

from __future__ import annotations

import json
import sqlite3
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest
from psycopg.conninfo import conninfo_to_dict

from chainwarden.billing import Ledger, PostgresLedger, Pricing, SqliteLedger
from chainwarden.cli import main
from chainwarden.runtime import AiRuntime, GraphRunRequest, InProcGraphExecutor, LlmResult, RunContext


async def agent(ctx: RunContext) -> str:
    async def call() -> LlmResult:
        return LlmResult(
            content="ok",
            model="sim-1",
            usage_unit_id=f"u-{ctx.run_id}",
            input_tokens=11,
            output_tokens=4,
            cost_usd=Decimal("0.002"),
        )

    await ctx.call_llm(call)
    if ctx.request.messages[0]["content"] == "fail":
        raise RuntimeError("boom")
    return "fine"


async def record_two_runs(ledger: Ledger) -> None:
    runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger, Pricing(markup=1.0))
    for run_id, text in (("run-a", "hello"), ("run-b", "fail")):
        req = GraphRunRequest(
            graph_id="inproc:agent",
            messages=[{"role": "user", "content": text}],
            model="sim-1",
            billing_account_id="acct-1",
            virtual_key_id="vk-1",
            run_id=run_id,
        )
        async with runtime.run(req) as run:
            await run.final
            await run.billing_settled()


def inspect_json(source: str, capsys: pytest.CaptureFixture[str], *extra: str) -> dict[str, Any]:
    assert main(["inspect", source, "--json", *extra]) == 0
    result: dict[str, Any] = json.loads(capsys.readouterr().out)
    return result


@pytest.fixture
def postgres_url(postgres_schema: str) -> str:
    """The test schema as a postgresql:// URL (inspect takes URLs, as users paste them)."""
    params = conninfo_to_dict(postgres_schema)
    query = urlencode({k: str(v) for k, v in params.items() if k not in ("user", "dbname")}, quote_via=quote)
    return f"postgresql://{params.get('user', 'postgres')}@/{params.get('dbname', 'postgres')}?{query}"


async def test_a_sqlite_ledger_lists_its_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ledger.sqlite3"
    with SqliteLedger(path) as ledger:
        await record_two_runs(ledger)
    listed = inspect_json(str(path), capsys)
    runs = {r["run_id"]: r for r in listed["runs"]}
    assert set(runs) == {"run-a", "run-b"}
    assert (runs["run-a"]["status"], runs["run-a"]["error"]) == ("ok", None)
    assert (runs["run-b"]["status"], runs["run-b"]["error"]) == ("error", "internal")
    assert (runs["run-a"]["prompt_tokens"], runs["run-a"]["completion_tokens"]) == (11, 4)
    assert runs["run-a"]["receipts"] == runs["run-b"]["receipts"] == 1
    assert runs["run-a"]["charged_credits"] > 0 and runs["run-a"]["duration_s"] >= 0

    shown = inspect_json(str(path), capsys, "--run", "run-b")
    assert [r["run_id"] for r in shown["runs"]] == ["run-b"]
    assert [r["source_reference"] for r in shown["receipts"]] == ["run-b/0/u-run-b"]
    assert Decimal(shown["receipts"][0]["response_cost_usd"]) == Decimal("0.002")

    assert main(["inspect", str(path), "--plain"]) == 0
    plain = capsys.readouterr().out
    assert "run-a" in plain and "error (internal)" in plain and "11 / 4" in plain


async def test_a_postgres_ledger_is_inspected_by_url(
    postgres_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with PostgresLedger(postgres_url) as ledger:
        await record_two_runs(ledger)
    listed = inspect_json(postgres_url, capsys, "--limit", "1")
    assert len(listed["runs"]) == 1 and listed["runs"][0]["run_id"] == "run-b"
    assert "password" not in listed["ledger"]


def test_what_is_not_a_ledger_is_refused_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.sqlite3"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE things (x)")
    conn.close()
    assert main(["inspect", str(other)]) == 1
    assert "not a chainwarden ledger" in capsys.readouterr().err
    with sqlite3.connect(other) as conn:  # and it was left as it was
        assert [r[0] for r in conn.execute("SELECT name FROM sqlite_master")] == ["things"]
    conn.close()

    path = tmp_path / "ledger.sqlite3"
    SqliteLedger(path).close()
    assert main(["inspect", str(path), "--run", "nope"]) == 1
    assert "no run 'nope'" in capsys.readouterr().err
    run_file = tmp_path / "run.json"
    run_file.write_text("{}")
    assert main(["inspect", str(run_file), "--run", "x"]) == 2
    assert "--run applies to a ledger" in capsys.readouterr().err
