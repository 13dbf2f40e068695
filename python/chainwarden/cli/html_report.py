"""`chainwarden render --format html`: one self-contained HTML file of a run, at any size (docs/ui.md).

The page carries everything it needs: its CSS and script inline, the calls as compressed columns
(`report_data`), and a Content-Security-Policy that forbids every network request, so it shows the same
offline, from an e-mail attachment or a CI artefact. The summary (cards, the run's context, halts and
failures, divergence and safety events) is written here as escaped HTML and is bounded in size; the call tree,
the table, the timeline and the detail panel are drawn by the script, which keeps a bounded number of elements
on the page and sets every text from the run with `textContent`. The only script allowed to run is the one
written here (pinned by its hash); the data block is not JavaScript and is never executed.
"""

from __future__ import annotations

import base64
import hashlib
import json
from html import escape
from importlib.resources import files
from typing import Any

from chainwarden import __version__
from chainwarden._chain_context import tag_texts
from chainwarden.cli.report_data import encode_calls, report_payload
from chainwarden.cli.runfile import Run
from chainwarden.cli.summary import summarize

__all__ = ["MAX_LISTED", "render_html"]

MAX_LISTED = 200  # rows of each summary list (halts, events): the tree and the search show every call


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}"


def _chips(run: Run) -> str:
    labels = run.labels
    chips: list[tuple[str, str]] = []
    if labels.user_id is not None:
        chips.append(("user", labels.user_id))
    if labels.session_id is not None:
        chips.append(("session", labels.session_id))
    chips += [("tag", tag) for tag in tag_texts(labels.tags)]
    chips += [
        (key, value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True))
        for key, value in labels.attributes.items()
    ]
    if not chips:
        return ""
    return (
        '<div class="chips" id="context">'
        + "".join(f'<span class="chip"><b>{_e(k)}</b>{_e(v)}</span>' for k, v in chips)
        + "</div>"
    )


def _cards(summary: dict[str, Any], run: Run) -> str:
    amp = summary["amplification"]
    halts = len(summary["halts"])
    starts = [c.start_ms for c in run.calls if c.start_ms is not None]
    ends = [c.end_ms for c in run.calls if c.end_ms is not None]
    wall = (
        f"{(max(ends) - min(starts)) / 1000:.2f} s" if starts and ends and max(ends) >= min(starts) else "-"
    )
    cards = [
        ("calls", f"{summary['nodes']:,}", ""),
        ("cost", _money(summary["cost_usd"]), ""),
        ("tokens in / out", f"{summary['tokens_in'] or 0:,} / {summary['tokens_out'] or 0:,}", ""),
        ("wall time", wall, ""),
        *((k.replace("_", " "), f"{v:g}", "") for k, v in amp.items()),
        ("halts and failures", f"{halts:,}", " alert" if halts else ""),
        ("divergence events", f"{summary['divergence_count']:,}", ""),
    ]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card{cls}"><b>{_e(value)}</b><span>{_e(label)}</span></div>'
            for label, value, cls in cards
        )
        + "</div>"
    )


def _list(
    title: str, head: list[str], rows: list[list[str]], empty: str, *, calls: list[int] | None = None
) -> str:
    """A summary list of at most MAX_LISTED rows; ``calls`` makes each first cell select its call."""
    if not rows:
        return (
            f'<details class="list"><summary>{_e(title)} (0)</summary>'
            f'<p class="empty">{_e(empty)}</p></details>'
        )
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = []
    for n, row in enumerate(rows[:MAX_LISTED]):
        cells = [f"<td>{_e(c)}</td>" for c in row]
        if calls is not None and calls[n] >= 0:
            cells[0] = (
                f'<td><button type="button" class="linkish" data-call="{calls[n]}">{_e(row[0])}</button></td>'
            )
        body.append("<tr>" + "".join(cells) + "</tr>")
    more = len(rows) - MAX_LISTED
    tail = (
        f'<p class="empty">and {more:,} more: filter the calls by status to see them all.</p>'
        if more > 0
        else ""
    )
    opened = " open" if len(rows) <= 20 else ""
    return (
        f'<details class="list"{opened}><summary>{_e(title)} ({len(rows):,})</summary>'
        f'<table class="plain"><thead><tr>{header}</tr></thead><tbody>{"".join(body)}</tbody></table>'
        f"{tail}</details>"
    )


def _events(summary: dict[str, Any], run: Run) -> str:
    divergence = [
        [
            str(e.get("event_type", "")),
            str(e.get("severity", "")),
            str(e.get("node_id", "")),
            ", ".join(
                f"{k}={v}" for k, v in e.items() if k not in ("event_type", "severity", "node_id", "chain_id")
            ),
        ]
        for e in summary["divergence_events"]
    ]
    count = summary["divergence_count"]
    parts = [
        _list(
            "Divergence events",
            ["event", "severity", "node", "detail"],
            divergence,
            f"{count} divergence events recorded; none saved in this file"
            if count
            else "no divergence event",
        )
    ]
    if run.source == "containment":
        safety = [
            [str(e["event_type"]), str(e["decision"]), str(e["reason"])] for e in summary["safety_events"]
        ]
        parts.append(_list("Safety events", ["event", "decision", "reason"], safety, "none"))
    return "".join(parts)


_CONTROLS = (
    '<div class="toolbar">'
    '<input type="search" id="q" placeholder="Search names, ids, models, reasons" aria-label="search">'
    '<select id="f-kind" aria-label="kind"><option value="">any kind</option></select>'
    '<select id="f-status" aria-label="status"><option value="">any status</option>'
    '<option value="stopped">halted or failed</option></select>'
    '<select id="f-model" aria-label="model"><option value="">any model</option></select>'
    '<input type="number" id="f-cost" min="0" step="any" placeholder="min cost $" aria-label="minimum cost">'
    '<button type="button" id="clear">Clear</button>'
    '<button type="button" id="mode-tree">Tree</button><button type="button" id="mode-list">List</button>'
    '<button type="button" id="expand">Expand all</button>'
    '<button type="button" id="collapse">Collapse</button>'
    '<span id="count"></span></div>'
    '<canvas id="overview" aria-label="calls over time"></canvas>'
    '<p class="hint">Calls over time (red marks: halts and failures). Drag across it to zoom the timeline '
    "column; double-click to reset. Click a row for its details; click ▸ or double-click to open it.</p>"
    '<div class="main"><div class="calls">'
    '<div class="grid head"><div data-sort="name">call</div><div data-sort="kind">kind</div>'
    '<div data-sort="status">status</div><div data-sort="dur" class="num">duration</div>'
    '<div data-sort="cost" class="num">cost</div><div data-sort="tokens" class="num">tokens in / out</div>'
    '<div data-sort="model">model</div><div data-sort="start">timeline</div></div>'
    '<div id="viewport" tabindex="0"><div id="spacer"></div></div></div>'
    '<aside class="detail" id="detail"></aside></div>'
)


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render_html(run: Run) -> str:
    summary = summarize(run)
    css = files("chainwarden.cli").joinpath("report.css").read_text(encoding="utf-8")
    js = files("chainwarden.cli").joinpath("report.js").read_text(encoding="utf-8")
    csp = f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(js)}; img-src data:"
    what = {"execution-graph": "call graph", "containment": "containment chain", "dag": "DAG"}[run.source]
    position = {c.id: i for i, c in enumerate(run.calls)}
    halts = summary["halts"]
    payload = report_payload(encode_calls(run))
    body = [
        f"<h1>{_e(what)} <code>{_e(run.title)}</code></h1>",
        f'<p class="sub">chainwarden {_e(__version__)} report · {len(run.calls):,} calls · '
        'halted and failed calls are highlighted in red <span id="status-line">loading the calls…</span></p>',
        _chips(run),
        _cards(summary, run),
        "<noscript><p>The call tree, search and timeline need JavaScript; "
        "the summary above does not.</p></noscript>",
        _CONTROLS,
        _list(
            "Halts and failures",
            ["name", "id", "status", "reason"],
            [[h["name"], h["id"], h["status"], h["reason"] or ""] for h in halts],
            "no call was halted or failed",
            calls=[position.get(h["id"], -1) for h in halts[:MAX_LISTED]],
        ),
        _events(summary, run),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'  # ours: no user text, no "
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>chainwarden · {_e(what)} {_e(run.title)}</title>"
        f"<style>{css}</style></head>\n<body>\n"
        + "\n".join(body)
        + f"\n<footer>generated by chainwarden {_e(__version__)}; no network access needed to view</footer>\n"
        # Base64 of deflated JSON: only [A-Za-z0-9+/=], so it can never end the element; not JavaScript.
        + f'<script type="application/octet-stream" id="run-data">{payload}</script>\n'
        + f"<script>{js}</script>\n</body></html>\n"
    )
