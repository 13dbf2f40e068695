"""``--save`` / ``--compare``: a saved bench document and the figures that got worse since."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainwarden.errors import ChainwardenError

__all__ = ["CompareError", "load", "regressions"]


class CompareError(ChainwardenError, ValueError):
    """The --compare file is missing, not JSON or not a bench document."""


def load(path: Path) -> dict[str, Any]:
    try:
        doc: Any = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise CompareError(f"--compare: cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise CompareError(f"--compare: {path} is not JSON: {exc}") from None
    results = doc.get("results") if isinstance(doc, dict) else None
    if not isinstance(results, list) or not all(
        isinstance(r, dict)
        and isinstance(r.get("name"), str)
        and isinstance(r.get("impl"), str)
        and isinstance(r.get("p50_ns"), int | float)
        for r in results
    ):
        raise CompareError(
            f"--compare: {path} is not a `chainwarden bench --json` document (no valid results)"
        )
    checked: dict[str, Any] = doc
    return checked


def regressions(old: dict[str, Any], new: dict[str, Any], threshold_pct: float) -> tuple[list[str], int]:
    """Lines naming each figure whose median got worse by more than ``threshold_pct`` percent, and how many
    figures were compared. A figure at or below zero before (overhead lost in the noise) has no percentage
    and is not compared."""
    before = {(r["name"], r["impl"]): float(r["p50_ns"]) for r in old["results"]}
    worse: list[str] = []
    compared = 0
    for r in new["results"]:
        was = before.get((r["name"], r["impl"]))
        if was is None or was <= 0:
            continue
        compared += 1
        change = (float(r["p50_ns"]) - was) / was * 100
        if change > threshold_pct:
            worse.append(f"{r['name']} [{r['impl']}]: p50 {was:.0f} ns -> {r['p50_ns']} ns (+{change:.0f}%)")
    return worse, compared
