"""The HTML report at scale: render time, HTML bytes and peak memory of `chainwarden render`, and the time the
page takes to open in headless Chromium, at 10,000 and 100,000 calls (benches/README.md, "The HTML report").

    .venv/bin/python benches/report_scale.py [--calls 10000 100000] [--rounds 3] [--chromium PATH]

Each run file is an agent run recorded with the real recorder (steps of one model call and tool calls under a
root, failures and halts, metadata on one call in ten, 40 distinct tool names, one unique name). `render`
runs as its own process (`python -m chainwarden render`), so its peak RSS is the child's `ru_maxrss`; the
open time is from navigation start to the page's `data-ready`, as the page itself measures it
(`data-load-ms`: inflate, parse, build the tree, draw) and as Playwright sees it (wall). Medians of
``--rounds``."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

from chainwarden import ExecutionGraph


def record(calls: int, path: Path) -> None:
    g = ExecutionGraph(chain_id=f"bench-{calls}")
    root = g.create_root("agent_run", metadata={"user_id": "u-bench", "session_id": "s-1", "tags": ["bench"]})
    tools = [f"tool_{i}" for i in range(40)]
    step = root
    for i in range(calls - 1):
        if i % 50 == 0:
            model = ("gpt-4o", "claude-haiku-4-5")[i % 2]
            step = g.begin_node(root, "llm", "plan", model=model, running=True)
            g.mark_success(step, 0.002, tokens_in=800 + i % 97, tokens_out=120)
            continue
        name = "needle-call" if i == calls // 2 else tools[i % 40]
        node = g.begin_node(step, "tool", name, metadata={"i": i} if i % 10 == 0 else None, running=True)
        if i % 997 == 0:
            g.mark_failure(node, "TimeoutError", stop_reason="backend timed out")
        elif i % 1499 == 0:
            g.mark_halt(node, stop_reason="budget_exceeded")
        else:
            g.mark_success(node, 0.0001 * (i % 7), tokens_in=i % 300, tokens_out=i % 50)
    g.mark_success(root, 0.0)
    path.write_bytes(g.snapshot_json())


def render(run: Path, out: Path) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of one `chainwarden render` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "chainwarden", "render", str(run), "-o", str(out)],
        check=True,
        stderr=subprocess.DEVNULL,
    )
    seconds = time.perf_counter() - start
    peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    # ru_maxrss of the children is the largest of them so far: each size is measured in increasing order.
    return seconds, max(peak_kib, before) * 1024


def open_page(chromium: str, report: Path) -> tuple[float, float, int]:
    """(wall seconds to data-ready, the page's own load ms, DOM elements) in a fresh page."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        start = time.perf_counter()
        page.goto(report.as_uri())
        page.wait_for_selector("html[data-ready='1']", timeout=120_000)
        wall = time.perf_counter() - start
        load_ms = float(page.get_attribute("html", "data-load-ms") or "nan")
        elements = int(page.evaluate("document.querySelectorAll('*').length"))
        browser.close()
    return wall, load_ms, elements


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--chromium", default=os.environ.get("CHAINWARDEN_CHROMIUM", "/usr/bin/chromium"))
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for calls in sorted(args.calls):
            run, report = Path(tmp) / f"run-{calls}.json", Path(tmp) / f"report-{calls}.html"
            record(calls, run)
            renders = [render(run, report) for _ in range(args.rounds)]
            opens = [open_page(args.chromium, report) for _ in range(args.rounds)]
            size = report.stat().st_size
            results.append(
                {
                    "calls": calls,
                    "run_file_bytes": run.stat().st_size,
                    "render_s": statistics.median(s for s, _ in renders),
                    "render_peak_rss_mb": max(rss for _, rss in renders) / 1e6,
                    "html_bytes": size,
                    "html_bytes_per_call": size / calls,
                    "open_wall_s": statistics.median(w for w, _, _ in opens),
                    "open_page_ms": statistics.median(ms for _, ms, _ in opens),
                    "dom_elements": max(e for _, _, e in opens),
                }
            )
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
