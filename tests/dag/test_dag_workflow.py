"""`Graph(leaf_repair=False)`: a pure task workflow never grows agent_message leaves (docs/dag.md)."""

from __future__ import annotations

from typing import Any

import pytest
from dag_helpers import event_types

from chainwarden.dag import DagError, DagInvalidArgumentError, ExecutionResult, Graph, Runner


def build_workflow(g: Graph) -> None:
    with g.mutate() as m:
        for name in ("fetch", "parse", "load", "report"):
            m.create_node("task", node_id=name, input={"name": name})
        m.create_edge("fetch", "parse", "dependency")
        m.create_edge("parse", "load", "dependency")
        m.create_edge("parse", "report", "sequence")


def run_task(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
    if node["input"]["name"] == "report":
        return ExecutionResult.errored("no printer")
    return ExecutionResult.finished(output={"result": node["input"]["name"]})


def agent_messages(g: Graph) -> list[str]:
    return [n["node_id"] for n in g.nodes(include_compressed=True) if n["node_type"] == "agent_message"]


def test_a_task_workflow_without_leaf_repair_never_gets_agent_message_leaves() -> None:
    g = Graph(leaf_repair=False)
    assert g.leaf_repair is False
    build_workflow(g)
    stats = Runner(g, {"task": run_task}).run_until_idle()
    assert stats.outcomes == {"finished": 3, "errored": 1}
    assert stats.repaired_leaves == 0
    with g.mutate() as m:  # an empty block commits too: still nothing added
        m.create_node("task", "finished", node_id="manual")
    assert agent_messages(g) == []
    assert sorted(g.leaves()) == ["load", "manual", "report"]
    assert "leaf_invariant_repaired" not in event_types(g)
    assert g.check_invariants() is None


def test_the_same_workflow_with_the_default_grows_replies() -> None:
    g = Graph()
    assert g.leaf_repair is True
    build_workflow(g)
    stats = Runner(
        g, {"task": run_task, "agent_message": lambda n, c: ExecutionResult.finished()}
    ).run_until_idle()
    assert stats.repaired_leaves == 2  # after load and after the errored report
    assert len(agent_messages(g)) == 2
    assert g.check_invariants() is None


def test_explicit_repair_still_repairs_and_apply_result_does_not() -> None:
    g = Graph(leaf_repair=False)
    with g.mutate() as m:
        m.create_node("task", node_id="t")
    assert g.claim(1) == ["t"]
    changed, skipped, repaired = g.apply_result("t", "finished", output={"result": 1})
    assert (changed, skipped, repaired) == (True, [], [])
    (added,) = g.repair_leaves()
    assert g.node(added)["metadata"] == {"generated_by": "leaf_invariant"}


def test_the_flag_survives_json_and_is_absent_by_default() -> None:
    off = Graph(leaf_repair=False)
    build_workflow(off)
    data = off.to_json()
    back = Graph.from_json(data)
    assert back.leaf_repair is False
    assert back.to_json() == data
    on = Graph()
    build_workflow(on)
    assert b"leaf_repair" not in on.to_json()
    assert Graph.from_json(on.to_json()).leaf_repair is True


@pytest.mark.parametrize("bad", [1, 0, "no", 1.0, [], {"on": True}])
def test_a_bad_leaf_repair_is_a_typed_error_naming_it(bad: Any) -> None:
    with pytest.raises(DagInvalidArgumentError, match="leaf_repair"):
        Graph(leaf_repair=bad)


def test_a_bad_leaf_repair_in_a_file_is_refused() -> None:
    data = Graph(leaf_repair=False).to_json().replace(b'"leaf_repair":false', b'"leaf_repair":"no"')
    with pytest.raises(DagError, match="leaf_repair"):
        Graph.from_json(data)
