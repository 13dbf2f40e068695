"""The leases of a runtime's runs and credit holds, and the sweep that marks dead processes' runs abandoned
(docs/runtime.md "Reconnect, resume and retry").

While a runtime has runs going, one thread (`chainwarden-run-leases`) renews, every third of the lease, the
leases of every running run and every credit hold it owns — one statement each, by the database's clock
(docs/design.md §33) — and, every lease, marks `abandoned` the runs whose lease ran out. A process that dies
stops renewing: its runs are abandoned and its holds expire one lease later. A failed renewal is logged and
tried again at the next beat; it never stops a run. The thread ends when the runtime has no run left.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from chainwarden.billing.run_store import RunStore

logger = logging.getLogger("chainwarden.runtime")


def new_owner() -> str:
    """`host:pid:random`: unique per runtime, and says where its runs run."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:12]}"


class RunLeases:
    """Renews `owner`'s leases every `lease_s / 3` and sweeps dead runs every `lease_s`, while it holds
    runs (`hold()` / `release()`), until `stop()`."""

    def __init__(self, store: RunStore, owner: str, lease_s: float) -> None:
        self.store = store
        self.owner = owner
        self.lease_s = lease_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._held = 0
        self._thread: threading.Thread | None = None

    def sweep(self) -> list[tuple[str, int]]:
        """Marks the runs whose lease ran out abandoned now; logs and returns them (never raises)."""
        try:
            abandoned = self.store.sweep()
        except Exception:
            logger.warning(
                "could not look for abandoned runs in %s", self.store.ledger.describe, exc_info=True
            )
            return []
        for run_id, attempt in abandoned:
            logger.warning(
                "run %s attempt %d marked abandoned: its process stopped renewing its lease", run_id, attempt
            )
        return abandoned

    def sweep_soon(self) -> None:
        """`sweep()` in a thread of its own: opening a runtime never waits for another writer."""
        threading.Thread(target=self.sweep, name="chainwarden-run-sweep", daemon=True).start()

    def hold(self) -> None:
        """A run (or a credit hold) of this runtime began: its leases are renewed from now on."""
        with self._lock:
            self._held += 1
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(
                    target=self._serve, name="chainwarden-run-leases", daemon=True
                )
                self._thread.start()

    def release(self) -> None:
        with self._lock:
            self._held = max(0, self._held - 1)

    def _serve(self) -> None:
        beat = self.lease_s / 3
        last_sweep = time.monotonic()
        while not self._stop.wait(beat):
            with self._lock:
                if self._held == 0:
                    self._thread = None
                    return
            try:
                self.store.renew(self.owner, self.lease_s)
            except Exception:
                logger.warning(
                    "could not renew the run leases of %s in %s; trying again in %.1fs",
                    self.owner,
                    self.store.ledger.describe,
                    beat,
                    exc_info=True,
                )
            if time.monotonic() - last_sweep >= self.lease_s:
                last_sweep = time.monotonic()
                self.sweep()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout=5.0)
