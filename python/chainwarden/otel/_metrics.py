"""The GenAI metrics of the OpenTelemetry semantic conventions, plus what a call cost (docs/integrations.md).

- ``gen_ai.client.token.usage`` (histogram, ``{token}``): the input and the output tokens of each model call,
  told apart by ``gen_ai.token.type``;
- ``gen_ai.client.operation.duration`` (histogram, ``s``): how long each model or tool call took, with
  ``error.type`` when it failed or was refused;
- ``chainwarden.cost`` (counter, ``USD``): what each call was charged (calls that cost nothing add nothing).

Attributes are those the conventions name (operation, provider, request and response model); bucket
boundaries are the conventions' advice. Only the OpenTelemetry API is used: the application's
``MeterProvider`` (or the global one) decides where the measurements go.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from opentelemetry import metrics

from chainwarden._core import __version__
from chainwarden.errors import InvalidArgumentType
from chainwarden.otel._mapping import (
    COST,
    ERROR_TYPE,
    INPUT_TOKENS,
    OPERATION,
    OUTPUT_TOKENS,
    PROVIDER_NAME,
    REQUEST_MODEL,
    RESPONSE_MODEL,
)

__all__ = ["GenAiMetrics"]

# The conventions' advice for gen_ai.client.token.usage and gen_ai.client.operation.duration.
_TOKEN_BUCKETS: Final = [4**i for i in range(14)]  # 1, 4, 16, ... 67,108,864
_DURATION_BUCKETS: Final = [0.01 * 2**i for i in range(14)]  # 0.01 s ... 81.92 s
_TIMED: Final = frozenset({"chat", "execute_tool"})
_BASE: Final = (OPERATION, PROVIDER_NAME, REQUEST_MODEL)


class GenAiMetrics:
    """The instruments of one export; ``record`` is called once per ended span."""

    __slots__ = ("_cost", "_duration", "_tokens")

    def __init__(self, meter_provider: Any = None) -> None:
        if meter_provider is not None and not callable(getattr(meter_provider, "get_meter", None)):
            kind = type(meter_provider).__name__
            raise InvalidArgumentType(
                f"meter_provider must be an OpenTelemetry MeterProvider, got {kind}",
                argument="meter_provider",
            )
        provider = meter_provider if meter_provider is not None else metrics.get_meter_provider()
        meter = provider.get_meter("chainwarden", __version__)
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used",
            explicit_bucket_boundaries_advisory=_TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration",
            explicit_bucket_boundaries_advisory=_DURATION_BUCKETS,
        )
        self._cost = meter.create_counter(
            "chainwarden.cost", unit="USD", description="What the calls were charged, in US dollars"
        )

    def record(self, start: Mapping[str, Any], end: Mapping[str, Any], duration_s: float | None) -> None:
        operation = start.get(OPERATION)
        if operation is None and COST not in end:
            return
        base: dict[str, Any] = {}
        for key in _BASE:  # what the end learnt (a live export's provider, the model asked for) wins
            value = end.get(key) or start.get(key)
            if value is not None:
                base[key] = value
        model = end.get(RESPONSE_MODEL)
        if model is not None:
            base[RESPONSE_MODEL] = model
        if operation in _TIMED and duration_s is not None:
            timed = {**base, ERROR_TYPE: end[ERROR_TYPE]} if ERROR_TYPE in end else base
            self._duration.record(max(duration_s, 0.0), timed)
        if operation == "chat":
            for key, kind in ((INPUT_TOKENS, "input"), (OUTPUT_TOKENS, "output")):
                count = end.get(key)
                if isinstance(count, int):
                    self._tokens.record(count, {**base, "gen_ai.token.type": kind})
        cost = end.get(COST)
        if isinstance(cost, float) and cost > 0.0:
            self._cost.add(cost, {**base, "chainwarden.kind": start.get("chainwarden.kind", "")})
