"""Streamed provider replies, settled when the stream ends or is closed (docs/integrations.md).

The proxies hand out the provider's own events unchanged and delegate every other attribute to the
client's stream object. Each event passes through ``watch`` (which reads usage from it and may hide it:
the usage-only chunk chainwarden asked OpenAI for on the caller's behalf). The contained call stays open
meanwhile and is settled exactly once: at the end of the stream, on ``close()`` / leaving its ``with``
block (at the usage seen so far), when iterating raises (a failed call, charged the usage seen so far:
an Anthropic stream cut after ``message_start`` has already cost its prompt, docs/design.md §30), or —
when the caller drops an unfinished stream — when the proxy is garbage-collected. A stream that ends
without any usage is charged its estimate and flagged ``usage_missing``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any, NoReturn, Protocol

from chainwarden.containment.calls import Capture
from chainwarden.errors import ChainHalted
from chainwarden.integrations._facts import response_facts
from chainwarden.integrations._usage import (
    USAGE_MISSING,
    PriceOverrides,
    Usage,
    UsageError,
    charge,
    note_usage_missing,
)
from chainwarden.shield.types import Decision

__all__ = ["AsyncHeldStream", "Held", "HeldStream", "Settle", "settle_failure"]

_log = logging.getLogger("chainwarden.integrations")

# Reads usage from one event into the Usage; returns False to hide the event from the caller.
Watch = Callable[[Any, Usage], bool]


class Held(Protocol):
    """A call opened now and settled later: a chain's held call (``containment._held.HeldCall``) or a
    node of a recording graph (``integrations._recorded.GraphCall``)."""

    @property
    def node(self) -> object: ...
    @property
    def node_name(self) -> str: ...
    @property
    def capture(self) -> Capture | None: ...
    def report(
        self, cost_usd: float, tokens_in: int | None = None, tokens_out: int | None = None
    ) -> None: ...
    def annotate(self, entries: dict[str, Any]) -> None: ...
    def flag(self, key: str) -> None: ...
    def succeed(self) -> Decision: ...
    def fail(self, exc: BaseException) -> Decision: ...
    def halted(self, decision: Decision) -> ChainHalted: ...


def settle_failure(held: Held, exc: BaseException) -> ChainHalted | None:
    """Settles ``held`` as failed by ``exc``. Returns ``ChainHalted`` (naming the stop reason) when the
    chain stops there, None when the error itself should propagate (retries remain)."""
    decision = held.fail(exc)
    if decision is Decision.HALT:
        return held.halted(decision)
    return None


class Settle:
    """The settlement shared by the sync and async proxies."""

    def __init__(
        self,
        held: Held,
        usage: Usage,
        watch: Watch,
        *,
        fallback: float,
        overrides: PriceOverrides | None,
        name: str,
    ) -> None:
        self.held = held
        self.usage = usage
        self.watch = watch
        self.fallback = fallback
        self.overrides = overrides
        self.name = name

    def _report_seen(self) -> UsageError | None:
        """Reports the usage seen so far to the open call (its estimate when there is none, or when it
        cannot be a token count: returned then, the call must end with it)."""
        held = self.held
        try:
            charge(self.usage, self.fallback, self.overrides, held.report)
        except UsageError as exc:
            held.report(self.fallback)
            return exc
        if not self.usage.seen:
            note_usage_missing(self.name, self.name, lambda: held.flag(USAGE_MISSING))
        return None

    def ok(self) -> None:
        held = self.held
        if held.node is None:
            return
        held.annotate(response_facts(held.capture, self.usage))
        invalid = self._report_seen()
        if invalid is not None:
            self.raise_failed(invalid, reported=True)
        decision = held.succeed()
        if decision is not Decision.ALLOW:
            raise held.halted(decision)

    def raise_failed(self, exc: BaseException, *, reported: bool = False) -> NoReturn:
        """Settles the call as failed by ``exc``, charged the usage seen so far, and raises: ``exc``
        itself while retries remain, else ``ChainHalted`` from it."""
        held = self.held
        if held.node is not None and not reported:
            invalid = self._report_seen()
            if invalid is not None:
                exc = invalid
        halted = settle_failure(held, exc)
        if halted is None:
            raise exc
        raise halted from exc

    def watched(self, event: Any) -> bool:
        """Reads one event's usage; a value that cannot be a token count ends the call."""
        try:
            return self.watch(event, self.usage)
        except UsageError as exc:
            self.held.report(self.fallback)
            self.raise_failed(exc, reported=True)

    def quietly(self) -> None:
        """Settles from a finalizer: nothing may escape."""
        try:
            self.ok()
        except Exception:
            _log.warning("settling an abandoned stream failed", exc_info=True)


class HeldStream:
    """A sync stream of provider events whose contained call ends with it."""

    def __init__(self, inner: Any, settle: Settle) -> None:
        self._inner = inner
        self._iter = iter(inner)
        self._settle = settle

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("_inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def __iter__(self) -> HeldStream:
        return self

    def __next__(self) -> Any:
        settle = self._settle
        while True:
            try:
                event = next(self._iter)
            except StopIteration:
                settle.ok()
                raise
            except BaseException as exc:
                settle.raise_failed(exc)
            if settle.watched(event):
                return event

    def close(self) -> None:
        try:
            self._inner.close()
        finally:
            self._settle.ok()

    def __enter__(self) -> HeldStream:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __del__(self) -> None:
        settle = self.__dict__.get("_settle")
        if settle is not None:
            settle.quietly()


class AsyncHeldStream:
    """An async stream of provider events whose contained call ends with it."""

    def __init__(self, inner: Any, settle: Settle) -> None:
        self._inner = inner
        self._iter = inner.__aiter__()
        self._settle = settle

    def __getattr__(self, name: str) -> Any:
        inner = self.__dict__.get("_inner")
        if inner is None:
            raise AttributeError(name)
        return getattr(inner, name)

    def __aiter__(self) -> AsyncHeldStream:
        return self

    async def __anext__(self) -> Any:
        settle = self._settle
        while True:
            try:
                event = await self._iter.__anext__()
            except StopAsyncIteration:
                settle.ok()
                raise
            except BaseException as exc:
                settle.raise_failed(exc)
            if settle.watched(event):
                return event

    async def close(self) -> None:
        try:
            await self._inner.close()
        finally:
            self._settle.ok()

    async def __aenter__(self) -> AsyncHeldStream:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __del__(self) -> None:
        settle = self.__dict__.get("_settle")
        if settle is not None:
            settle.quietly()
