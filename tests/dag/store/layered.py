"""A layered task graph with dependency edges, shared by the worker tests and the benchmarks."""

from __future__ import annotations

from chainwarden.dag import Graph


def build_layers(graph: Graph, tasks: int, width: int) -> None:
    """`tasks` tasks in layers of `width`; each depends on two tasks of the layer before."""
    with graph.mutate() as m:
        for i in range(tasks):
            m.create_node("task", input={"name": f"t{i}"}, node_id=f"t{i:05d}")
            if i >= width:
                layer_start = (i // width - 1) * width
                for j in {layer_start + i % width, layer_start + (i + 1) % width}:
                    m.create_edge(f"t{j:05d}", f"t{i:05d}", "dependency")
