"""`ExecutionResult`: what an executor returns for the node it ran."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Outcome = Literal["finished", "errored", "rejected", "cancelled", "skipped"]


@dataclass(frozen=True, slots=True)
class ExecutionResult:
    outcome: Outcome
    content: Any = None
    output: dict[str, Any] | None = None
    metadata: dict[str, Any] | None = None
    message: str | None = None

    @classmethod
    def finished(
        cls, content: Any = None, output: dict[str, Any] | None = None, metadata: dict[str, Any] | None = None
    ) -> ExecutionResult:
        return cls("finished", content=content, output=output, metadata=metadata)

    @classmethod
    def errored(cls, error: object) -> ExecutionResult:
        return cls("errored", message=str(error))

    @classmethod
    def rejected(cls, reason: object) -> ExecutionResult:
        return cls("rejected", message=str(reason))

    @classmethod
    def cancelled(cls, reason: object) -> ExecutionResult:
        return cls("cancelled", message=str(reason))

    @classmethod
    def skipped(cls, reason: object) -> ExecutionResult:
        return cls("skipped", message=str(reason))
