"""Mermaid flowcharts of a saved run.

A DAG is exported by the engine itself (``Graph.to_mermaid``, the one DAG exporter). A call tree (an
``ExecutionGraph`` or containment snapshot) is written here: node ids are generated (``N0``, ``N1`` …) so no
user string ever becomes Mermaid syntax, and labels are quoted and escaped by the engine's label rule."""

from __future__ import annotations

import json

from chainwarden import _core
from chainwarden.cli.runfile import Run, RunFileError
from chainwarden.dag import DagError, Graph

__all__ = ["mermaid_label", "run_to_mermaid"]


def mermaid_label(text: str, max_chars: int = 80) -> str:
    """``text`` as the inside of a quoted Mermaid label: one line, cut to ``max_chars``, escaped by the core's
    one rule, the same the DAG export uses (docs/design.md §25)."""
    return _core.mermaid_label(text, max_label_chars=max_chars)


def run_to_mermaid(run: Run) -> str:
    if run.source == "dag":
        try:
            graph = Graph.from_json(json.dumps(run.raw))
        except (DagError, ValueError, TypeError) as exc:
            raise RunFileError(f"the DAG engine cannot load this file: {exc}") from None
        return graph.to_mermaid()
    ids = {call.id: f"N{i}" for i, call in enumerate(run.calls)}
    lines = ["flowchart TD"]
    for call in run.calls:
        detail = f"{call.kind} · {call.status}"
        if call.cost_usd:
            detail += f" · ${call.cost_usd:.6f}"
        lines.append(f'{ids[call.id]}["{mermaid_label(call.name)}<br/>{mermaid_label(detail)}"]')
    for parent, child, _label in run.edges:
        if parent in ids and child in ids:
            lines.append(f"{ids[parent]} --> {ids[child]}")
    stopped = [ids[c.id] for c in run.calls if c.halted or c.failed]
    if stopped:
        lines.append("classDef stopped fill:#fde2e1,stroke:#c0392b,color:#7b241c")
        lines.append(f"class {','.join(stopped)} stopped")
    return "\n".join(lines) + "\n"
