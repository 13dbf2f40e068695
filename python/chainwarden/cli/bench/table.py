"""The human-readable table of a bench document: rich on a terminal, plain aligned text otherwise."""

from __future__ import annotations

from typing import Any, TextIO

__all__ = ["fmt_ns", "print_table", "rows"]

HEADER = ["workload", "impl", "p50", "p99", "min", "samples", "vs chainwarden"]


def fmt_ns(ns: float) -> str:
    """A duration the way people read it: 812 ns, 1.06 µs, 2.49 ms."""
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns < 1_000:
        return f"{sign}{ns:.0f} ns"
    if ns < 1_000_000:
        return f"{sign}{ns / 1_000:.3g} µs"
    if ns < 1_000_000_000:
        return f"{sign}{ns / 1_000_000:.3g} ms"
    return f"{sign}{ns / 1_000_000_000:.3g} s"


def rows(doc: dict[str, Any]) -> list[list[str]]:
    ratio = {(r["name"], r["against"]): r["ratio"] for r in doc["ratios"]}
    out: list[list[str]] = []
    for r in doc["results"]:
        x = ratio.get((r["name"], r["impl"]))
        out.append(
            [
                r["name"],
                r["impl"],
                fmt_ns(r["p50_ns"]),
                fmt_ns(r["p99_ns"]),
                fmt_ns(r["min_ns"]),
                str(r["samples"]),
                "" if x is None else f"{x:g}x slower" if x >= 1 else f"{1 / x:.3g}x faster" if x > 0 else "",
            ]
        )
    for m in doc["memory"]:
        x = ratio.get(("memory_per_node", m["impl"]))
        out.append(
            [
                "memory_per_node",
                m["impl"],
                f"{m['bytes_per_node']:g} B",
                "",
                "",
                f"{m['nodes']:,} nodes",
                "" if x is None else f"{x:g}x more",
            ]
        )
    for miss in doc["missing"]:
        out.append([miss.get("name", "(all)"), miss["impl"], miss["reason"], "", "", "", ""])
    return out


def print_table(doc: dict[str, Any], out: TextIO, *, rich: bool) -> None:
    body = rows(doc)
    title = "per-call overhead over the bare call (lower is better)"
    if rich:
        from rich.console import Console  # noqa: PLC0415 - the cli extra
        from rich.table import Table  # noqa: PLC0415

        table = Table(title=title)
        for i, name in enumerate(HEADER):
            table.add_column(name, justify="right" if 2 <= i <= 5 else "left")
        for row in body:
            table.add_row(*row)
        Console(file=out).print(table)
        return
    widths = [max(len(r[i]) for r in [HEADER, *body]) for i in range(len(HEADER))]
    out.write(title + "\n")
    for row in [HEADER, *body]:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip() + "\n")
