"""Checks one pytest-benchmark session against the speed goals (benches/README.md "Goals at a glance") and
prints each figure.

Usage: python benches/goals.py .benchmarks/goals.json   (scripts/bench-goals.sh runs the session first)

Medians, except the containment forms' overheads (minima: their medians are bimodal on a shared machine,
benches/README.md "The `with` block and the decorators"); a ratio compares two implementations measured in the
same session. The memory, async-wrap and store-load goals come from their own scripts, which
scripts/bench-goals.sh runs after the session.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

Bench = dict[str, Any]


def median(b: Bench) -> float:
    return float(b["stats"]["median"])


def find(benches: list[Bench], name: str) -> Bench | None:
    return next((b for b in benches if b["name"] == name), None)


def per_item(b: Bench) -> float:
    return median(b) / int(b["extra_info"]["nodes"])


def mb_per_s(b: Bench) -> float:
    return int(b["extra_info"]["bytes"]) / median(b) / 1e6


def per_fact(b: Bench, facts: int) -> float:
    return median(b) / facts


Check = tuple[str, list[str], Callable[[list[Bench]], float], Callable[[float], bool], str]


def paired(b: Bench) -> float:
    return float(b["extra_info"]["median_ratio"])


def overhead(form: Bench, bare: Bench) -> float:
    """What a containment form adds to the call it wraps: its fastest round less its bare twin's."""
    return float(form["stats"]["min"]) - float(bare["stats"]["min"])


# The containment forms users write, each against `wrap_llm_call`'s overhead (bench_context.py's groups).
WRAP = ["test_wrap_llm_call[chainwarden]", "test_bare_call"]
FORMS = [
    ("`with ctx.llm_call()`", ["test_with_block", "test_with_bare"]),
    ("`@ctx.llm_call`", ["test_decorated_call[ctx.llm_call]", "test_decorator_bare"]),
    ("`@contained`", ["test_decorated_call[contained]", "test_decorator_bare"]),
]


# The two build goals: the parameter of `test_build_paired_with_rustworkx`, and the row's title.
BUILDS = [("fan-out", "40k-child fan-out"), ("chat", "200k chat build per node+edge")]


CHECKS: list[Check] = [
    # The build goals: the median ratio of paired rounds (benches/README.md "Paired rounds"). The ratio of the
    # two groups' medians follows as a figure; those groups run a minute apart.
    *[
        (
            f"{title} / rustworkx, paired rounds",
            [f"test_build_paired_with_rustworkx[{shape}]"],
            lambda b: paired(b[0]),
            lambda r: r <= 2,
            "<= 2x",
        )
        for shape, title in BUILDS
    ],
    *[
        (
            f"{title} / rustworkx, group medians",
            [f"test_build_{group}[chainwarden]", f"test_build_{group}[rustworkx]"],
            lambda b: median(b[0]) / median(b[1]),
            lambda r: True,
            "(figure)",
        )
        for group, title in (("fan_out", BUILDS[0][1]), ("chat", BUILDS[1][1]))
    ],
    # Not goals: the least a build call does under the DAG contract (`_BuildFloor`: mint, index and return
    # ids, find an edge's ends by id), against the same rustworkx loop; a goal below it cannot be met.
    (
        "contract floor: 40k fan-out / rustworkx",
        ["test_build_fan_out[floor]", "test_build_fan_out[rustworkx]"],
        lambda b: median(b[0]) / median(b[1]),
        lambda r: True,
        "(floor)",
    ),
    (
        "contract floor: 200k chat / rustworkx",
        ["test_build_chat[floor]", "test_build_chat[rustworkx]"],
        lambda b: median(b[0]) / median(b[1]),
        lambda r: True,
        "(floor)",
    ),
    *[
        (
            f"{title} overhead / wrap_llm_call's (min)",
            [*names, *WRAP],
            lambda b: overhead(b[0], b[1]) / overhead(b[2], b[3]),
            lambda r: r <= 1.5,
            "<= 1.5x",
        )
        for title, names in FORMS
    ],
    (
        "record_call vs veronica-core begin+running+success",
        ["test_finished_call[veronica begin+running+success]", "test_finished_call[chainwarden]"],
        lambda b: median(b[0]) / median(b[1]),
        lambda r: r >= 40,
        ">= 40x",
    ),
    ("events() per item, µs", ["test_events"], lambda b: per_item(b[0]) * 1e6, lambda v: v <= 1.5, "<= 1.5"),
    ("nodes() per item, µs", ["test_nodes"], lambda b: per_item(b[0]) * 1e6, lambda v: v <= 1.5, "<= 1.5"),
    (
        "context_for preview, 40k chat, ms",
        ["test_context_for_dicts_chat[preview]"],
        lambda b: median(b[0]) * 1e3,
        lambda v: v <= 60,
        "<= 60",
    ),
    (
        "propagate_failures 10k fan-out / rustworkx",
        ["test_propagate_vs_rustworkx[chainwarden]", "test_propagate_vs_rustworkx[rustworkx]"],
        lambda b: median(b[0]) / median(b[1]),
        lambda r: r < 1,
        "< 1x",
    ),
    (
        "DAG to_json, MB/s",
        ["test_dag_to_json[chainwarden]"],
        lambda b: mb_per_s(b[0]),
        lambda v: v >= 500,
        ">= 500",
    ),
    (
        "DAG from_json, MB/s",
        ["test_dag_from_json[chainwarden]"],
        lambda b: mb_per_s(b[0]),
        lambda v: v >= 300,
        ">= 300",
    ),
    (
        "snapshot_json at 100k nodes, MB/s",
        ["test_snapshot_json[chainwarden-100000]"],
        lambda b: mb_per_s(b[0]),
        lambda v: v >= 2000,
        ">= 2000",
    ),
    *[
        (
            f"snapshot_json / orjson.dumps at {n:,} nodes",
            [f"test_snapshot_json[chainwarden-{n}]", f"test_snapshot_json[orjson-{n}]"],
            lambda b: median(b[0]) / median(b[1]),
            lambda r: r < 1,
            "< 1x",
        )
        for n in (1_000, 10_000, 100_000)
    ],
    (
        "per-fact SQLite commits / raw sqlite3, same statements",
        ["test_sqlite_per_fact_floor[raw-sqlite3]", "test_sqlite_per_fact_floor[ledger]"],
        lambda b: median(b[0]) / median(b[1]),
        lambda r: r >= 0.8,
        ">= 0.8",
    ),
    *[
        (
            f"{kind} batch vs per-fact rate",
            [f"test_single_writer_commits[{kind}]", f"test_batch_commits[{kind}]"],
            lambda b: per_fact(b[0], 300) / per_fact(b[1], 1_000),
            lambda r: r >= 10,
            ">= 10x",
        )
        for kind in ("sqlite", "postgres")
    ],
]


def main(path: str) -> int:
    with open(path) as f:
        benches: list[Bench] = json.load(f)["benchmarks"]
    missed = 0
    print("| goal | measured | target | met |")
    print("|---|---|---|---|")
    for title, names, measure, met, target in CHECKS:
        found = [find(benches, name) for name in names]
        if any(b is None for b in found):
            print(f"| {title} | not in this run | {target} | — |")
            continue
        value = measure([b for b in found if b is not None])
        ok = met(value)
        missed += not ok
        verdict = "—" if target in ("(floor)", "(figure)") else ("yes" if ok else "**no**")
        print(f"| {title} | {value:,.2f} | {target} | {verdict} |")
    return missed


if __name__ == "__main__":
    print(f"{main(sys.argv[1])} goal(s) not met")
