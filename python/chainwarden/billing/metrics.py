"""Process-local counters for billing anomalies (missing ids, missing costs, negative balances, usage
missing) and billing events, readable by an OpenTelemetry meter (docs/billing.md, "Money follows what
happened")."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

# The OpenTelemetry instrument every counter is observed through, one attribute value per counter name.
OTEL_INSTRUMENT = "chainwarden.events"
OTEL_ATTRIBUTE = "chainwarden.event"


class BillingMetrics:
    """Thread-safe named counters; a metrics exporter can read `snapshot()`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def increment(self, name: str, by: int = 1) -> None:
        with self._lock:
            self._counts[name] += by

    def get(self, name: str) -> int:
        with self._lock:
            return self._counts[name]

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def observe_with(self, meter: Any) -> Any:
        """Registers the counters on an OpenTelemetry ``meter`` (``metrics.get_meter(...)``): one
        asynchronous counter, ``chainwarden.events``, observed at each collection with one data point per
        counter, its name in the ``chainwarden.event`` attribute. Returns the instrument."""
        observation = _otel_observation()

        def observe(_options: Any) -> Iterable[Any]:
            return [
                observation(value, {OTEL_ATTRIBUTE: name}) for name, value in sorted(self.snapshot().items())
            ]

        return meter.create_observable_counter(
            OTEL_INSTRUMENT,
            callbacks=[observe],
            unit="1",
            description="chainwarden billing and usage events (METRICS counters)",
        )


def _otel_observation() -> Any:
    from chainwarden._extras import require  # noqa: PLC0415

    return require("opentelemetry.metrics", "otel").Observation


METRICS = BillingMetrics()
