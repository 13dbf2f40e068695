"""An ExecutionContext's agent identity on its OpenTelemetry root span (docs/containment.md "Agent identity
and policy views"): ``gen_ai.agent.id`` beside ``gen_ai.agent.name``."""

from __future__ import annotations

from veronica_core.a2a.types import AgentIdentity

from chainwarden import ExecutionConfig, ExecutionContext
from chainwarden.otel import instrument

from .conftest import Spans


def test_the_root_span_names_the_agent(spans: Spans) -> None:
    identity = AgentIdentity(agent_id="researcher-2", origin="local")
    ctx = ExecutionContext(ExecutionConfig(1.0, 5, 1), agent_identity=identity)
    with instrument(ctx, tracer_provider=spans.provider):
        ctx.wrap_llm_call(lambda: None)
    by_name = {s.name: dict(s.attributes or {}) for s in spans.finished()}
    root = by_name["invoke_agent chain_root"]
    assert root["gen_ai.agent.id"] == "researcher-2"
    assert root["gen_ai.agent.name"] == "chain_root"
    assert all(
        "gen_ai.agent.id" not in attrs for name, attrs in by_name.items() if name != "invoke_agent chain_root"
    )


def test_no_identity_no_agent_id(spans: Spans) -> None:
    ctx = ExecutionContext(ExecutionConfig(1.0, 5, 1))
    with instrument(ctx, tracer_provider=spans.provider):
        ctx.wrap_llm_call(lambda: None)
    assert all("gen_ai.agent.id" not in (s.attributes or {}) for s in spans.finished())
