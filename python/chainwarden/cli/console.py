"""Printing an `inspect` summary: rich tables on a terminal, plain aligned text when piped."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["Section", "print_sections", "print_summary"]

Section = tuple[str, list[str], list[list[str]]]  # (title, header, rows)


def _money(value: object) -> str:
    return f"${value:.6f}" if isinstance(value, int | float) else "-"


def _ms(value: object) -> str:
    return f"{value:.1f} ms" if isinstance(value, int | float) else "-"


def _num(value: object) -> str:
    return "-" if value is None else str(value)


def _sections(summary: dict[str, Any]) -> list[Section]:
    """(title, header, rows) of every table, shared by the rich and the plain output."""
    statuses = sorted(summary["by_status"])
    kinds = [
        [kind, str(sum(row.values())), *(str(row.get(s, 0)) for s in statuses)]
        for kind, row in sorted(summary["by_kind_status"].items())
    ]
    amp = summary["amplification"]
    totals = [
        ["nodes", str(summary["nodes"])],
        ["cost", _money(summary["cost_usd"])],
        ["tokens in / out", f"{_num(summary['tokens_in'])} / {_num(summary['tokens_out'])}"],
        *([k.replace("_", " "), f"{v:g}"] for k, v in amp.items()),
        ["divergence events", _num(summary["divergence_count"])],
    ]
    call_header = ["id", "name", "kind", "status", "duration", "cost"]

    def calls(rows: Sequence[dict[str, Any]]) -> list[list[str]]:
        return [
            [c["id"], c["name"], c["kind"], c["status"], _ms(c["duration_ms"]), _money(c["cost_usd"])]
            for c in rows
        ]

    sections = [
        (f"{summary['source']} {summary['id']}", ["total", "value"], totals),
        *_context(summary.get("context") or {}),
        ("nodes by kind and status", ["kind", "all", *statuses], kinds),
        ("slowest calls", call_header, calls(summary["slowest"])),
        ("most expensive calls", call_header, calls(summary["most_expensive"])),
        (
            "halts and failures",
            ["id", "name", "status", "reason"],
            [[h["id"], h["name"], h["status"], h["reason"] or "-"] for h in summary["halts"]],
        ),
    ]
    if summary["divergence_events"]:
        sections.append(
            (
                "divergence events",
                ["event", "severity", "node", "detail"],
                [
                    [
                        str(e.get("event_type", "")),
                        str(e.get("severity", "")),
                        str(e.get("node_id", "-")),
                        ", ".join(
                            f"{k}={v}"
                            for k, v in e.items()
                            if k not in ("event_type", "severity", "node_id", "chain_id")
                        ),
                    ]
                    for e in summary["divergence_events"]
                ],
            )
        )
    if summary["safety_events"]:
        sections.append(
            (
                "safety events",
                ["event", "decision", "reason"],
                [
                    [_num(e["event_type"]), _num(e["decision"]), _num(e["reason"])]
                    for e in summary["safety_events"]
                ],
            )
        )
    return sections


def _context(context: dict[str, Any]) -> list[Section]:
    """The run's user, session, tags and attributes, when it has any."""
    rows = [[k.replace("_id", ""), str(context[k])] for k in ("user_id", "session_id") if context.get(k)]
    tags = context.get("tags")
    if tags:
        labels = [f"{k}={v}" for k, v in tags.items()] if isinstance(tags, dict) else [str(t) for t in tags]
        rows.append(["tags", ", ".join(labels)])
    rows += [
        [f"attribute {k}", v if isinstance(v, str) else json.dumps(v, ensure_ascii=False, sort_keys=True)]
        for k, v in (context.get("attributes") or {}).items()
    ]
    return [("context", ["field", "value"], rows)] if rows else []


def print_summary(summary: dict[str, Any], out: TextIO, *, rich: bool) -> None:
    print_sections(_sections(summary), out, rich=rich)


def print_sections(sections: Sequence[Section], out: TextIO, *, rich: bool) -> None:
    """Tables: rich ones on a terminal, plain aligned text otherwise."""
    if rich:
        console = Console(file=out, highlight=False)
        for title, header, rows in sections:
            table = Table(title=Text(title), title_justify="left", show_edge=False)
            for col in header:
                table.add_column(col, overflow="fold")
            for row in rows:
                # Cells are data, never markup: a name like "[red]" must print as written.
                table.add_row(*(Text(cell) for cell in row))
            if not rows:
                table.add_row(*(["(none)"] + [""] * (len(header) - 1)))
            console.print(table)
            console.print()
        return
    for title, header, rows in sections:
        out.write(f"== {title} ==\n")
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
        out.write("  ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip() + "\n")
        for row in rows or [["(none)"] + [""] * (len(header) - 1)]:
            out.write("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n")
        out.write("\n")
