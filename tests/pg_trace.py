"""Round trips counted on the real server from libpq's protocol trace of one connection (never a timing):
each wait for the server ends a frontend message the server answers — Sync (extended protocol, pipelines
included) or Query (simple protocol)."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from psycopg.pq import Trace


def round_trips(trace: str) -> int:
    fields = [line.split("\t") for line in trace.splitlines()]
    return sum(1 for f in fields if len(f) > 2 and f[0] == "F" and f[2] in ("Sync", "Query"))


def statements(trace: str) -> int:
    """Statements executed (Execute messages of the extended protocol, plus simple Queries)."""
    fields = [line.split("\t") for line in trace.splitlines()]
    return sum(1 for f in fields if len(f) > 2 and f[0] == "F" and f[2] in ("Execute", "Query"))


@contextlib.contextmanager
def traced(conn: Any) -> Iterator[Callable[[Callable[[], object]], str]]:
    """`measure(action)` runs `action` and returns the protocol trace `conn` wrote meanwhile."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "trace"
        with path.open("w") as out:
            conn.pgconn.trace(out.fileno())
            conn.pgconn.set_trace_flags(Trace.SUPPRESS_TIMESTAMPS)

            def measure(action: Callable[[], object]) -> str:
                out.flush()
                before = path.stat().st_size
                action()
                out.flush()
                return path.read_text()[before:]

            try:
                yield measure
            finally:
                conn.pgconn.untrace()
