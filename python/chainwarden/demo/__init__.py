"""`chainwarden demo`: deterministic simulated agent runs, one section per subsystem."""

from __future__ import annotations

from collections.abc import Callable
from typing import TextIO

from chainwarden.demo import billing, containment, dag, graph, langgraph, store

# Each section prints to the stream it is given; order is the order shown.
SECTIONS: list[tuple[str, Callable[[TextIO], None]]] = [
    ("graph", graph.run),
    ("containment", containment.run),
    ("dag", dag.run),
    ("store", store.run),
    ("billing", billing.run),
    ("langgraph", langgraph.run),
]


def run(out: TextIO, only: str | None = None) -> None:
    for name, section in SECTIONS:
        if only is None or only == name:
            section(out)
