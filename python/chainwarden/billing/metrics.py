"""Process-local counters for billing anomalies (missing ids, missing costs, negative balances)."""

from __future__ import annotations

import threading
from collections import Counter


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


METRICS = BillingMetrics()
