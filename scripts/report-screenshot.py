"""Regenerates docs/img/report.png, the README's picture of `chainwarden render --format html`.

    .venv/bin/python scripts/report-screenshot.py [--chromium /usr/bin/chromium] [--calls 5000]

Records a simulated research agent (a plan, then steps of a model call and its tool calls, some failing or
halted, content captured and masked) with the real recorder, gives its nodes the durations such a run would
have (the simulation does not sleep), renders it with the CLI and photographs the page, with one failed call
selected, through Debian's chromium and Playwright."""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from chainwarden import ExecutionGraph
from chainwarden.cli import main

OUT = Path(__file__).resolve().parents[1] / "docs" / "img" / "report.png"
TOOLS = ("web_search", "fetch_page", "query_metrics", "read_file", "summarise_page", "sql")


def record(calls: int) -> dict[str, Any]:
    rng = random.Random(7)
    g = ExecutionGraph(chain_id="research-agent-7f3a")
    context = {
        "user_id": "user-42",
        "session_id": "sess-0193",
        "tags": ["beta", "eu-west"],
        "attributes": {"plan": "pro"},
    }
    root = g.create_root("agent_run", metadata=context)
    plan = g.begin_node(root, "llm", "plan", model="claude-sonnet-4-6", running=True)
    g.annotate(
        plan,
        {
            "provider": "anthropic",
            "content_input": '[{"role": "user", "content": "Compare Q3 '
            'churn across regions and explain the outliers."}]',
            "content_output": "1. Pull churn per region  2. Check the metrics backend  3. Draft",
        },
    )
    g.mark_success(plan, 0.0042, tokens_in=620, tokens_out=180)
    made = 2
    step = 0
    while made < calls:
        step += 1
        llm = g.begin_node(root, "llm", f"step_{step}", model="claude-sonnet-4-6", running=True)
        g.mark_success(
            llm,
            round(rng.uniform(0.002, 0.02), 5),
            tokens_in=rng.randint(800, 4000),
            tokens_out=rng.randint(80, 600),
        )
        made += 1
        for _ in range(rng.randint(2, 9)):
            if made >= calls:
                break
            tool = rng.choice(TOOLS)
            node = g.begin_node(llm, "tool", tool, metadata={"attempt": 1}, running=True)
            roll = rng.random()
            if roll < 0.015:
                g.increment_retries(node)
                g.mark_failure(node, "TimeoutError", stop_reason="metrics backend did not answer")
            elif roll < 0.02:
                g.mark_halt(node, stop_reason="budget_exceeded")
            else:
                g.mark_success(node, 0.0)
            made += 1
    g.mark_success(root, 0.0)
    doc: dict[str, Any] = json.loads(g.snapshot_json())
    # The durations a real run would have had: model calls 0.6-4 s, tools 40-900 ms, one after the other.
    clock = doc["nodes"][doc["root_id"]]["start_ts_ms"]
    for node_id, node in doc["nodes"].items():
        if node_id == doc["root_id"]:
            continue
        length = rng.randint(600, 4000) if node["kind"] == "llm" else rng.randint(40, 900)
        node["start_ts_ms"], node["end_ts_ms"] = clock, clock + length
        clock += length // (3 if node["kind"] == "tool" else 1)
    doc["nodes"][doc["root_id"]]["end_ts_ms"] = clock
    return doc


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--calls", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run.json"
        run.write_text(json.dumps(record(args.calls)), encoding="utf-8")
        report = Path(tmp) / "report.html"
        assert main(["render", str(run), "-o", str(report)]) == 0
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": 1400, "height": 980}, device_scale_factor=1)
            page.goto(report.as_uri())
            page.wait_for_selector("html[data-ready='1']")
            page.click("details.list summary")  # the halts and failures
            page.click("details.list button.linkish >> nth=0")  # select the first one: the tree opens on it
            page.wait_for_timeout(200)
            page.screenshot(path=str(OUT))
            browser.close()
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main_()
