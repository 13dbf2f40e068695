"""RunEventRelay: one pump per run reads the executor's stream to the end and fans it out.

Subscribers:
- billing gets every UsageReport through an unbounded hand-off (billing never drops, even after Done);
- any number of UI subscribers read the run's event log (usage reports are never shown to them).

UI buffering and overflow policy: a live UI subscriber has a bounded buffer (`ui_buffer` events). The pump
only appends to buffers and never waits, so a slow subscriber cannot slow it. A subscriber whose buffer is
full when the pump has a new event is cut off: it still receives what it had buffered, then
`Error("rate_limit")` and `Done`, and nothing more. The run and its billing are unaffected, and the client may
subscribe again: a new subscriber replays the run's log from the start (read in place, not buffered), or
from a position on (`subscribe(after=n)`): each published event carries its position in the log, `seq`.
`on_event` sees every published event once, in order (the run's journal keeps them in the ledger's database).
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable
from typing import TypeGuard

from chainwarden.billing import UsageFact
from chainwarden.errors import InvalidArgument
from chainwarden.runtime.events import (
    AI_EVENT_TYPES,
    AiEvent,
    AssistantFinal,
    Done,
    Error,
    ErrorCode,
    UiEvent,
    UsageReport,
)

logger = logging.getLogger("chainwarden.runtime")

DEFAULT_UI_BUFFER = 1024
# How long an upstream may go on handing over late usage after a cancel before it is cancelled again.
CANCEL_GRACE_S = 10.0


class _Subscriber:
    __slots__ = ("buffer", "overrun", "wake")

    def __init__(self) -> None:
        self.buffer: deque[UiEvent] = deque()
        self.overrun = False
        self.wake = asyncio.Event()


class RunEventRelay:
    """Pumps one upstream stream; see the module docstring for the fan-out rules."""

    def __init__(
        self,
        upstream: AsyncIterator[AiEvent],
        *,
        on_usage: Callable[[UsageFact], None],
        on_close: Callable[[], None],
        on_event: Callable[[UiEvent], None] | None = None,
        ui_buffer: int = DEFAULT_UI_BUFFER,
        name: str = "run",
    ) -> None:
        if isinstance(ui_buffer, bool) or not isinstance(ui_buffer, int) or ui_buffer < 1:
            raise InvalidArgument(
                f"ui_buffer must be a positive int, got {ui_buffer!r}", argument="ui_buffer"
            )
        self._upstream = upstream
        self._on_usage = on_usage
        self._on_close = on_close
        self._on_event = on_event
        self._ui_buffer = ui_buffer
        self._log: list[UiEvent] = []
        self._live: set[_Subscriber] = set()
        self._terminal = False
        self._started = False
        self._cancel_requested = False
        self._cancels_sent = 0
        self._gave_up = False
        self._watchdog: asyncio.TimerHandle | None = None
        self.error: ErrorCode | None = None
        self.aborted = False
        self.content: str | None = None
        self.usage_reports = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0
        self._task = asyncio.get_running_loop().create_task(self._pump(), name=f"chainwarden-pump-{name}")

    # --- pump ------------------------------------------------------------------------------------------
    async def _pump(self) -> None:
        self._started = True
        try:
            try:
                if not self._cancel_requested:
                    async for event in self._upstream:
                        if self._cancel_requested:
                            # Cancelled: what the run used while it stopped is still billed (an upstream
                            # hands it on after the cancel, docs/runtime.md "Cancelling a run"); the rest
                            # is nobody's to see. An upstream past its grace is no longer read.
                            if isinstance(event, UsageReport):
                                self._accept(event)
                            if self._gave_up:
                                break
                            continue
                        self._accept(event)
            finally:
                await _aclose(self._upstream)
        except asyncio.CancelledError:
            self._end("aborted")
            # Our own cancel() is a normal ending; anyone else's (loop shutdown) must still propagate.
            if self._takes_back_own_cancels() or not self._cancel_requested:
                raise
        except Exception:
            logger.exception("upstream stream of the run failed")
            self._end("internal")
        else:
            self._end("aborted" if self._cancel_requested else None)
            # An upstream that took our cancel and ended its stream: the task owes nobody a cancellation.
            self._takes_back_own_cancels()
        finally:
            if self._watchdog is not None:
                self._watchdog.cancel()
            self._on_close()

    def _takes_back_own_cancels(self) -> bool:
        """Forgets the cancellations this relay sent its pump; True when someone else's remain."""
        task = asyncio.current_task()
        if task is None:
            return True
        remaining = task.cancelling()
        for _ in range(self._cancels_sent):
            remaining = task.uncancel()
        self._cancels_sent = 0
        return remaining > 0

    def _accept(self, event: object) -> None:
        if not _is_event(event):
            logger.error("upstream sent %r, which is not an AiEvent; ignored", type(event).__name__)
            return
        if isinstance(event, UsageReport):
            # Billing first and always, including after the terminal event (docs/design.md §18). A report
            # smuggled past its own check (no UsageFact) is the billing's to refuse, alone (§30).
            self.usage_reports += 1
            fact = event.fact
            if isinstance(fact, UsageFact):
                self.prompt_tokens += fact.input_tokens or 0
                self.completion_tokens += fact.output_tokens or 0
            self._on_usage(fact)
            return
        if self._terminal:
            # After an Error the relay has already written the Done the upstream owes, so the upstream's own
            # Done is expected then; anything else is a protocol slip worth a log line.
            if not (isinstance(event, Done) and self.error is not None):
                logger.warning("upstream sent %s after its terminal event; not shown", event.type)
            return
        if isinstance(event, Error):
            self.error = event.code
            self._publish(event)
            self._publish(Done())
            self._terminal = True
            return
        if isinstance(event, AssistantFinal):
            self.content = event.content
        self._publish(event)
        if isinstance(event, Done):
            self._terminal = True

    def _end(self, code: ErrorCode | None) -> None:
        """Guarantees the log ends with exactly one Done (preceded by Error when the run failed)."""
        if self._terminal:
            # The run's outcome was decided by its terminal event; a later cancel only stops the tail.
            return
        if code == "aborted":
            self.aborted = True
        if code is not None:
            self.error = code
            self._publish(Error(code))
        self._publish(Done())
        self._terminal = True

    def _publish(self, event: UiEvent) -> None:
        seq = len(self._log) + 1
        if event.seq != 0:
            # An event object published before (an executor that yields one object again): a copy of its
            # own, made without running the constructor's checks again (it passed them once).
            copy = object.__new__(type(event))
            copy.__dict__.update(event.__dict__)
            event = copy
        object.__setattr__(event, "seq", seq)  # its position in this run's log, set once
        self._log.append(event)
        if self._on_event is not None:
            self._on_event(event)
        for sub in tuple(self._live):
            if len(sub.buffer) >= self._ui_buffer:
                sub.overrun = True
                self._live.discard(sub)
            else:
                sub.buffer.append(event)
            sub.wake.set()

    # --- control ---------------------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stops reading upstream (closing it); subscribers see Error("aborted") then Done."""
        if self._task.done() or self._cancel_requested:
            return
        self._cancel_requested = True
        # Before its first step the pump checks the flag itself; cancelling an unstarted task would skip the
        # code that writes Done.
        if self._started:
            self._send_cancel()
            # An upstream that hands on late usage after the cancel gets a bounded time to do so.
            self._watchdog = self._task.get_loop().call_later(CANCEL_GRACE_S, self._cancel_again)

    def _send_cancel(self) -> None:
        self._cancels_sent += 1
        self._task.cancel()

    def _cancel_again(self) -> None:
        if not self._task.done():
            logger.warning(
                "upstream still running %.1f s after the run was cancelled; %s",
                CANCEL_GRACE_S,
                "cancelled again and no longer read",
            )
            self._gave_up = True
            self._send_cancel()

    async def wait(self) -> None:
        """Returns once the pump has finished (never raises for the run's own failures)."""
        await asyncio.shield(self._task)

    @property
    def finished(self) -> bool:
        return self._task.done()

    # --- UI subscribers --------------------------------------------------------------------------------
    @property
    def published(self) -> int:
        """How many UI events the log holds (the position of the last one)."""
        return len(self._log)

    async def subscribe(self, after: int = 0) -> AsyncIterator[UiEvent]:
        """The run's UI events after position `after` (0: from the start), ending after Done; leaving early
        only detaches. A position at or past the end of a finished run's log gives nothing."""
        if isinstance(after, bool) or not isinstance(after, int) or after < 0:
            raise InvalidArgument(f"after must be an int >= 0, got {after!r}", argument="after")
        cursor = after
        sub: _Subscriber | None = None
        try:
            while True:
                if sub is None:
                    if cursor < len(self._log):
                        event = self._log[cursor]
                        cursor += 1
                    elif self._terminal:
                        return  # asked for positions past the end of a finished log
                    else:
                        # Caught up with the log: from here on the pump feeds a bounded buffer. No await
                        # between the check and the registration, so no event can fall in between.
                        sub = _Subscriber()
                        self._live.add(sub)
                        continue
                elif sub.buffer:
                    event = sub.buffer.popleft()
                    if event.seq <= after:
                        continue  # attached ahead of the log: skip up to the asked position
                elif sub.overrun:
                    yield Error("rate_limit")
                    yield Done()
                    return
                else:
                    sub.wake.clear()
                    await sub.wake.wait()
                    continue
                yield event
                if isinstance(event, Done):
                    return
        finally:
            if sub is not None:
                self._live.discard(sub)


def _is_event(value: object) -> TypeGuard[AiEvent]:
    return isinstance(value, AI_EVENT_TYPES)


async def _aclose(stream: AsyncIterator[AiEvent]) -> None:
    close = getattr(stream, "aclose", None)
    if close is None:
        return
    try:
        await close()
    except Exception:
        logger.exception("closing the upstream stream failed")
