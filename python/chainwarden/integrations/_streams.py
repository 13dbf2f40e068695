"""Streamed provider replies, settled when the stream ends or is closed (docs/integrations.md).

The proxies hand out the provider's own events unchanged and delegate every other attribute to the
client's stream object. Each event passes through ``watch`` (which reads usage from it and may hide it:
the usage-only chunk chainwarden asked OpenAI for on the caller's behalf). The contained call stays open
meanwhile and is settled exactly once: at the end of the stream, on ``close()`` / leaving its ``with``
block (at the usage seen so far, else the estimate), when iterating raises (a failed call), or — when
the caller drops an unfinished stream — when the proxy is garbage-collected.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from types import TracebackType
from typing import Any

from chainwarden.containment._blocks import ChainHalted
from chainwarden.containment._held import HeldCall
from chainwarden.integrations._usage import PriceOverrides, Usage, charge
from chainwarden.shield.types import Decision

__all__ = ["AsyncHeldStream", "HeldStream", "Settle", "settle_failure"]

_log = logging.getLogger("chainwarden.integrations")

# Reads usage from one event into the Usage; returns False to hide the event from the caller.
Watch = Callable[[Any, Usage], bool]


def settle_failure(held: HeldCall, exc: BaseException) -> ChainHalted | None:
    """Settles ``held`` as failed by ``exc``. Returns ``ChainHalted`` (naming the stop reason) when the
    chain stops there, None when the error itself should propagate (retries remain)."""
    decision = held.fail(exc)
    if decision is Decision.HALT:
        return held.halted(decision)
    return None


class Settle:
    """The settlement shared by the sync and async proxies."""

    def __init__(
        self, held: HeldCall, usage: Usage, watch: Watch, estimate: float, overrides: PriceOverrides | None
    ) -> None:
        self.held = held
        self.usage = usage
        self.watch = watch
        self.estimate = estimate
        self.overrides = overrides

    def ok(self) -> None:
        held = self.held
        if held.node is None:
            return
        charge(self.usage, self.estimate, self.overrides, held.report)
        decision = held.succeed()
        if decision is not Decision.ALLOW:
            raise held.halted(decision)

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
                halted = settle_failure(settle.held, exc)
                if halted is None:
                    raise
                raise halted from exc
            if settle.watch(event, settle.usage):
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
                halted = settle_failure(settle.held, exc)
                if halted is None:
                    raise
                raise halted from exc
            if settle.watch(event, settle.usage):
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
