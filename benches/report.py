"""Turns a pytest-benchmark JSON file into the ratio tables of benches/README.md.

Usage: python benches/report.py .benchmarks/latest.json
Within each group, every implementation is compared with `chainwarden` (ratio > 1: chainwarden
is that many times faster, or smaller for memory)."""

from __future__ import annotations

import json
import re
import sys
from collections import defaultdict
from typing import Any


def impl_of(bench: dict[str, Any]) -> str:
    params = bench.get("params") or {}
    return str(params.get("impl") or re.sub(r".*\[(.*)\]", r"\1", bench["name"]))


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def main(path: str) -> None:
    with open(path) as f:
        data = json.load(f)
    groups: dict[str, dict[str, dict[str, Any]]] = defaultdict(dict)
    for b in data["benchmarks"]:
        groups[b["group"] or b["name"]][impl_of(b)] = b
    for group, impls in groups.items():
        print(f"\n### {group}\n")
        base = impls.get("chainwarden")
        memory = "memory" in group
        unit = "bytes/node" if memory else "median"
        print(f"| implementation | {unit} | per item | vs chainwarden |")
        print("|---|---|---|---|")
        for name, b in impls.items():
            if memory:
                value = b["extra_info"]["bytes_per_node"]
                shown, per_item = f"{value:.0f} B", ""
                ratio = value / base["extra_info"]["bytes_per_node"] if base else float("nan")
            else:
                value = b["stats"]["median"]
                shown = fmt_time(value)
                n = b["extra_info"].get("nodes")
                per_item = fmt_time(value / n) if n else ""
                ratio = value / base["stats"]["median"] if base else float("nan")
            shown_ratio = f"{ratio:.2f}x" if base else "—"  # no chainwarden baseline in this group
            print(f"| {name} | {shown} | {per_item} | {shown_ratio} |")


if __name__ == "__main__":
    main(sys.argv[1])
