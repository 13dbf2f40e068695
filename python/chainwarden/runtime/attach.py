"""`AiRuntime.attach`: a client reconnecting to a run, from any process sharing the ledger's database
(docs/runtime.md "Reconnect, resume and retry").

An attachment replays the run's UI events after a position, then follows the run live until its `Done`. A
run this runtime is running is followed in memory (its relay); any other is read from its journal in the
ledger's database: the rows after the last position seen, then, while the run is still running, waiting for
more — woken by the database (PostgreSQL `LISTEN`/`NOTIFY`) or by a short poll (SQLite). A run whose process
died is marked abandoned by the sweep once its lease ran out, which ends its log, so an attachment never waits
forever. Attaching is a reconnect: a new `ingress_request_id`, the same `run_id` and `attempt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Any

from chainwarden.billing.run_store import RunStore
from chainwarden.runtime.events import Done, Error, UiEvent, decode_event
from chainwarden.runtime.relay import RunEventRelay

logger = logging.getLogger("chainwarden.runtime")

#: How long a reader waits between looks at a run's journal when nothing wakes it (SQLite: this is the poll).
POLL_S = 0.05
_MAX_POLL_S = 0.5
_PAGE = 1000


class RunWaker:
    """Wakes the readers waiting for a run's next events: on PostgreSQL one thread LISTENs for the runtime
    and wakes the readers of the run a commit named; elsewhere readers just poll."""

    def __init__(self, make_listener: Callable[[], Any]) -> None:
        self._make_listener = make_listener
        self._waiters: dict[str, set[tuple[asyncio.AbstractEventLoop, asyncio.Event]]] = {}
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._listener: Any = None
        self._stopped = threading.Event()
        self._polls_only = False

    async def wait(self, run_id: str, timeout: float) -> None:
        """Returns when the run may have new events, or after `timeout` seconds."""
        if self._polls_only or not self._ensure_listening():
            await asyncio.sleep(timeout)
            return
        event = asyncio.Event()
        entry = (asyncio.get_running_loop(), event)
        with self._lock:
            self._waiters.setdefault(run_id, set()).add(entry)
        try:
            await asyncio.wait_for(event.wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._lock:
                waiting = self._waiters.get(run_id)
                if waiting is not None:
                    waiting.discard(entry)
                    if not waiting:
                        del self._waiters[run_id]

    def _ensure_listening(self) -> bool:
        with self._lock:
            if self._thread is not None:
                return True
            if self._stopped.is_set():
                return False
            try:
                self._listener = self._make_listener()
            except Exception:
                logger.warning("cannot listen for run events; attached readers poll", exc_info=True)
                self._listener = None
            if self._listener is None:
                self._polls_only = True
                return False
            self._thread = threading.Thread(target=self._serve, name="chainwarden-run-waker", daemon=True)
            self._thread.start()
            return True

    def _serve(self) -> None:
        while not self._stopped.is_set():
            payloads = self._listener.wait(0.5)
            if payloads == []:
                continue
            with self._lock:
                if payloads is None:  # (re)connected: anything may have been missed
                    targets = [e for waiting in self._waiters.values() for e in waiting]
                else:
                    targets = [e for p in set(payloads) for e in self._waiters.get(p, ())]
            for loop, event in targets:
                with contextlib.suppress(RuntimeError):  # that reader's loop is closed
                    loop.call_soon_threadsafe(event.set)

    def close(self) -> None:
        self._stopped.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout=2.0)
        if self._listener is not None:
            self._listener.close()


class Attachment:
    """An attached client's stream of a run's UI events (each with its position, `seq`); async-iterate it.

    `run_id` and `ingress_request_id` (this connection's, new for every attachment) are known at once;
    `attempt` once the first event was read (the latest attempt of the run unless one was asked for)."""

    def __init__(
        self,
        run_id: str,
        *,
        after: int,
        attempt: int | None,
        ingress_request_id: str | None,
        live: Callable[[str], tuple[int, RunEventRelay] | None],
        store: RunStore,
        waker: RunWaker,
        sweep: Callable[[], object],
        lease_s: float,
    ) -> None:
        self.run_id = run_id
        self.after = after
        self.attempt = attempt
        self.ingress_request_id = ingress_request_id or f"att_{uuid.uuid4().hex}"
        self._live = live
        self._store = store
        self._waker = waker
        self._sweep = sweep
        self._lease_s = lease_s
        self._stream = self._events()

    def __aiter__(self) -> Attachment:
        return self

    async def __anext__(self) -> UiEvent:
        return await self._stream.__anext__()

    async def aclose(self) -> None:
        """Detaches (the run goes on)."""
        await self._stream.aclose()

    async def _events(self) -> AsyncGenerator[UiEvent, None]:
        local = self._live(self.run_id)
        if local is not None and self.attempt in (None, local[0]):
            self.attempt = local[0]
            async for event in local[1].subscribe(after=self.after):
                yield event
            return
        if self.attempt is None:
            self.attempt = await asyncio.to_thread(self._store.latest_attempt, self.run_id)
            if self.attempt is None:
                yield Error("not_found")
                yield Done()
                return
        async for event in self._from_journal(self.attempt):
            yield event

    async def _from_journal(self, attempt: int) -> AsyncGenerator[UiEvent, None]:
        cursor = self.after
        idle = POLL_S
        waited = 0.0
        while True:
            rows = await asyncio.to_thread(self._store.events, self.run_id, attempt, cursor, _PAGE)
            for row in rows:
                event = decode_event(row.type, row.body, row.seq)
                cursor = row.seq
                yield event
                if isinstance(event, Done):
                    return
            if rows:
                idle, waited = POLL_S, 0.0
                continue
            state = await asyncio.to_thread(self._store.state, self.run_id, attempt)
            if state is None:
                yield Error("not_found")
                yield Done()
                return
            status, events = state
            if status != "running" and events <= cursor:
                if self.after >= events:
                    return  # asked for positions at or past the end of an ended log
                # An ended run's log always ends with Done; one cut short (a journal that lost its last
                # batch) still ends here, saying so.
                logger.warning(
                    "run %s attempt %d: its log ends at %d without Done", self.run_id, attempt, events
                )
                yield Error("internal")
                yield Done()
                return
            if status == "running" and events <= cursor:
                await self._waker.wait(self.run_id, idle)
                waited += idle
                idle = min(idle * 2, _MAX_POLL_S)
                if waited >= self._lease_s:
                    # Its owner may be gone: the sweep marks it abandoned once its lease ran out.
                    waited = 0.0
                    await asyncio.to_thread(self._sweep)
