"""Regenerates docs/img/report.png, the README's picture of `chainwarden render --format html`.

    .venv/bin/python scripts/report-screenshot.py [--chromium /usr/bin/chromium]

Records a small simulated agent run (sleeps stand in for the model and the tools, so the timeline has real
durations), renders it with the CLI and photographs the page with Debian's chromium through Playwright."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from chainwarden import ExecutionGraph
from chainwarden.cli import main

OUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "report.png"


def record() -> ExecutionGraph:
    g = ExecutionGraph(chain_id="research-agent-7f3a")
    root = g.create_root("agent_run")
    g.mark_running(root)
    plan = g.begin_node(root, "llm", "plan", model="sim-large", running=True)
    time.sleep(0.12)
    g.mark_success(plan, 0.0042, tokens_in=620, tokens_out=180)
    for name, pause, outcome in (
        ("web_search", 0.08, "ok"),
        ("fetch_page", 0.15, "ok"),
        ("query_metrics", 0.20, "fail"),
    ):
        call = g.begin_node(plan, "tool", name, running=True)
        time.sleep(pause)
        if outcome == "ok":
            g.mark_success(call, 0.0)
        else:
            g.increment_retries(call)
            g.mark_failure(call, "TimeoutError", stop_reason="metrics backend did not answer")
    draft = g.begin_node(root, "llm", "draft_answer", model="sim-large", running=True)
    time.sleep(0.18)
    g.mark_success(draft, 0.0118, tokens_in=2400, tokens_out=520)
    polish = g.begin_node(root, "llm", "polish", model="sim-large", running=True)
    g.mark_halt(polish, stop_reason="budget_exceeded")
    g.mark_success(root, 0.0)
    return g


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    args = parser.parse_args()
    g = record()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.json"
        doc = json.loads(g.snapshot_json())
        doc["divergence_events"] = g.drain_divergence_events()
        run.write_text(json.dumps(doc), encoding="utf-8")
        report = Path(tmp) / "report.html"
        assert main(["render", str(run), "-o", str(report)]) == 0
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1100, "height": 900}, device_scale_factor=1)
            page.goto(report.as_uri())
            page.wait_for_selector("html[data-ready='1']")
            page.screenshot(path=str(OUT), full_page=True)
            browser.close()
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main_()
