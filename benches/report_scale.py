"""The HTML report at scale: render time, HTML bytes and peak memory of `chainwarden render`, and the time the
page takes to open in headless Chromium, at 10,000 and 100,000 calls (benches/README.md, "The HTML report").

    .venv/bin/python benches/report_scale.py [--calls 10000 100000] [--rounds 3] [--chromium PATH]

Each run file is an agent run recorded with the real recorder (steps of one model call and tool calls under a
root, failures and halts, metadata on one call in ten, 40 distinct tool names, one unique name). Each render
(read the file, write the report) runs in a process of its own, which reports its own peak RSS; the open time
is from navigation start to the page's `data-ready`, as the page itself measures it (`data-load-ms`: inflate,
parse, build the tree, draw) and as Playwright sees it (wall). Medians of ``--rounds``.

The peer, in the same run: the report as it was before it scaled (``--peer-ref``, the commit before the
change; its three files are taken from git and rendered from the same run file with today's reader)."""

from __future__ import annotations

import argparse
import json
import os
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


# Each render runs in a process of its own and reports its own peak RSS (KiB on Linux) when it is done.
_PEAK = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"


def _timed(code: str, *argv: str) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of ``python -c code argv...``."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\n{_PEAK}", *argv], check=True, capture_output=True, text=True
    )
    return time.perf_counter() - start, int(done.stdout.split()[-1]) * 1024


_RENDER = (
    "import sys\nfrom pathlib import Path\nsys.path.insert(0, sys.argv[1])\n"
    "from {module}.html_report import render_html\nfrom chainwarden.cli.runfile import load_run\n"
    "Path(sys.argv[3]).write_text(render_html(load_run(Path(sys.argv[2]))), encoding='utf-8')"
)


def render(run: Path, out: Path) -> tuple[float, int]:
    """Seconds and peak RSS (bytes) of one process that reads ``run`` and writes its report (what
    `chainwarden render` does, without the command line's own imports, so the peer is timed the same way)."""
    return _timed(_RENDER.format(module="chainwarden.cli"), "", str(run), str(out))


PEER_FILES = ("html_report.py", "layout.py", "report.js", "report.css")


def peer_package(ref: str, where: Path) -> Path:
    """The report of ``ref`` as a package ``peer_report`` under ``where`` (its modules, today's reader)."""
    package = where / "peer_report"
    package.mkdir()
    (package / "__init__.py").write_text("")
    for name in PEER_FILES:
        text = subprocess.run(
            ["git", "show", f"{ref}:python/chainwarden/cli/{name}"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        text = text.replace("from chainwarden.cli.layout import", "from peer_report.layout import")
        text = text.replace('files("chainwarden.cli")', 'files("peer_report")')
        (package / name).write_text(text)
    return where


def render_peer(where: Path, run: Path, out: Path) -> tuple[float, int]:
    return _timed(_RENDER.format(module="peer_report"), str(where), str(run), str(out))


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
    parser.add_argument(
        "--peer-ref", default="14ab794", help="the commit whose report is the peer ('' for none)"
    )
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        peer = peer_package(args.peer_ref, Path(tmp)) if args.peer_ref else None
        for calls in sorted(args.calls):
            run, report = Path(tmp) / f"run-{calls}.json", Path(tmp) / f"report-{calls}.html"
            record(calls, run)
            renders, peers = [], []
            for _ in range(args.rounds):  # interleaved: the two see the same machine load
                renders.append(render(run, report))
                if peer is not None:
                    peers.append(render_peer(peer, run, Path(tmp) / f"peer-{calls}.html"))
            opens = [open_page(args.chromium, report) for _ in range(args.rounds)]
            size = report.stat().st_size
            row: dict[str, Any] = {
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
            if peers:
                peer_html = Path(tmp) / f"peer-{calls}.html"
                row["peer_render_s"] = statistics.median(s for s, _ in peers)
                row["peer_render_peak_rss_mb"] = max(rss for _, rss in peers) / 1e6
                row["peer_html_bytes"] = peer_html.stat().st_size
                row["render_ratio_peer_over_new"] = row["peer_render_s"] / row["render_s"]
            results.append(row)
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
