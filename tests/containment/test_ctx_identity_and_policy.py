"""Agent identity, policy views and authority (docs/containment.md "Agent identity and policy views"): the
identity is in every snapshot and on the chain's root node; the active policy view's audit dict is in every
snapshot and on the chain's stop events; authority travels in ``ChainMetadata``."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from veronica_core.a2a.types import AgentIdentity, TrustLevel
from veronica_core.policy.frozen_view import PolicyViewHolder
from veronica_core.security.authority import AuthorityClaim, AuthoritySource

from chainwarden.containment import ChainMetadata, ExecutionConfig, ExecutionContext
from chainwarden.shield import Decision


def config(max_steps: int = 5) -> ExecutionConfig:
    return ExecutionConfig(max_cost_usd=1.0, max_steps=max_steps, max_retries_total=1)


def test_the_agent_identity_is_in_snapshots_and_on_the_root_node() -> None:
    identity = AgentIdentity(agent_id="planner-7", origin="a2a", trust_level=TrustLevel.TRUSTED)
    ctx = ExecutionContext(config(), agent_identity=identity)
    assert ctx.agent_identity is identity
    assert ctx.get_snapshot().agent_identity is identity
    graph = ctx.get_graph_snapshot()
    root = graph["nodes"][next(iter(graph["nodes"]))]
    assert root["name"] == "chain_root"
    # Beside the chain's context (its request id, docs/containment.md "Context that travels").
    assert root["metadata"] == {
        "request_id": ctx.get_snapshot().metadata.request_id,  # type: ignore[union-attr]
        "agent_identity": {"agent_id": "planner-7", "origin": "a2a", "trust_level": "trusted"},
    }
    assert ExecutionContext(config()).get_snapshot().agent_identity is None


@pytest.mark.parametrize("identity", ["planner", object(), AgentIdentity.__new__(AgentIdentity)])
def test_an_identity_without_an_agent_id_is_refused(identity: Any) -> None:
    with pytest.raises(TypeError, match="agent_identity must have a non-empty str agent_id"):
        ExecutionContext(config(), agent_identity=identity)


class View:
    def __init__(self, policy_id: str) -> None:
        self.policy_id = policy_id

    def to_audit_dict(self) -> dict[str, Any]:
        return {"policy_id": self.policy_id, "version": 3}


def test_the_active_policy_view_is_in_snapshots_and_stop_events() -> None:
    holder = PolicyViewHolder(View("spend-guard"))
    ctx = ExecutionContext(config(max_steps=1), policy_view_holder=holder)
    assert dict(ctx.get_snapshot().policy_metadata or {}) == {"policy_id": "spend-guard", "version": 3}
    ctx.wrap_llm_call(lambda: None)
    holder.swap(View("spend-guard-v2"))  # the view in force when the chain stops is the one recorded
    assert ctx.wrap_llm_call(lambda: None) is Decision.HALT
    snap = ctx.get_snapshot()
    [stop] = [e for e in snap.events if e.event_type == "step_limit_exceeded"]
    assert stop.metadata["policy"] == {"policy_id": "spend-guard-v2", "version": 3}
    with pytest.raises(TypeError):
        snap.policy_metadata["version"] = 4  # type: ignore[index]  # read-only
    holder.swap(None)
    assert ctx.get_snapshot().policy_metadata is None


def test_a_failing_policy_view_is_logged_and_leaves_no_metadata(caplog: pytest.LogCaptureFixture) -> None:
    class Broken:
        def to_audit_dict(self) -> dict[str, Any]:
            raise RuntimeError("bundle unreadable")

    ctx = ExecutionContext(config(), policy_view_holder=PolicyViewHolder(Broken()))
    with caplog.at_level(logging.WARNING, logger="chainwarden.containment"):
        assert ctx.get_snapshot().policy_metadata is None
    assert "bundle unreadable" in caplog.text
    with pytest.raises(TypeError, match="policy_view_holder must have a current attribute"):
        ExecutionContext(config(), policy_view_holder=View("x"))


def test_children_inherit_the_policy_view_but_not_the_identity() -> None:
    identity = AgentIdentity(agent_id="lead", origin="local")
    parent = ExecutionContext(
        config(), agent_identity=identity, policy_view_holder=PolicyViewHolder(View("p"))
    )
    child = parent.spawn_child()
    assert child.get_snapshot().policy_metadata == {"policy_id": "p", "version": 3}
    assert child.agent_identity is None


def test_authority_travels_in_the_chain_metadata() -> None:
    claim = AuthorityClaim(source=AuthoritySource.USER_INPUT, chain=("user-1", "agent-1"))
    meta = ChainMetadata(request_id="r", chain_id="c", authority=claim)
    ctx = ExecutionContext(config(), metadata=meta)
    assert ctx.metadata.authority is claim
    assert ChainMetadata(request_id="r", chain_id="c").authority is None


def test_identity_and_governance_arguments_keep_the_reference_positions() -> None:
    identity = AgentIdentity(agent_id="pos", origin="mcp")
    ctx = ExecutionContext(config(), None, None, None, None, None, identity, None, None)
    assert ctx.agent_identity is identity
