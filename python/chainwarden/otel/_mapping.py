"""How a recorded node becomes a span: names, kinds, attributes and status (docs/integrations.md).

Pure functions over plain values, shared by the after-the-fact export of a snapshot and the live exporters, so
a run looks the same whichever way it reached the collector. Names follow the OpenTelemetry GenAI semantic
conventions: ``chat {model}`` (client span), ``execute_tool {tool}`` and ``invoke_agent {agent}`` (internal
spans); chainwarden's own facts are under ``chainwarden.*``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from chainwarden import _call_facts as facts
from chainwarden._chain_context import CONTEXT_KEYS
from chainwarden.errors import InvalidArgument
from chainwarden.vocab import ENDED_NODE_STATUSES, NodeStatus

__all__ = [
    "CLIENT",
    "SpanShape",
    "end_attributes",
    "error_description",
    "event_fields",
    "shape",
]

OPERATION: Final = "gen_ai.operation.name"
PROVIDER_NAME: Final = "gen_ai.provider.name"
REQUEST_MODEL: Final = "gen_ai.request.model"
RESPONSE_MODEL: Final = "gen_ai.response.model"
RESPONSE_ID: Final = "gen_ai.response.id"
FINISH_REASONS: Final = "gen_ai.response.finish_reasons"
INPUT_TOKENS: Final = "gen_ai.usage.input_tokens"
OUTPUT_TOKENS: Final = "gen_ai.usage.output_tokens"
CACHE_READ: Final = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION: Final = "gen_ai.usage.cache_creation.input_tokens"
INPUT_MESSAGES: Final = "gen_ai.input.messages"
OUTPUT_MESSAGES: Final = "gen_ai.output.messages"
TOOL_ARGUMENTS: Final = "gen_ai.tool.call.arguments"
TOOL_RESULT: Final = "gen_ai.tool.call.result"
TOOL_NAME: Final = "gen_ai.tool.name"
AGENT_NAME: Final = "gen_ai.agent.name"
AGENT_ID: Final = "gen_ai.agent.id"
ERROR_TYPE: Final = "error.type"
COST: Final = "chainwarden.cost_usd"

# Span kinds by name; the OTel enum is looked up where the framework is imported.
CLIENT: Final = "CLIENT"
INTERNAL: Final = "INTERNAL"

# A graph's terminal statuses that are errors in a trace; success leaves the status unset (the conventions
# leave OK to the application).
ERROR_STATUSES: Final = ENDED_NODE_STATUSES - {NodeStatus.SUCCESS}


@dataclass(frozen=True, slots=True)
class SpanShape:
    """The parts of a span known when a node starts."""

    name: str
    kind: str
    attributes: dict[str, Any]


def shape(
    *,
    node_id: str,
    kind: str,
    name: str,
    model: str | None,
    is_agent: bool,
    chain_id: str | None,
    metadata: Mapping[str, Any] | None,
    context: Mapping[str, Any] | None = None,
) -> SpanShape:
    """Name, span kind and start attributes of a node. ``is_agent``: the root of a chain (or a sub-agent).
    ``context``: the run's context as span attributes (``otel_attributes``), set on every span of the run so
    a backend can filter any of them by user, session or tag."""
    attrs: dict[str, Any] = {
        "chainwarden.node_id": node_id,
        "chainwarden.kind": kind,
        "chainwarden.name": name,
    }
    if chain_id is not None:
        attrs["chainwarden.chain_id"] = chain_id
    meta = metadata or {}
    requested = meta.get(facts.REQUEST_MODEL)
    request_model = requested if isinstance(requested, str) and requested else model
    if kind == "llm":
        attrs[OPERATION] = "chat"
        span_kind = CLIENT
        if request_model:
            attrs[REQUEST_MODEL] = request_model
            span_name = f"chat {request_model}"
        else:
            span_name = "chat"
    elif kind == "tool":
        attrs[OPERATION] = "execute_tool"
        attrs[TOOL_NAME] = name
        span_name, span_kind = f"execute_tool {name}", INTERNAL
    elif is_agent or kind == "system":
        attrs[OPERATION] = "invoke_agent"
        attrs[AGENT_NAME] = name
        identity = metadata.get("agent_identity") if metadata else None
        if isinstance(identity, Mapping) and isinstance(identity.get("agent_id"), str):
            # An ExecutionContext's agent identity, kept on its root (docs/containment.md).
            attrs[AGENT_ID] = identity["agent_id"]
        span_name, span_kind = f"invoke_agent {name}", INTERNAL
    else:
        # memory_read / memory_write: no GenAI operation describes them; keep chainwarden's own vocabulary.
        span_name, span_kind = f"{kind} {name}", INTERNAL
    if request_model and kind != "llm":
        attrs[REQUEST_MODEL] = request_model
    provider = meta.get(facts.PROVIDER)
    if isinstance(provider, str) and provider:
        attrs[PROVIDER_NAME] = provider
    if context:
        attrs.update(context)
    for key, value in meta.items():
        if key in facts.RESERVED or (is_agent and key in CONTEXT_KEYS):
            continue  # exported under their conventional names (above, and in end_attributes)
        attrs[f"chainwarden.metadata.{key}"] = _attribute_value(value)
    return SpanShape(span_name, span_kind, attrs)


def end_attributes(
    *,
    status: str,
    cost_usd: float,
    tokens_in: int | None,
    tokens_out: int | None,
    retries: int,
    stop_reason: str | None,
    error_class: str | None,
    kind: str = "",
    model: str | None = None,
    metadata: Mapping[str, Any] | None = None,
    capture_content: bool = False,
) -> dict[str, Any]:
    """Attributes known when a node ends (or is exported still running). ``metadata`` is the node's, read at
    its end: what the integrations learnt from the response (its id, finish reasons, cache tokens, the model
    that answered); captured content is exported only with ``capture_content`` (the conventions make message
    content opt-in)."""
    attrs: dict[str, Any] = {"chainwarden.status": status, COST: float(cost_usd)}
    if tokens_in is not None:
        attrs[INPUT_TOKENS] = tokens_in
    if tokens_out is not None:
        attrs[OUTPUT_TOKENS] = tokens_out
    meta = metadata or {}
    if kind == "llm":
        # A live export reads the node at its start, before its integration knew the provider's answer.
        provider = meta.get(facts.PROVIDER)
        if isinstance(provider, str) and provider:
            attrs[PROVIDER_NAME] = provider
        requested = meta.get(facts.REQUEST_MODEL)
        if isinstance(requested, str) and requested:
            attrs[REQUEST_MODEL] = requested
        if model and status == "success":
            attrs[RESPONSE_MODEL] = model
        response_id = meta.get(facts.RESPONSE_ID)
        if isinstance(response_id, str) and response_id:
            attrs[RESPONSE_ID] = response_id
        reasons = meta.get(facts.FINISH_REASONS)
        if isinstance(reasons, list | tuple) and reasons and all(isinstance(r, str) for r in reasons):
            attrs[FINISH_REASONS] = list(reasons)
        for key, name in ((facts.CACHE_READ_TOKENS, CACHE_READ), (facts.CACHE_WRITE_TOKENS, CACHE_CREATION)):
            count = meta.get(key)
            if isinstance(count, int) and not isinstance(count, bool) and count >= 0:
                attrs[name] = count
    if capture_content:
        inward, outward = (
            (TOOL_ARGUMENTS, TOOL_RESULT) if kind == "tool" else (INPUT_MESSAGES, OUTPUT_MESSAGES)
        )
        for key, name in ((facts.CONTENT_INPUT, inward), (facts.CONTENT_OUTPUT, outward)):
            text = meta.get(key)
            if isinstance(text, str):
                attrs[name] = text
    if retries:
        attrs["chainwarden.retries"] = retries
    if stop_reason is not None:
        attrs["chainwarden.stop_reason"] = stop_reason
    if error_class is not None:
        attrs["chainwarden.error_class"] = error_class
    if status in ERROR_STATUSES:
        attrs[ERROR_TYPE] = error_class or stop_reason or status
    return attrs


def error_description(status: str, stop_reason: str | None, error_class: str | None) -> str | None:
    """The ERROR status description of a failed or halted node, ``None`` for any other status.

    A halt is a policy stop, so its stop reason says why; a failure is an exception, so its class does."""
    if status == "halt":
        return stop_reason or error_class or "halt"
    if status == "fail":
        return error_class or stop_reason or "fail"
    return None


def event_fields(event: Any) -> tuple[str, dict[str, Any], int | None, str | None]:
    """A safety event (a ``SafetyEvent`` or a divergence event dict) as (name, attributes, ns, node id).

    The node id, when the event names one, is the span the event belongs to; otherwise it goes on the root."""
    if isinstance(event, Mapping):
        fields: Mapping[str, Any] = event
        metadata = event.get("metadata")
        metadata = metadata if isinstance(metadata, Mapping) else {}
    else:
        fields = {
            name: getattr(event, name)
            for name in ("event_type", "decision", "reason", "hook", "request_id", "ts")
            if hasattr(event, name)
        }
        metadata = getattr(event, "metadata", None)
        metadata = metadata if isinstance(metadata, Mapping) else {}
    name = fields.get("event_type")
    if not isinstance(name, str) or not name:
        raise InvalidArgument(f"safety event without an event_type: {event!r}", argument="event")
    attrs: dict[str, Any] = {}
    for key in ("decision", "reason", "hook", "request_id", "severity", "detection_mode"):
        value = fields.get(key)
        if value is not None:
            attrs[f"chainwarden.{key}"] = _attribute_value(getattr(value, "value", value))
    for key, value in {**metadata, **fields}.items():
        if (
            key not in ("event_type", "ts", "metadata")
            and f"chainwarden.{key}" not in attrs
            and value is not None
        ):
            attrs[f"chainwarden.{key}"] = _attribute_value(getattr(value, "value", value))
    node_id = fields.get("node_id", metadata.get("node_id"))
    ts = fields.get("ts")
    time_ns = int(ts.timestamp() * 1e9) if isinstance(ts, datetime) else None
    return name, attrs, time_ns, node_id if isinstance(node_id, str) else None


def _attribute_value(value: Any) -> Any:
    """OTel attributes hold scalars and homogeneous lists of scalars; anything else travels as JSON text."""
    if isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, list | tuple) and value and all(isinstance(v, str) for v in value):
        return list(value)
    return json.dumps(value, default=str, sort_keys=True)
