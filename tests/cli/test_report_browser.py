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

from chainwarden.cli import main

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
    page.wait_for_selector("html[data-ready='1']")
    page.click(".head [data-sort='cost']")  # costs sort the most expensive first
    first = page.evaluate(
        "[...document.querySelectorAll('#viewport .row')].filter(r => r.style.display !== 'none')"
        ".sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)[0]"
        ".querySelector('.nm .label').textContent"
    )
    page.close()
    assert first == "answer"  # the most expensive call
