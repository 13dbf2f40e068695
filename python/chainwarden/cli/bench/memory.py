"""Memory per recorded node, measured in a fresh interpreter: `python -m chainwarden.cli.bench.memory IMPL N`
prints ``{"bytes_per_node": ..., "nodes": N}``.

A fresh process because freed memory of earlier workloads would be reused and hide the growth; RSS (not
tracemalloc) because the chainwarden graph lives in Rust allocations tracemalloc cannot see. The same method
as benches/memory_per_node.py, without psutil."""

from __future__ import annotations

import gc
import importlib
import json
import os
import subprocess
import sys
from typing import Any

from chainwarden.errors import ChainwardenError

__all__ = ["measure", "rss_bytes"]


class MeasurementFailed(ChainwardenError, RuntimeError):
    """The child process measuring one implementation's memory failed; its stderr is in the message."""


def rss_bytes() -> int | None:
    """Resident set size now (Linux), else the peak RSS (it only grows here), else None."""
    try:
        with open("/proc/self/statm", encoding="ascii") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        pass
    try:
        import resource  # noqa: PLC0415 - not on Windows
    except ImportError:
        return None
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak * 1024


def _graph(impl: str) -> Any:
    if impl == "chainwarden":
        from chainwarden import ExecutionGraph  # noqa: PLC0415

        return ExecutionGraph()
    # Imported by name: an optional peer without type information.
    return importlib.import_module("veronica_core.containment").ExecutionGraph()


def _child(impl: str, n: int) -> dict[str, Any]:
    g = _graph(impl)
    root = g.create_root("bench")
    gc.collect()
    before = rss_bytes()
    for i in range(n):
        node = g.begin_node(root, "llm" if i % 2 else "tool", "step")
        g.mark_running(node)
        g.mark_success(node, 0.001, 10, 20)
    gc.collect()
    after = rss_bytes()
    if before is None or after is None:
        return {"nodes": n, "bytes_per_node": None}
    return {"nodes": n, "bytes_per_node": (after - before) / n}


def measure(impl: str, n: int, timeout_s: float = 120.0) -> float | None:
    """Bytes of RSS per recorded node for ``impl`` (None when this platform cannot tell)."""
    done = subprocess.run(
        [sys.executable, "-m", "chainwarden.cli.bench.memory", impl, str(n)],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise MeasurementFailed(f"memory measurement for {impl} failed: {done.stderr.strip()[-500:]}")
    value = json.loads(done.stdout)["bytes_per_node"]
    return None if value is None else float(value)


if __name__ == "__main__":
    print(json.dumps(_child(sys.argv[1], int(sys.argv[2]))))
