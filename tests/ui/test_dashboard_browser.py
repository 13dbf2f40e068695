"""``chainwarden serve`` in a real headless browser (Debian's chromium, driven by Playwright) against a real
uvicorn server: the page loads without console errors, filters and charts work, a hostile string is text, and
a DAG node committed by a worker shows its new state within 2 s (the dashboard's promise, docs/ui.md)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dashboard_fixtures import HOSTILE, Sources, make_sources, serving
from headless import launched
from playwright.sync_api import Browser, Page

from chainwarden.dag import Store
from chainwarden.ui.app import create_app
from chainwarden.vocab import DagState

pytestmark = pytest.mark.slow

LIVE_S = 2.0  # what docs/ui.md promises between a commit and the page showing it


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as opened:
        yield opened


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Sources]]:
    sources = make_sources(tmp_path)
    app = create_app(ledger=str(sources.ledger), store=sources.store, runs=str(sources.runs), poll_s=0.1)
    with serving(app) as url:
        yield url, sources


def _open(browser: Browser, url: str, problems: list[str]) -> Page:
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.on(
        "console",
        lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("dialog", lambda d: (problems.append(f"dialog: {d.message}"), d.dismiss()))
    page.goto(url)
    page.wait_for_selector("html[data-ready='1']", timeout=20_000)
    return page


def _settled(page: Page) -> None:
    page.wait_for_selector("html[data-busy='0']", timeout=10_000)


def test_runs_filters_and_spend_without_console_errors(
    browser: Browser, served: tuple[str, Sources], tmp_path: Path
) -> None:
    url, _ = served
    problems: list[str] = []
    page = _open(browser, url + "/", problems)
    assert page.locator("#runs tbody tr").count() == 5
    assert HOSTILE in page.inner_text("#runs")  # text, not markup: no image, no dialog
    assert page.locator("#runs img").count() == 0
    page.fill("#filters input[name=user]", "bob")
    page.wait_for_timeout(400)
    _settled(page)
    assert [t.strip() for t in page.locator("#runs tbody tr td:first-child").all_inner_texts()] == ["run-2"]
    page.click("#runs tbody tr")
    _settled(page)
    assert "Receipts" in page.inner_text("#run-detail")
    page.click("#filters button[type=reset]")
    page.click("nav button[data-tab=spend]")
    _settled(page)
    assert page.locator("#by-model rect.bar").count() == 4  # gpt-4o, gpt-4o-mini, claude-haiku, the files'
    assert "acct-a" in page.inner_text("#by-account")
    page.screenshot(path=str(tmp_path / "dashboard-spend.png"))
    page.close()
    assert problems == []
    assert (tmp_path / "dashboard-spend.png").stat().st_size > 10_000


def test_a_dag_node_change_shows_within_two_seconds_of_its_commit(
    browser: Browser, served: tuple[str, Sources], tmp_path: Path
) -> None:
    url, sources = served
    problems: list[str] = []
    page = _open(browser, url + "/#dags", problems)
    page.click("#graphs button[data-graph=jobs]")
    page.wait_for_selector("#dag [data-id=t1][data-state=pending]", timeout=10_000)
    # The legend names the core's DAG states, in its order (the script has no list of its own).
    assert page.locator("#dag-legend span").all_inner_texts() == list(DagState)
    seen: dict[str, float] = {}
    with Store.open(sources.store) as store:  # a worker, in its own connection
        graph = store.load("jobs")
        for state in ("running", "finished"):
            if state == "running":
                assert graph.claim(1) == ["t1"]
            else:
                graph.mark_finished("t1", output={"rows": 3})
            committed = time.monotonic()  # the call returned: the change is committed (docs/dag.md)
            selector = f"#dag [data-id=t1][data-state={state}]"
            while time.monotonic() - committed < LIVE_S and page.locator(selector).count() == 0:
                page.wait_for_timeout(25)
            seen[state] = time.monotonic() - committed
            assert page.locator(selector).count() == 1, f"{state} not shown within {LIVE_S} s"
    assert "finished" in page.inner_text("#dag-status")
    page.screenshot(path=str(tmp_path / "dashboard-dag.png"))
    page.close()
    assert problems == []
    assert all(delay < LIVE_S for delay in seen.values()), seen
