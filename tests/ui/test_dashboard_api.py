"""``chainwarden serve``'s API over a real SQLite ledger, run files and a SQLite DAG store: runs and their
filters, spend by account / model / day (exact against the receipts), one run's receipts or calls, the DAG
and its event stream; nothing but GET, nothing outside the run directory, no foreign Host."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from dashboard_fixtures import HOSTILE, Sources, make_sources
from starlette.testclient import TestClient

from chainwarden.billing import SqliteLedger
from chainwarden.cli import main
from chainwarden.ui.app import create_app
from chainwarden.vocab import DagState


@pytest.fixture
def sources(tmp_path: Path) -> Sources:
    return make_sources(tmp_path)


@pytest.fixture
def client(sources: Sources) -> Iterator[TestClient]:
    app = create_app(ledger=str(sources.ledger), store=sources.store, runs=str(sources.runs), poll_s=0.05)
    with TestClient(app, base_url="http://127.0.0.1") as test_client:
        yield test_client


def _runs(client: TestClient, **params: str) -> list[dict[str, Any]]:
    answer = client.get("/api/runs", params=params)
    assert answer.status_code == 200
    runs: list[dict[str, Any]] = answer.json()["runs"]
    return runs


def test_runs_from_the_ledger_and_the_run_files_latest_first(client: TestClient) -> None:
    body = client.get("/api/runs").json()
    ids = [r["run_id"] for r in body["runs"]]
    assert set(ids) == {
        "run-1",
        "run-2",
        "run-3",
        "graph-run.json",
        "nested/ctx-run.json",
    }  # notes.json is no run
    ledger_ids = [i for i in ids if i.startswith("run-")]
    assert ledger_ids == ["run-3", "run-2", "run-1"]
    assert body["accounts"] == ["acct-a", "acct-b"] and body["statuses"] == ["error", "ok"]
    run1 = next(r for r in body["runs"] if r["run_id"] == "run-1")
    assert (run1["user_id"], run1["session_id"], run1["tags"], run1["credits"]) == (
        "alice",
        "s-1",
        ["beta"],
        120_000,
    )
    graph_file = next(r for r in body["runs"] if r["run_id"] == "graph-run.json")
    assert (graph_file["status"], graph_file["user_id"], graph_file["calls"]) == ("error", "carol", 3)
    assert graph_file["cost_usd"] == pytest.approx(0.25)


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"account": "acct-a"}, {"run-1", "run-2"}),
        ({"user": "bob"}, {"run-2"}),
        ({"session": "s-1"}, {"run-1", "run-3"}),
        ({"tag": "beta"}, {"run-1", "nested/ctx-run.json"}),
        ({"tag": "env"}, {"run-2"}),  # a dict tag matches by its key
        ({"tag": "env=prod"}, {"run-2"}),
        ({"status": "error"}, {"run-2", "graph-run.json"}),
        ({"since": "2026-11-21", "until": "2026-11-22", "account": "acct-a"}, {"run-2"}),
        ({"q": "ctx"}, {"nested/ctx-run.json"}),
        ({"user": HOSTILE}, {"run-3"}),
    ],
)
def test_filters(client: TestClient, params: dict[str, str], expected: set[str]) -> None:
    assert {r["run_id"] for r in _runs(client, **params)} == expected


def test_spend_by_account_model_and_day_is_the_receipts_sum(client: TestClient, sources: Sources) -> None:
    with SqliteLedger(sources.ledger) as ledger:
        receipts = ledger.receipts()
    by_account = {e["key"]: e for e in client.get("/api/spend", params={"by": "account"}).json()["rows"]}
    for account in ("acct-a", "acct-b"):
        mine = [r for r in receipts if r.billing_account_id == account]
        assert by_account[account]["credits"] == sum(r.charged_credits for r in mine)
        assert Decimal(str(by_account[account]["usd"])) == sum(r.response_cost_usd or 0 for r in mine)
    assert by_account["(no account)"]["usd"] == pytest.approx(0.30)  # the run files' calls: 0.25 + 0.05
    by_model = {
        e["key"]: e["credits"] for e in client.get("/api/spend", params={"by": "model"}).json()["rows"]
    }
    assert by_model["gpt-4o"] == 300_000 and by_model["gpt-4o-mini"] == 20_000
    days = client.get("/api/spend", params={"by": "day", "account": "acct-a", "user": "alice"}).json()["rows"]
    assert [(d["credits"], d["calls"]) for d in days] == [(120_000, 2)]  # only run-1's two receipts
    assert client.get("/api/spend", params={"by": "weekday"}).status_code == 400


def test_one_run_with_its_receipts_or_its_calls(client: TestClient) -> None:
    ledger_run = client.get("/api/ledger/runs/run-1").json()
    assert [r["credits"] for r in ledger_run["receipts"]] == [100_000, 20_000]
    assert Decimal(ledger_run["receipts"][0]["cost_usd"]) == Decimal("0.010")  # exact, as a decimal string
    assert ledger_run["context"]["session_id"] == "s-1"
    file_run = client.get("/api/files/graph-run.json").json()
    assert [c["name"] for c in file_run["stopped"]] == ["search"]
    assert file_run["summary"]["context"]["user_id"] == "carol"
    report = client.get("/report/nested/ctx-run.json")
    assert report.status_code == 200 and "Content-Security-Policy" in report.text
    assert client.get("/api/ledger/runs/nope").status_code == 404
    assert client.get("/api/files/missing.json").status_code == 404


@pytest.mark.parametrize(
    "name", ["../ledger.sqlite3", "..%2Fledger.sqlite3", "nested/../../ledger.sqlite3", "notes.json"]
)
def test_nothing_outside_the_run_directory_is_served(client: TestClient, name: str) -> None:
    assert client.get(f"/api/files/{name}").status_code == 404
    assert client.get(f"/report/{name}").status_code == 404


def test_the_dag_and_its_event_stream(client: TestClient) -> None:
    assert client.get("/api/graphs").json()["graphs"] == ["jobs"]
    graph = client.get("/api/graphs/jobs").json()
    assert {n["id"]: n["state"] for n in graph["nodes"]} == {
        "ask": "finished",
        "t1": "pending",
        "t2": "pending",
    }
    assert sorted(graph["edges"]) == [["ask", "t1", "dependency"], ["ask", "t2", "dependency"]]
    with client.stream("GET", "/api/graphs/jobs/events") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        lines = stream.iter_lines()
        assert next(lines) == "event: graph"
        assert '"version": 1' in next(lines)
    assert client.get("/api/graphs/nope").status_code == 404


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
@pytest.mark.parametrize("path", ["/", "/api/runs", "/api/graphs/jobs", "/api/ledger/runs/run-1"])
def test_there_are_no_write_endpoints(client: TestClient, method: str, path: str) -> None:
    assert client.request(method, path).status_code == 405


def test_a_foreign_host_is_refused_on_localhost(client: TestClient) -> None:
    assert client.get("/api/runs", headers={"Host": "attacker.example"}).status_code == 400
    assert client.get("/api/runs", headers={"Host": "localhost:8321"}).status_code == 200


def test_the_page_forbids_inline_and_foreign_scripts(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and '<script src="/static/dashboard.js">' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert client.get("/static/dashboard.js").headers["content-type"].startswith("text/javascript")
    assert client.get("/static/../app.py").status_code == 404


def test_the_command_needs_a_source_and_names_bad_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve"]) == 2
    assert "at least one of --ledger, --store, --runs" in capsys.readouterr().err
    (tmp_path / "x.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    assert main(["serve", "--ledger", str(tmp_path / "x.sqlite3")]) == 1
    assert str(tmp_path / "x.sqlite3") in capsys.readouterr().err


def test_the_page_carries_the_cores_dag_states(client: TestClient) -> None:
    """The dashboard's legend and counts read the DAG states the server wrote into the page; the script keeps
    no list of them (docs/errors.md "Vocabularies")."""
    page = client.get("/").text
    assert f'data-states="{" ".join(DagState)}"' in page
    script = (Path(create_app.__code__.co_filename).parent / "dashboard.js").read_text()
    assert not any(f'"{state}"' in script for state in DagState)
