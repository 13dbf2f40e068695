"""A value that is set exactly once and can be awaited any number of times, from any task."""

from __future__ import annotations

import asyncio
from collections.abc import Generator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class Once(Generic[T]):
    """Awaitable holder: the first `set` wins and later ones are ignored; awaiting never raises.

    Unlike an asyncio.Future it is not bound to a loop at creation and has no exception state, which is what
    `GraphRunResult.final` promises (resolves exactly once, never raises).
    """

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._value: T | None = None
        self._set = False

    def set(self, value: T) -> bool:
        """Sets the value; returns False (and changes nothing) when it was already set."""
        if self._set:
            return False
        self._value, self._set = value, True
        self._event.set()
        return True

    def done(self) -> bool:
        return self._set

    def result(self) -> T:
        if not self._set:
            raise LookupError("not resolved yet")
        return self._value  # type: ignore[return-value]

    async def wait(self) -> T:
        await self._event.wait()
        return self._value  # type: ignore[return-value]

    def __await__(self) -> Generator[Any, None, T]:
        return self.wait().__await__()
