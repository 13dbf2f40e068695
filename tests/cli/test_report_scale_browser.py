"""The HTML report at 100,000 calls, and every string of a hostile run, in a real headless browser.

Debian's chromium driven by Playwright (scripts/chromium-path.sh, as in test_report_browser.py). The page must
load without a console error, keep a bounded number of DOM elements whatever it shows, find a named call by
search, and show a call's details (metadata, error, tokens, cost, captured content) as text."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from headless import launched
from playwright.sync_api import Browser, Page
from run_fixtures import HOSTILE, NEEDLE, save_big_run

from chainwarden import ExecutionGraph
from chainwarden.cli import main

pytestmark = pytest.mark.slow

# The page's own elements plus a pool of rows: about 1,600 at 1280x900, whatever the run's size.
DOM_BOUND = 2_500


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with launched() as opened:
        yield opened


def _page(browser: Browser, report: Path, problems: list[str]) -> Page:
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.on(
        "console",
        lambda m: problems.append(f"{m.type}: {m.text}") if m.type in ("error", "warning") else None,
    )
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("dialog", lambda dialog: (problems.append(f"dialog: {dialog.message}"), dialog.dismiss()))
    page.goto(report.as_uri())
    page.wait_for_selector("html[data-ready]", timeout=60_000)
    assert page.get_attribute("html", "data-ready") == "1", page.inner_text("#status-line")
    return page


def _wait(page: Page, predicate: str, timeout_s: float = 30.0) -> None:
    """Polls ``predicate`` with ``page.evaluate``: ``wait_for_function`` compiles its predicate with
    ``new Function``, which the report's Content-Security-Policy (rightly) refuses."""
    deadline = time.monotonic() + timeout_s
    while not page.evaluate(predicate):
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {predicate}: count is {page.inner_text('#count')!r}")
        page.wait_for_timeout(50)


def _elements(page: Page) -> int:
    count: int = page.evaluate("document.querySelectorAll('*').length")
    return count


def _visible_names(page: Page) -> list[str]:
    names: list[str] = page.evaluate(
        "[...document.querySelectorAll('#viewport .row')].filter(r => r.style.display !== 'none')"
        ".sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top)"
        ".map(r => r.querySelector('.nm .label').textContent)"
    )
    return names


@pytest.fixture(scope="module")
def big_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    directory = tmp_path_factory.mktemp("big")
    _, path, needle = save_big_run(directory / "run.json")
    report = directory / "report.html"
    assert main(["render", str(path), "-o", str(report)]) == 0
    return report, needle


def test_a_100k_call_report_is_small_and_loads_without_errors(
    browser: Browser, big_report: tuple[Path, str]
) -> None:
    report, _ = big_report
    assert report.stat().st_size < 200 * 100_000  # under 200 bytes a call
    problems: list[str] = []
    page = _page(browser, report, problems)
    assert page.get_attribute("html", "data-calls") == "100000"
    assert _elements(page) < DOM_BOUND
    page.screenshot(path=str(report.with_suffix(".png")))
    page.close()
    assert problems == []
    assert report.with_suffix(".png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_search_finds_a_named_call_among_100k_and_the_dom_stays_bounded(
    browser: Browser, big_report: tuple[Path, str]
) -> None:
    report, needle = big_report
    problems: list[str] = []
    page = _page(browser, report, problems)
    page.fill("#q", NEEDLE[:12])
    _wait(page, "document.getElementById('count').textContent.startsWith('1 of')")
    assert _visible_names(page) == [NEEDLE]
    page.press("#q", "Enter")  # selects the first match
    detail = page.inner_text("#detail")
    assert NEEDLE in detail and needle in detail
    page.click("#detail button:has-text('Show in the call tree')")
    _wait(page, "document.getElementById('count').textContent.indexOf('rows shown') > 0")
    assert NEEDLE in _visible_names(page)  # its step was expanded and scrolled to
    assert page.evaluate("document.querySelector('#viewport .row.sel .nm .label').textContent") == NEEDLE
    assert _elements(page) < DOM_BOUND
    page.click("#expand")  # all 100,000 rows in the tree: still a pool of rows
    page.evaluate("document.getElementById('viewport').scrollTop = 1e9")
    page.wait_for_timeout(100)
    assert "tool_" in "".join(_visible_names(page))
    assert _elements(page) < DOM_BOUND
    page.select_option("#f-status", "stopped")
    _wait(page, "document.getElementById('count').textContent.indexOf(' of ') > 0")
    count = page.inner_text("#count")
    page.close()
    assert problems == []
    assert count.startswith("163 of 100,000")  # 100 failures and 63 halts in the fixture


def _hostile_run(path: Path) -> ExecutionGraph:
    g = ExecutionGraph(chain_id=HOSTILE)
    context = {"user_id": HOSTILE, "session_id": HOSTILE, "tags": [HOSTILE], "attributes": {HOSTILE: HOSTILE}}
    root = g.create_root(HOSTILE, metadata=context)
    call = g.begin_node(root, "llm", HOSTILE + " 1", model=HOSTILE, metadata={HOSTILE: HOSTILE}, running=True)
    g.annotate(call, {"content_input": HOSTILE + " in", "content_output": HOSTILE + " out"})
    g.mark_success(call, 0.25, tokens_in=1234, tokens_out=56)
    broken = g.begin_node(root, "tool", HOSTILE + " 2", running=True)
    g.mark_failure(broken, HOSTILE, stop_reason=HOSTILE)
    path.write_bytes(g.snapshot_json())
    return g


def test_every_string_of_a_hostile_run_is_shown_as_text(browser: Browser, tmp_path: Path) -> None:
    g = _hostile_run(tmp_path / "run.json")
    report = tmp_path / "report.html"
    assert main(["render", str(tmp_path / "run.json"), "-o", str(report)]) == 0
    problems: list[str] = []
    page = _page(browser, report, problems)
    assert page.inner_text("#context").count(HOSTILE) == 5  # user, session, tag, attribute key and value
    assert HOSTILE in _visible_names(page)
    page.fill("#q", "1 & `tick`")
    _wait(page, "document.getElementById('count').textContent.startsWith('3 of')")
    page.fill("#q", "")
    page.locator("#viewport").get_by_text(HOSTILE + " 1", exact=True).click()
    detail = page.inner_text("#detail")
    assert f"{HOSTILE} in" in detail and f"{HOSTILE} out" in detail  # captured content
    assert "1,234 / 56" in detail and "$0.25" in detail  # tokens and cost
    assert detail.count(HOSTILE) >= 5  # name, model, metadata key and value, content
    page.locator("#viewport").get_by_text(HOSTILE + " 2", exact=True).click()
    assert f"{HOSTILE}: {HOSTILE}" in page.inner_text("#detail")  # the error class and stop reason
    injected = page.evaluate(
        "document.querySelectorAll('#detail script, #viewport script, #context script').length"
    )
    page.screenshot(path=str(tmp_path / "hostile.png"))
    page.close()
    assert problems == [] and injected == 0
    assert len(g) == 3
