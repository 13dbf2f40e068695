"""Positions for drawing a run as a layered graph: a call tree or a DAG, top to bottom.

Layer = longest path from a root (a tree's depth); inside a layer, nodes keep the order of a depth-first walk
from the roots, so a tree's subtrees stay side by side. Edges to unknown nodes are ignored, and a cycle
(which no chainwarden file has) cannot loop: each node is placed once."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from chainwarden.cli.runfile import Run

__all__ = ["Placed", "layered"]


@dataclass(frozen=True, slots=True)
class Placed:
    id: str
    layer: int
    slot: int


def _walk_order(ids: list[str], children: dict[str, list[str]], roots: list[str]) -> list[str]:
    seen: set[str] = set()
    order: list[str] = []
    for root in [*roots, *ids]:  # then anything unreachable from a root, in saved order
        stack = [root]
        while stack:
            node = stack.pop()
            if node in seen:
                continue
            seen.add(node)
            order.append(node)
            stack.extend(reversed(children.get(node, [])))
    return order


def layered(run: Run) -> list[Placed]:
    ids = [c.id for c in run.calls]
    known = set(ids)
    children: dict[str, list[str]] = defaultdict(list)
    indegree = dict.fromkeys(ids, 0)
    for parent, child, _ in run.edges:
        if parent in known and child in known and parent != child:
            children[parent].append(child)
            indegree[child] += 1
    roots = [i for i in ids if indegree[i] == 0]
    # Longest-path layering by Kahn's algorithm; nodes left on a cycle keep layer 0.
    layer = dict.fromkeys(ids, 0)
    pending = dict(indegree)
    ready = list(roots)
    while ready:
        node = ready.pop()
        for child in children.get(node, []):
            layer[child] = max(layer[child], layer[node] + 1)
            pending[child] -= 1
            if pending[child] == 0:
                ready.append(child)
    slots: dict[int, int] = defaultdict(int)
    placed = []
    for node in _walk_order(ids, children, roots):
        placed.append(Placed(node, layer[node], slots[layer[node]]))
        slots[layer[node]] += 1
    return placed
