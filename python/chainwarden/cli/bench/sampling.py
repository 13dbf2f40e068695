"""Interleaved sampling: every round times the bare baseline and each implementation back to back, so a load
spike on a shared machine hits all of them alike instead of one (docs/bench.md, "Reading the table")."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from chainwarden.errors import InvalidArgument

# A batch runs an operation `k` times and returns the elapsed nanoseconds.
Batch = Callable[[int], int]

__all__ = ["Batch", "Stats", "calibrate", "interleave", "stats", "timed_loop"]


@dataclass(frozen=True)
class Stats:
    p50_ns: int
    p99_ns: int
    min_ns: int
    samples: int


def stats(samples: Sequence[float]) -> Stats:
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        raise InvalidArgument("samples must not be empty", argument="samples")
    # Nearest-rank percentiles: always one of the measured values.
    p50 = ordered[(n - 1) // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    p99 = ordered[min(n - 1, max(0, -(-99 * n // 100) - 1))]
    return Stats(round(p50), round(p99), round(ordered[0]), n)


def timed_loop(op: Callable[[], object]) -> Batch:
    """A batch that calls ``op`` ``k`` times."""

    def batch(k: int) -> int:
        start = time.perf_counter_ns()
        for _ in range(k):
            op()
        return time.perf_counter_ns() - start

    return batch


def calibrate(batch: Batch, target_ns: int) -> int:
    """How many operations make one batch last about ``target_ns``: a ~1 µs call timed once is mostly timer
    noise, so each sample is the mean over a batch."""
    k = 1
    while True:
        elapsed = batch(k)
        if elapsed >= target_ns or k >= 1 << 24:
            return max(1, k * target_ns // max(elapsed, 1))
        k *= 4 if elapsed < target_ns // 8 else 2


def interleave(
    bare: Batch,
    impls: dict[str, tuple[Batch, int]],
    rounds: int,
    tick: Callable[[], None] = lambda: None,
) -> dict[str, list[float]]:
    """Per-operation overhead samples (implementation minus bare, ns) for each implementation, each batch of
    ``k`` operations (its own ``k``) right after a bare batch of the same size. The order of the
    implementations rotates every round so none is always first."""
    names = list(impls)
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        shift = r % len(names) if names else 0
        for name in names[shift:] + names[:shift]:
            batch, k = impls[name]
            base = bare(k)
            out[name].append((batch(k) - base) / k)
        tick()
    return out
