"""The HTML report in a real headless browser: Debian's chromium driven by Playwright.

`make test` finds (or installs) chromium with scripts/chromium-path.sh and passes it in CHAINWARDEN_CHROMIUM.
Playwright only drives it; no browser is downloaded."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, sync_playwright
from run_fixtures import HOSTILE, save_containment_run, save_dag_run, save_graph_run

from chainwarden import ExecutionGraph
from chainwarden.cli import main
from chainwarden.cli.export import context_snapshot_json
from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext, WrapOptions
from chainwarden.dag import Graph

pytestmark = pytest.mark.slow  # a real browser per module (docs/testing.md)


def _chromium() -> str:
    path = (
        os.environ.get("CHAINWARDEN_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    )
    if not path:
        pytest.fail("no chromium: run `make test` (scripts/chromium-path.sh installs Debian's chromium)")
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as pw:
        # --no-sandbox: CI runs as root, where chromium's sandbox refuses to start.
        launched = pw.chromium.launch(executable_path=_chromium(), args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def _open(browser: Browser, report: Path, shot: Path) -> tuple[str, list[str], list[str]]:
    """Loads the report; returns its visible text, console errors / page errors / dialogs, and every URL
    the page asked for."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    problems: list[str] = []
    requests: list[str] = []
    page.on(
        "console",
        lambda msg: (
            problems.append(f"console.{msg.type}: {msg.text}") if msg.type in ("error", "warning") else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.on("request", lambda request: requests.append(request.url))
    page.goto(report.as_uri())
    page.wait_for_selector("html[data-ready='1']", timeout=15_000)  # the report's script ran to the end
    text = page.inner_text("body")
    page.screenshot(path=str(shot), full_page=True)
    page.close()
    return text, problems, requests


def test_call_graph_report_shows_every_node_without_errors(browser: Browser, tmp_path: Path) -> None:
    g, path = save_graph_run(tmp_path / "run.json")
    report = tmp_path / "report.html"
    assert main(["render", str(path), "--format", "html", "-o", str(report)]) == 0
    shot = tmp_path / "report.png"
    text, problems, requests = _open(browser, report, shot)
    assert problems == []
    assert requests == [report.as_uri()]  # nothing fetched but the file itself
    for node in g.snapshot()["nodes"].values():
        assert node["name"] in text, node["name"]
    assert HOSTILE in text  # the hostile name is text on the page, and no script of it ran (no dialog)
    assert "TimeoutError: metrics backend timed out" in text
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 10_000


@pytest.mark.parametrize("kind", ["containment", "dag"])
def test_other_reports_load_without_errors(browser: Browser, tmp_path: Path, kind: str) -> None:
    if kind == "dag":
        g, path = save_dag_run(tmp_path / "run.json")
        names = [n["node_id"] for n in g.nodes()]
    else:
        path = save_containment_run(tmp_path / "run.json")
        names = ["plan", "search", "draft", "polish"]
    report = tmp_path / "report.html"
    assert main(["render", str(path), "-o", str(report)]) == 0
    text, problems, requests = _open(browser, report, tmp_path / "report.png")
    assert (problems, requests) == ([], [report.as_uri()])
    for name in names:
        assert name in text
    assert (tmp_path / "report.png").stat().st_size > 10_000


def test_sorting_a_column_reorders_the_calls(browser: Browser, tmp_path: Path) -> None:
    _, path = save_graph_run(tmp_path / "run.json")
    report = tmp_path / "report.html"
    assert main(["render", str(path), "-o", str(report)]) == 0
    page = browser.new_page()
    page.goto(report.as_uri())
    page.click("#calls th:has-text('cost')")
    page.click("#calls th:has-text('cost')")  # second click: descending
    first = page.inner_text("#calls tbody tr:first-child td.name")
    page.close()
    assert first == "answer"  # the most expensive call


def _hostile(field: str) -> str:
    """A value for `field` that becomes an element (and runs a script) unless escaped where it is shown."""
    return f'<i data-pwn="{field}">{field}</i>"\'><img src=x onerror=alert("{field}")>'


def _hostile_runs(tmp_path: Path) -> list[tuple[Path, list[str]]]:
    """Each kind of saved run with a hostile string in every field a report may show."""
    g = ExecutionGraph(chain_id=_hostile("chain_id"))
    root = g.create_root(_hostile("root name"), metadata={"note": _hostile("metadata")})
    call = g.begin_node(root, "llm", _hostile("name"), model=_hostile("model"), running=True)
    g.mark_failure(call, _hostile("error_class"), stop_reason=_hostile("stop_reason"))
    halted = g.begin_node(root, "tool", "halted", running=True)
    g.mark_halt(halted, stop_reason=_hostile("halt reason"))
    graph_path = tmp_path / "graph.json"
    graph_path.write_bytes(g.snapshot_json())

    meta = ChainMetadata(request_id="r", chain_id=_hostile("ctx chain_id"))
    ctx = ExecutionContext(
        ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=0), metadata=meta
    )

    def fails() -> None:
        raise ValueError(_hostile("error_message"))

    ctx.wrap_llm_call(fails, WrapOptions(_hostile("operation_name"), model=_hostile("ctx model")))
    ctx_path = tmp_path / "ctx.json"
    ctx_path.write_bytes(context_snapshot_json(ctx.get_snapshot()))

    dag = Graph(graph_id="hostile-dag")
    with dag.mutate() as m:
        m.create_node("user_message", "finished", content=_hostile("content"), node_id="ask")
        m.create_node(
            "task",
            "errored",
            input={"name": _hostile("tool")},
            metadata={"error": _hostile("dag error"), "model": _hostile("dag model")},
            node_id="tool",
        )
        m.create_edge("ask", "tool", "dependency")
    dag_path = tmp_path / "dag.json"
    dag_path.write_bytes(dag.to_json())
    return [
        (graph_path, ["chain_id", "name", "model", "error_class", "stop_reason", "halt reason"]),
        (ctx_path, ["ctx chain_id", "operation_name", "ctx model", "error_message"]),
        (dag_path, ["tool", "dag error", "dag model"]),
    ]


@pytest.mark.parametrize("which", [0, 1, 2], ids=["execution-graph", "containment", "dag"])
def test_every_field_of_every_run_is_shown_as_text(browser: Browser, tmp_path: Path, which: int) -> None:
    """Each string a run carries (names, models, error classes and messages, stop reasons, ids) is shown as
    text, never as markup: a single field left unescaped in the report fails here."""
    path, fields = _hostile_runs(tmp_path)[which]
    report = path.with_suffix(".html")
    assert main(["render", str(path), "-o", str(report)]) == 0
    page = browser.new_page(viewport={"width": 1600, "height": 1000})
    problems: list[str] = []
    page.on("dialog", lambda dialog: (problems.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda exc: problems.append(str(exc)))
    page.goto(report.as_uri())
    page.wait_for_selector("html[data-ready='1']", timeout=15_000)
    injected = page.evaluate("document.querySelectorAll('[data-pwn], img[onerror]').length")
    text = page.inner_text("body")
    page.close()
    assert (injected, problems) == (0, [])
    missing = [f for f in fields if f'<i data-pwn="{f}">{f}</i>' not in text]
    assert missing == [], f"fields not shown as text: {missing}"
