"""`chainwarden render --format html`: one self-contained HTML file describing a run.

Everything the page needs is inside it (CSS and the small sorting script inline, the graph and the timeline as
inline SVG), and its Content-Security-Policy forbids every network request, so it shows the same offline, from
an e-mail attachment or a CI artefact. Every string from the run is HTML-escaped; the only script allowed to
run is the one written here (pinned by its hash)."""

from __future__ import annotations

import base64
import hashlib
from html import escape
from importlib.resources import files
from typing import Any

from chainwarden import __version__
from chainwarden.cli.layout import layered
from chainwarden.cli.runfile import Call, Run
from chainwarden.cli.summary import summarize

__all__ = ["MAX_DRAWN_NODES", "render_html"]

MAX_DRAWN_NODES = 400  # above this the graph picture is unreadable; the table still lists every call

BOX_W, BOX_H, GAP_X, GAP_Y, PAD = 190, 44, 24, 46, 16
ROW_H, LABEL_W, BAR_W = 20, 260, 640


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _money(value: float | None) -> str:
    return "-" if value is None else f"${value:.6f}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f} ms"


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _state(call: Call) -> str:
    if call.halted or call.failed:
        return "stopped"
    return "ok" if call.status in ("success", "ok", "finished") else "other"


def _graph_svg(run: Run) -> str:
    if not run.calls:
        return '<p class="empty">no calls recorded</p>'
    if len(run.calls) > MAX_DRAWN_NODES:
        return (
            f'<p class="empty">{len(run.calls)} nodes: too many to draw; '
            "every call is in the table below.</p>"
        )
    placed = layered(run)
    by_id = {c.id: c for c in run.calls}
    pos = {p.id: (PAD + p.slot * (BOX_W + GAP_X), PAD + p.layer * (BOX_H + GAP_Y)) for p in placed}
    width = max(x for x, _ in pos.values()) + BOX_W + PAD
    height = max(y for _, y in pos.values()) + BOX_H + PAD
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="call graph">',
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
        'orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" fill="#9aa5b5"/></marker></defs>',
    ]
    for parent, child, label in run.edges:
        if parent not in pos or child not in pos:
            continue
        (x1, y1), (x2, y2) = pos[parent], pos[child]
        sx, sy, tx, ty = x1 + BOX_W / 2, y1 + BOX_H, x2 + BOX_W / 2, y2
        mid = (sy + ty) / 2
        parts.append(
            f'<path class="edge" d="M {sx:.0f} {sy:.0f} C {sx:.0f} {mid:.0f}, {tx:.0f} {mid:.0f}, '
            f'{tx:.0f} {ty:.0f}" marker-end="url(#arrow)"/>'
        )
        if label:
            parts.append(
                f'<text class="edge-label" x="{(sx + tx) / 2 + 4:.0f}" y="{mid:.0f}">{_e(label)}</text>'
            )
    for node_id, (x, y) in pos.items():
        call = by_id[node_id]
        meta = f"{call.kind} · {call.status}"
        if call.cost_usd:
            meta += f" · {_money(call.cost_usd)}"
        tip = f"{call.name}\n{meta}" + (f"\n{call.reason}" if call.reason else "")
        parts.append(
            f'<g class="node {_state(call)}" transform="translate({x},{y})"><title>{_e(tip)}</title>'
            f'<rect width="{BOX_W}" height="{BOX_H}" rx="6"/>'
            f'<text x="8" y="18">{_e(_short(call.name, 28))}</text>'
            f'<text class="meta" x="8" y="35">{_e(_short(meta, 34))}</text></g>'
        )
    parts.append("</svg>")
    return '<div class="scroll">' + "".join(parts) + "</div>"


def _timeline_svg(run: Run) -> str:
    timed = sorted(
        (c for c in run.calls if c.start_ms is not None and c.end_ms is not None),
        key=lambda c: (c.start_ms or 0.0, c.id),
    )
    if not timed:
        return '<p class="empty">no call has both a start and an end time</p>'
    t0 = min(c.start_ms or 0.0 for c in timed)
    span = max(max(c.end_ms or 0.0 for c in timed) - t0, 1.0)  # a run inside one millisecond still shows
    scale = BAR_W / span
    width, height = LABEL_W + BAR_W + 110, PAD * 2 + ROW_H * len(timed) + 14
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="timeline">',
        f'<line class="grid" x1="{LABEL_W}" y1="{PAD - 4}" x2="{LABEL_W}" y2="{height - PAD}"/>',
        f'<text class="meta" x="{LABEL_W}" y="{height - 4}">0 ms</text>',
        f'<text class="meta" x="{LABEL_W + BAR_W - 40}" y="{height - 4}">{span:.1f} ms</text>',
    ]
    for row, call in enumerate(timed):
        y = PAD + row * ROW_H
        x = LABEL_W + ((call.start_ms or 0.0) - t0) * scale
        w = max((call.duration_ms or 0.0) * scale, 2.0)
        cls = "bar stopped" if call.halted or call.failed else "bar"
        parts.append(
            f"<g><title>{_e(call.name)}: {_e(_ms(call.duration_ms))} ({_e(call.status)})</title>"
            f'<text x="4" y="{y + 13}">{_e(_short(call.name, 34))}</text>'
            f'<rect class="{cls}" x="{x:.1f}" y="{y + 3}" width="{w:.1f}" height="{ROW_H - 6}" rx="2"/>'
            f'<text class="meta" x="{x + w + 6:.1f}" y="{y + 13}">{_e(_ms(call.duration_ms))}</text></g>'
        )
    parts.append("</svg>")
    return '<div class="scroll">' + "".join(parts) + "</div>"


def _calls_table(run: Run) -> str:
    head = ["id", "name", "kind", "status", "duration", "cost", "tokens in", "tokens out", "model", "reason"]
    rows = []
    for call in run.calls:
        cls = ' class="stopped"' if call.halted or call.failed else ""
        dur = call.duration_ms
        cells = [
            f"<td><code>{_e(call.id)}</code></td>",
            f'<td class="name">{_e(call.name)}</td>',
            f"<td>{_e(call.kind)}</td>",
            f'<td class="status">{_e(call.status)}</td>',
            f'<td class="num" data-sort="{"" if dur is None else f"{dur:.6f}"}">{_e(_ms(dur))}</td>',
            f'<td class="num" data-sort="{call.cost_usd!r}">{_e(_money(call.cost_usd))}</td>',
            f'<td class="num" data-sort="{call.tokens_in or 0}">{_e(call.tokens_in or "-")}</td>',
            f'<td class="num" data-sort="{call.tokens_out or 0}">{_e(call.tokens_out or "-")}</td>',
            f"<td>{_e(call.model or '-')}</td>",
            f"<td>{_e(call.reason or '')}</td>",
        ]
        rows.append(f"<tr{cls}>{''.join(cells)}</tr>")
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    return (
        f'<table class="sortable" id="calls"><thead><tr>{header}</tr></thead>'
        f"<tbody>{''.join(rows)}</tbody></table>"
    )


def _list_table(head: list[str], rows: list[list[str]], empty: str) -> str:
    if not rows:
        return f'<p class="empty">{_e(empty)}</p>'
    header = "".join(f"<th>{_e(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{_e(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="sortable"><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>'


def _cards(summary: dict[str, Any]) -> str:
    amp = summary["amplification"]
    halts = len(summary["halts"])
    cards = [
        ("nodes", str(summary["nodes"]), ""),
        ("cost", _money(summary["cost_usd"]), ""),
        ("tokens in / out", f"{summary['tokens_in'] or 0} / {summary['tokens_out'] or 0}", ""),
        *((k.replace("_", " "), f"{v:g}", "") for k, v in amp.items()),
        ("halts and failures", str(halts), " alert" if halts else ""),
        ("divergence events", str(summary["divergence_count"]), ""),
    ]
    return (
        '<div class="cards">'
        + "".join(
            f'<div class="card{cls}"><b>{_e(value)}</b><span>{_e(label)}</span></div>'
            for label, value, cls in cards
        )
        + "</div>"
    )


def _csp_hash(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode() + "'"


def render_html(run: Run) -> str:
    summary = summarize(run)
    css = files("chainwarden.cli").joinpath("report.css").read_text(encoding="utf-8")
    js = files("chainwarden.cli").joinpath("report.js").read_text(encoding="utf-8")
    csp = f"default-src 'none'; style-src {_csp_hash(css)}; script-src {_csp_hash(js)}; img-src data:"
    what = {"execution-graph": "call graph", "containment": "containment chain", "dag": "DAG"}[run.source]
    halts = [[h["id"], h["name"], h["status"], h["reason"] or ""] for h in summary["halts"]]
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
    safety = [[str(e["event_type"]), str(e["decision"]), str(e["reason"])] for e in summary["safety_events"]]
    body = [
        f"<h1>{_e(what)} <code>{_e(run.title)}</code></h1>",
        f'<p class="sub">chainwarden {_e(__version__)} report · {len(run.calls)} nodes · '
        "halted and failed calls are highlighted in red</p>",
        _cards(summary),
        "<h2>Graph</h2>",
        _graph_svg(run),
        "<h2>Timeline</h2>",
        _timeline_svg(run),
        "<h2>Calls</h2>",
        _calls_table(run),
        "<h2>Halts and failures</h2>",
        _list_table(["id", "name", "status", "reason"], halts, "no call was halted or failed"),
        "<h2>Divergence events</h2>",
        _list_table(
            ["event", "severity", "node", "detail"],
            divergence,
            f"{summary['divergence_count']} divergence events recorded; none saved in this file"
            if summary["divergence_count"]
            else "no divergence event",
        ),
    ]
    if run.source == "containment":
        body += ["<h2>Safety events</h2>", _list_table(["event", "decision", "reason"], safety, "none")]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'  # ours: no user text, no "
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>chainwarden · {_e(what)} {_e(run.title)}</title>"
        f"<style>{css}</style></head>\n<body>\n"
        + "\n".join(body)
        + f"\n<footer>generated by chainwarden {_e(__version__)}; no network access needed to view</footer>\n"
        + f"<script>{js}</script>\n</body></html>\n"
    )
