"""The handle ``instrument`` returns: ends live export once, however often ``detach`` is called."""

from __future__ import annotations

import threading
from types import TracebackType
from typing import Any, Protocol

__all__ = ["OtelHandle"]


class _Export(Protocol):
    def detach(self) -> None: ...


class OtelHandle:
    """Live OpenTelemetry export of one target; ``detach()`` (or leaving its ``with`` block) ends it."""

    __slots__ = ("_export", "_lock", "_target", "detached")

    def __init__(self, target: Any, export: _Export) -> None:
        self._target = target
        self._export = export
        self._lock = threading.Lock()
        self.detached = False

    @property
    def target(self) -> Any:
        return self._target

    def detach(self) -> None:
        """Stops exporting and ends the spans still open. Idempotent."""
        with self._lock:
            if self.detached:
                return
            self.detached = True
        self._export.detach()

    def __enter__(self) -> OtelHandle:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.detach()

    def __repr__(self) -> str:
        state = "detached" if self.detached else "live"
        return f"<OtelHandle {type(self._target).__name__} {state}>"
