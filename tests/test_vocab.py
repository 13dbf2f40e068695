"""The core's vocabularies and error registry as Python enums (docs/errors.md "Vocabularies"): each enum is
the core's list, word for word and in order; the stub declares the same members; the ``Literal`` aliases of
public signatures name the same words; every ``.code`` the package carries is a row of the one registry."""

from __future__ import annotations

import ast
import json
import pickle
from enum import StrEnum
from pathlib import Path
from typing import get_args

import pytest

from chainwarden import _core, errors, vocab
from chainwarden.billing.records import RUN_STATUSES
from chainwarden.containment import _decorators, _memory_calls, execution_graph, types
from chainwarden.dag import EXECUTABLE, TERMINAL, EdgeType, Graph, NodeType, State
from chainwarden.dag.execution import LEASE_LOST
from chainwarden.dag.result import Outcome
from chainwarden.runtime import events

ENUMS = {
    "node_kind": vocab.NodeKind,
    "node_status": vocab.NodeStatus,
    "call_status": vocab.CallStatus,
    "stop_reason": vocab.StopReason,
    "dag_node_type": vocab.DagNodeType,
    "dag_state": vocab.DagState,
    "dag_outcome": vocab.DagOutcome,
    "dag_edge_type": vocab.DagEdgeType,
}
SUBSETS = {
    "node_status_ended": vocab.ENDED_NODE_STATUSES,
    "dag_node_type_executable": vocab.EXECUTABLE_DAG_NODE_TYPES,
}


def test_every_core_vocabulary_is_one_enum_or_subset() -> None:
    assert set(_core.VOCABULARIES) == set(ENUMS) | set(SUBSETS)
    for name, enum in ENUMS.items():
        assert [m.value for m in enum] == list(_core.VOCABULARIES[name]), name
        assert [m.name for m in enum] == [w.upper() for w in _core.VOCABULARIES[name]], name
    for name, subset in SUBSETS.items():
        assert subset == frozenset(_core.VOCABULARIES[name]), name
    assert list(vocab.ErrorCode) == list(_core.ERROR_CODES)


def test_members_are_the_plain_strings() -> None:
    assert vocab.NodeKind.LLM == "llm" and isinstance(vocab.NodeKind.LLM, str)
    assert vocab.DagState("pending") is vocab.DagState.PENDING
    assert json.dumps([vocab.StopReason.BUDGET_EXCEEDED]) == '["budget_exceeded"]'
    assert f"{vocab.CallStatus.HALTED}" == "halted"
    assert pickle.loads(pickle.dumps(vocab.ErrorCode.DAG_EDGE_CYCLE)) is vocab.ErrorCode.DAG_EDGE_CYCLE
    with pytest.raises(ValueError):
        vocab.DagState("ready")


def test_the_dag_names_are_the_core_enums() -> None:
    assert NodeType is vocab.DagNodeType and State is vocab.DagState and EdgeType is vocab.DagEdgeType
    assert (
        frozenset(TERMINAL)
        == frozenset(vocab.DagOutcome)
        == {"finished", "errored", "rejected", "skipped", "cancelled"}
    )
    assert frozenset(EXECUTABLE) == {"task", "agent_message"}
    g = Graph()
    with g.mutate() as m:  # the enums are accepted where the words are, and read back as the words
        node_id = m.create_node(NodeType.TASK, State.PENDING)
    assert g.node(node_id)["node_type"] == "task" and g.node(node_id)["state"] == State.PENDING


def test_literal_aliases_name_the_core_words() -> None:
    """The ``Literal`` aliases stay for type checkers (public signatures); here they meet the core's lists."""
    assert get_args(execution_graph.NodeKind) == _core.VOCABULARIES["node_kind"]
    assert get_args(execution_graph.NodeStatus) == _core.VOCABULARIES["node_status"]
    assert get_args(types.NodeStatus) == _core.VOCABULARIES["call_status"]
    # A contained call is any kind but a graph's own `system` node.
    assert get_args(types.NodeKind) == tuple(k for k in vocab.NodeKind if k != vocab.NodeKind.SYSTEM)
    assert set(get_args(_memory_calls.MemoryKind)) == {
        vocab.NodeKind.MEMORY_READ,
        vocab.NodeKind.MEMORY_WRITE,
    }
    assert set(get_args(_decorators.Kind)) == _decorators._KINDS
    assert set(get_args(Outcome)) == set(vocab.DagOutcome)


def test_the_runtimes_own_words_are_its_enums() -> None:
    """The two lists the core does not have (runs) live in ``vocab`` too; what the runtime checks against
    and types with are those enums' words."""
    assert RUN_STATUSES == tuple(vocab.RunStatus) == ("running", "ok", "error", "abandoned")
    assert get_args(events.ErrorCode) == tuple(vocab.RunErrorCode)
    assert frozenset(vocab.RunErrorCode) == events.ERROR_CODES


def _native_members(cls: type) -> dict[str, str]:
    return {name: getattr(cls, name).value for name in dir(cls) if name.isupper()}


def test_the_native_call_kind_spells_the_vocabulary() -> None:
    """``_core.CallKind`` (the containment binding's argument type) is the same words under the same names
    as the vocabulary (a contained call is any kind but a graph's own ``system``)."""
    kinds = {m.name: m.value for m in vocab.NodeKind if m is not vocab.NodeKind.SYSTEM}
    assert _native_members(_core.CallKind) == kinds


def test_a_call_status_is_the_vocabularys_word() -> None:
    """The binding has no call-status enum of its own: ``StopCause.status`` is a word of the vocabulary and
    ``ChainCore.fail`` takes one (an enum member or the plain word), refusing any other word by name with
    the call left open."""
    assert not hasattr(_core, "CallStatus")
    assert {vocab.CallStatus(c.status) for c in _native_stop_causes()} == {"halted", "aborted", "timeout"}
    core = _core.ChainCore(1.0, 10, 0, 0, "status")
    node = core.begin(None, _core.CallKind.TOOL, "t", None, 0.0)
    with pytest.raises(errors.InvalidArgument) as bad:
        core.fail(node, True, 0.0, False, "failed", "E")
    assert bad.value.argument == "status" and "'timeout'" in str(bad.value)
    with pytest.raises(errors.InvalidArgumentType):
        core.fail(node, True, 0.0, False, 3, "E")
    assert core.is_open(node)
    core.fail(node, True, 0.0, False, "timeout", "E")
    assert [r.status for r in core.records(0, 1)] == [vocab.CallStatus.TIMEOUT]


def _native_stop_causes() -> list[_core.StopCause]:
    return [getattr(_core.StopCause, name) for name in dir(_core.StopCause) if name.isupper()]


def test_the_stub_declares_the_runtime_members() -> None:
    """vocab.pyi is what type checkers see; its members are the runtime enums' (stubtest checks names, this
    the values too)."""
    stub = ast.parse((Path(vocab.__file__).with_suffix(".pyi")).read_text())
    declared = {
        node.name: {t.targets[0].id: t.value.value for t in node.body if isinstance(t, ast.Assign)}  # type: ignore[attr-defined]
        for node in stub.body
        if isinstance(node, ast.ClassDef)
    }
    runtime = {name: getattr(vocab, name) for name in vocab.__all__ if isinstance(getattr(vocab, name), type)}
    assert set(declared) == set(runtime)
    for name, enum in runtime.items():
        assert issubclass(enum, StrEnum)
        assert declared[name] == {m.name: m.value for m in enum}, name


def test_every_code_is_a_row_of_the_registry() -> None:
    """Each code's class exists in chainwarden.errors under the root; every class that carries a ``code``
    carries a row of the registry naming that class."""
    for code, class_name in _core.ERROR_CODES.items():
        cls = getattr(errors, class_name)
        assert issubclass(cls, errors.ChainwardenError), code
    carrying = [c for c in vars(errors).values() if isinstance(c, type) and "code" in vars(c)]
    assert len(carrying) == 8  # DagError, DagInvalidArgumentError, the six store classes
    for cls in carrying:
        assert _core.ERROR_CODES[cls.code] == cls.__name__, cls
    assert LEASE_LOST == "dag.claim.lease_lost" == vocab.ErrorCode.DAG_CLAIM_LEASE_LOST
    # The recorder's and the DAG's "node not found" are two rows, raised as two classes.
    assert _core.ERROR_CODES["recorder.node_not_found"] == "NotFound"
    assert _core.ERROR_CODES["dag.node_not_found"] == "DagNotFoundError"


@pytest.mark.parametrize(
    "call",
    [
        lambda: _core.ExecutionGraph().mark_running("missing"),
        lambda: Graph().node("missing"),
        lambda: Graph().claim("10"),
        lambda: _core.ExecutionGraph().create_root("r", metadata={"x": float("nan")}),
    ],
)
def test_raised_errors_are_raised_as_their_row_says(call: object) -> None:
    with pytest.raises(errors.ChainwardenError) as info:
        call()  # type: ignore[operator]
    code = info.value.code  # type: ignore[attr-defined]
    assert code in vocab.ErrorCode.__members__.values()
    assert type(info.value).__name__ == _core.ERROR_CODES[code]
