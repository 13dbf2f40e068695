"""Runs the selected workloads and collects their figures into the document ``--json`` prints."""

from __future__ import annotations

import functools
import os
import platform
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chainwarden import __version__
from chainwarden.cli.bench import memory
from chainwarden.cli.bench.peers import PEERS, available, describe_missing, version_of
from chainwarden.cli.bench.sampling import Batch, calibrate, interleave, stats
from chainwarden.cli.bench.workloads import Workload

__all__ = ["Plan", "machine", "run"]

CW = "chainwarden"


@dataclass(frozen=True)
class Plan:
    workloads: list[Workload]
    against: list[str]  # peers asked for (installed or not)
    rounds: int
    batch_ns: int  # each timed batch lasts about this long
    memory_nodes: int  # 0: no memory figure


def machine() -> dict[str, Any]:
    try:
        load: list[float] | None = [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):  # not on Windows
        load = None
    return {
        "chainwarden": __version__,
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "cpus": os.cpu_count(),
        "load_average": load,
        "peers": {peer: version_of(peer) if available(peer) else None for peer in PEERS},
        "argv": sys.argv[1:],
    }


def steps(plan: Plan) -> int:
    """How many progress ticks `run` makes: one per round of each workload, one per memory measurement."""
    total = sum(max(3, plan.rounds // w.round_divisor) for w in plan.workloads)
    if plan.memory_nodes:
        total += 1 + sum(1 for p in plan.against if p == "veronica-core" and available(p))
    return total


def run(plan: Plan, tick: Callable[[str], None]) -> dict[str, Any]:
    results: list[dict[str, Any]] = []
    missing: list[dict[str, str]] = []
    installed = [p for p in plan.against if available(p)]
    for peer in plan.against:
        if peer not in installed:
            missing.append({"impl": peer, "reason": describe_missing(peer)})
    for w in plan.workloads:
        impls: dict[str, tuple[Batch, int]] = {}
        for name, factory in w.impls.items():
            if name == CW or name in installed:
                batch = factory()
                impls[name] = (batch, calibrate(batch, plan.batch_ns))
        for peer in installed:
            if peer not in w.impls:
                missing.append({"name": w.name, "impl": peer, "reason": "no equivalent API"})
        rounds = max(3, plan.rounds // w.round_divisor)
        samples = interleave(w.bare(), impls, rounds, functools.partial(tick, w.name))
        for name, values in samples.items():
            s = stats(values)
            results.append(
                {
                    "name": w.name,
                    "impl": name,
                    "p50_ns": s.p50_ns,
                    "p99_ns": s.p99_ns,
                    "min_ns": s.min_ns,
                    "samples": s.samples,
                }
            )
    mem: list[dict[str, Any]] = []
    if plan.memory_nodes:
        for impl in [CW, *(p for p in installed if p == "veronica-core")]:
            per_node = memory.measure(impl, plan.memory_nodes)
            tick("memory_per_node")
            if per_node is not None:
                mem.append({"impl": impl, "bytes_per_node": round(per_node, 1), "nodes": plan.memory_nodes})
        if "otel" in installed:
            missing.append({"name": "memory_per_node", "impl": "otel", "reason": "no equivalent API"})
    return {
        "machine": machine(),
        "results": results,
        "ratios": ratios(results, mem),
        "memory": mem,
        "missing": missing,
    }


def ratios(results: list[dict[str, Any]], mem: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """peer / chainwarden medians (higher is better for chainwarden, as in benches/README.md); none when the
    chainwarden overhead is not above zero (the ratio would be meaningless or infinite)."""
    ours = {r["name"]: r["p50_ns"] for r in results if r["impl"] == CW}
    out: list[dict[str, Any]] = []
    for r in results:
        base = ours.get(r["name"])
        if r["impl"] != CW and base is not None and base > 0:
            out.append({"name": r["name"], "against": r["impl"], "ratio": round(r["p50_ns"] / base, 2)})
    cw_mem = next((m["bytes_per_node"] for m in mem if m["impl"] == CW), None)
    for m in mem:
        if m["impl"] != CW and cw_mem is not None and cw_mem > 0:
            out.append(
                {
                    "name": "memory_per_node",
                    "against": m["impl"],
                    "ratio": round(m["bytes_per_node"] / cw_mem, 2),
                }
            )
    return out
