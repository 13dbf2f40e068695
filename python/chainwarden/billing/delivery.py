"""Write-ahead, commit, settle: every usage fact is first written to the durable outbox, then committed
through the ledger, then removed from the outbox; a fact whose commit failed stays there (parked) and a
background drainer commits it once the ledger is back. Nothing is dropped, nothing is billed twice
(docs/billing.md, "The outbox").

With an in-memory outbox (a ":memory:" ledger, which does not outlive the process either) there is nothing to
write ahead to: facts are committed, and parked in memory only when their commit fails.

This module and `ledger.py` are the only callers of `commit_usage_fact` (ONE_LEDGER_WRITER): the runtime's
billing subscriber hands facts here, and the drainer commits parked ones through the same ledger.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass

from chainwarden.billing.errors import LedgerUnavailable
from chainwarden.billing.facts import Billable, UsageFact
from chainwarden.billing.ledger import Ledger
from chainwarden.billing.metrics import METRICS
from chainwarden.billing.outbox import Outbox, OutboxEntry
from chainwarden.billing.pricing import Pricing
from chainwarden.billing.records import ChargeReceipt

logger = logging.getLogger("chainwarden.billing")

_BATCH = 100
# A parked fact the ledger refuses for another reason than availability (a bug, a trigger, a full disk) is
# tried again with a growing pause, up to this one: it is never dropped, and never floods the log.
_MAX_ENTRY_BACKOFF_S = 60.0
# With nothing parked the drainer still looks at the outbox now and then: another process may have left
# entries for this ledger.
_IDLE_POLL_S = 30.0


@dataclass(frozen=True)
class Delivered:
    """What became of one fact: committed (`receipt`, None for a duplicate), parked in the outbox, or lost
    (neither committed nor kept: `error` says why)."""

    key: str
    receipt: ChargeReceipt | None
    parked: bool
    error: Exception | None = None
    lost: bool = False


@dataclass(frozen=True)
class Journaled:
    """A fact on its way to the ledger, resolved once, and its outbox row (None when it could not be written
    ahead: the outbox is in memory, or its disk failed)."""

    billable: Billable
    seq: int | None

    @property
    def key(self) -> str:
        return self.billable.key


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"


class BillingDelivery:
    """Writes facts ahead to `outbox`, commits them through `ledger`, removes them; what fails stays parked
    in the outbox and a daemon thread drains it.

    `max_backoff_s` caps the drainer's pause between attempts while the ledger is away. The drainer starts on
    first need: at once when the outbox already holds entries for this ledger (a restarted process drains
    what the previous one left), otherwise at the first write-ahead or the first parked fact.
    """

    def __init__(self, ledger: Ledger, outbox: Outbox, *, max_backoff_s: float = 2.0) -> None:
        self.ledger = ledger
        self.outbox = outbox
        self._identity = ledger.identity
        self._max_backoff_s = max_backoff_s
        self._wake = threading.Event()
        self._stopping = False
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # Set while the ledger is known to be away: new facts go straight to the outbox instead of each
        # spending the ledger's whole retry budget; the drainer clears it once a commit succeeds.
        self._ledger_down = False
        self.write_ahead_enabled = outbox.path != ":memory:"
        # Writes ahead get their own thread: commits stuck in retries (in the event loop's default executor)
        # must never hold back the write-ahead of the facts reported meanwhile. One is enough: the outbox
        # serialises its writes anyway.
        self._wal_executor: ThreadPoolExecutor | None = None
        if self.outbox.exists() and self.outbox.pending(self._identity):
            logger.warning(
                "billing outbox %s holds unsettled usage facts for %s: draining them",
                self.outbox.path,
                ledger.describe,
            )
            self._start()

    # --- the runtime's side ----------------------------------------------------------------------------
    def write_ahead_executor(self) -> Executor | None:
        """The thread that runs `write_ahead` for the runtime; None once closed (use any thread then)."""
        with self._lock:
            if self._stopping:
                return None
            if self._wal_executor is None:
                self._wal_executor = ThreadPoolExecutor(1, thread_name_prefix="chainwarden-billing-wal")
            return self._wal_executor

    def write_ahead(
        self,
        billables: Sequence[Billable],
        *,
        pricing: Pricing,
        ingress_request_id: str | None,
    ) -> list[Journaled]:
        """Step 1: makes facts resolved for billing (by the run's sink, once) durable in the outbox, in one
        transaction, before any commit. Never raises: when the outbox fails the facts go on unjournaled
        (commit-or-park)."""
        resolved = list(billables)
        seqs: list[int | None] = [None] * len(resolved)
        if self.write_ahead_enabled and resolved:
            # The drainer also watches for rows a killed process on the same outbox left behind.
            self._start()
            try:
                seqs = list(
                    self.outbox.write_ahead(
                        self._identity, resolved, pricing=pricing, ingress_request_id=ingress_request_id
                    )
                )
            except Exception as error:
                METRICS.increment("billing.outbox_write_ahead_failed")
                logger.error(
                    "billing: writing %d usage fact(s) ahead to the outbox %s failed (%s); committing them "
                    "without it",
                    len(resolved),
                    self.outbox.path,
                    _describe(error),
                )
        return [Journaled(billable, seq) for billable, seq in zip(resolved, seqs, strict=True)]

    def commit(
        self, journaled: Sequence[Journaled], *, pricing: Pricing, ingress_request_id: str | None
    ) -> list[Delivered]:
        """Step 2: commits written-ahead facts, all in one ledger transaction when there are several; removes
        the committed ones' rows in one statement and releases the failed ones to the drainer (parked).
        Never raises."""
        outcomes: list[Delivered] = []
        done: list[int] = []
        failed: dict[str, list[int]] = {}
        batched = self._commit_batch(journaled, pricing, ingress_request_id)
        for item in journaled:
            if item.seq is None:
                outcomes.append(self._deliver_unjournaled(item, pricing, ingress_request_id))
                continue
            key = item.key
            if item.seq in batched:
                outcome = batched[item.seq]
                if outcome.parked:
                    failed.setdefault(_describe(outcome.error or self._away()), []).append(item.seq)
                else:
                    done.append(item.seq)
                outcomes.append(outcome)
                continue
            if self._ledger_down:
                away = self._away()
                failed.setdefault(str(away), []).append(item.seq)
                outcomes.append(Delivered(key=key, receipt=None, parked=True, error=away))
                continue
            try:
                receipt = self.ledger._commit_usage_fact(
                    item.billable, pricing=pricing, ingress_request_id=ingress_request_id
                )
            except Exception as error:
                if isinstance(error, LedgerUnavailable):
                    self._ledger_down = True
                logger.error("billing: commit of %s failed (%s); it waits in the outbox", key, error)
                failed.setdefault(_describe(error), []).append(item.seq)
                outcomes.append(Delivered(key=key, receipt=None, parked=True, error=error))
                continue
            done.append(item.seq)
            outcomes.append(Delivered(key=key, receipt=receipt, parked=False))
        if done:
            try:
                self.outbox.settle(done)
            except Exception as error:
                # Committed all the same: the rows left behind are committed again later as duplicates.
                logger.warning(
                    "billing: removing %d committed fact(s) from the outbox failed: %s", len(done), error
                )
        for error_text, seqs in failed.items():
            try:
                self.outbox.park(seqs, error_text)
            except Exception as error:
                # The rows are in the outbox (claimed by us): a drainer takes them after CLAIM_S.
                logger.error(
                    "billing: releasing %d parked fact(s) to the drainer failed: %s", len(seqs), error
                )
            METRICS.increment("billing.outbox_parked", len(seqs))
        if failed:
            self._start()
            self._wake.set()
        return outcomes

    def _commit_batch(
        self, journaled: Sequence[Journaled], pricing: Pricing, ingress_request_id: str | None
    ) -> dict[int, Delivered]:
        """The written-ahead facts committed in ONE ledger transaction, by outbox row; {} when there is one
        or none, or when the batch failed for another reason than availability (then each fact is tried on
        its own, so one fact the ledger refuses does not hold back the others)."""
        items = [item for item in journaled if item.seq is not None]
        if len(items) < 2 or self._ledger_down:
            return {}
        try:
            committed = self._commit_together(items, pricing, ingress_request_id)
        except LedgerUnavailable as error:
            self._ledger_down = True
            logger.error(
                "billing: commit of %d facts failed (%s); they wait in the outbox", len(items), error
            )
            return {
                item.seq: Delivered(key=item.key, receipt=None, parked=True, error=error)
                for item in items
                if item.seq is not None
            }
        except Exception as error:
            logger.warning(
                "billing: batch commit of %d facts failed (%s); committing them one by one", len(items), error
            )
            return {}
        return {
            item.seq: Delivered(key=item.key, receipt=receipt if new else None, parked=False)
            for item, (receipt, new) in zip(items, committed, strict=True)
            if item.seq is not None
        }

    def _commit_together(
        self, items: Sequence[Journaled] | Sequence[OutboxEntry], pricing: Pricing, request_id: str | None
    ) -> list[tuple[ChargeReceipt, bool]]:
        """Facts (written ahead or parked) in ONE ledger transaction, each receipt with whether it is new."""
        return self.ledger._commit_usage_facts(
            [item.billable for item in items], pricing=pricing, ingress_request_id=request_id
        )

    def _away(self) -> LedgerUnavailable:
        return LedgerUnavailable(
            self.ledger.describe, attempts=0, waited_s=0.0, reason="the ledger is away (outbox draining)"
        )

    def _deliver_unjournaled(
        self, item: Journaled, pricing: Pricing, ingress_request_id: str | None
    ) -> Delivered:
        try:
            return self._deliver(item.billable, pricing, ingress_request_id)
        except Exception as error:
            logger.critical(
                "billing: usage fact %s could be neither committed nor kept in the outbox %s",
                item.key,
                self.outbox.path,
                exc_info=True,
            )
            return Delivered(key=item.key, receipt=None, parked=False, error=error, lost=True)

    def deliver(
        self, fact: UsageFact, *, call_index: int, pricing: Pricing, ingress_request_id: str | None
    ) -> Delivered:
        """Commits the fact, or parks it durably. Raises only when it could do neither (then it is lost
        unless the caller keeps it: the error says why)."""
        return self._deliver(Billable.resolve(fact, call_index), pricing, ingress_request_id)

    def _deliver(self, billable: Billable, pricing: Pricing, ingress_request_id: str | None) -> Delivered:
        key = billable.key
        if not self._ledger_down:
            try:
                receipt = self.ledger._commit_usage_fact(
                    billable, pricing=pricing, ingress_request_id=ingress_request_id
                )
            except Exception as error:
                if isinstance(error, LedgerUnavailable):
                    self._ledger_down = True
                logger.error("billing: commit of %s failed (%s); parking it in the outbox", key, error)
                self._park(billable, pricing, ingress_request_id, _describe(error))
                return Delivered(key=key, receipt=None, parked=True, error=error)
            return Delivered(key=key, receipt=receipt, parked=False)
        away = self._away()
        self._park(billable, pricing, ingress_request_id, str(away))
        return Delivered(key=key, receipt=None, parked=True, error=away)

    def _park(self, billable: Billable, pricing: Pricing, ingress_request_id: str | None, error: str) -> None:
        self.outbox.put(
            self._identity, billable, pricing=pricing, ingress_request_id=ingress_request_id, error=error
        )
        METRICS.increment("billing.outbox_parked")
        self._start()
        self._wake.set()

    def unsettled(self, keys: list[str], run_id: str) -> list[str]:
        """Which of these keys (parked for `run_id`) are still in the outbox."""
        if not keys:
            return []
        wanted = set(keys)
        return [k for k in self.outbox.pending(self._identity, run_id=run_id) if k in wanted]

    # --- the drainer -----------------------------------------------------------------------------------
    def _start(self) -> None:
        with self._lock:
            if self._thread is None and not self._stopping:
                self._thread = threading.Thread(
                    target=self._drain_forever, name="chainwarden-billing-outbox", daemon=True
                )
                self._thread.start()

    def drain_once(self) -> tuple[int, bool]:
        """Commits the due entries; returns (how many left the outbox, whether the ledger was away).

        Entries with the same pricing and request id are committed together, in one ledger transaction
        (after an outage the outbox may hold thousands: one transaction each would drain ten times slower,
        benches/README.md "Batch commits and round trips"); a group the ledger refuses for another reason
        than availability is retried one entry at a time, so one fact it refuses does not hold back the
        others."""
        entries = self.outbox.due(self._identity, limit=_BATCH)
        groups: dict[tuple[Pricing, str | None], list[OutboxEntry]] = {}
        for entry in entries:
            groups.setdefault((entry.pricing, entry.ingress_request_id), []).append(entry)
        settled = 0
        one_by_one: list[OutboxEntry] = []
        for (pricing, request_id), group in groups.items():
            if self._stopping:
                return settled, False
            if len(group) < 2:
                one_by_one.extend(group)
                continue
            try:
                self._commit_together(group, pricing, request_id)
            except LedgerUnavailable as error:
                self._ledger_down = True
                logger.warning("billing outbox: ledger still away (%s); will retry", error.reason)
                return settled, True
            except Exception as error:
                logger.warning(
                    "billing outbox: committing %d facts together failed (%s); trying them one by one",
                    len(group),
                    _describe(error),
                )
                one_by_one.extend(group)
                continue
            # Committed now, or duplicates of commits that landed before: either way each is billed once.
            self.outbox.settle([entry.seq for entry in group])
            self._ledger_down = False
            settled += len(group)
            METRICS.increment("billing.outbox_committed", len(group))
        for entry in sorted(one_by_one, key=lambda e: e.seq):
            if self._stopping:
                break
            try:
                self.ledger._commit_usage_fact(
                    entry.billable, pricing=entry.pricing, ingress_request_id=entry.ingress_request_id
                )
            except LedgerUnavailable as error:
                self._ledger_down = True
                logger.warning("billing outbox: ledger still away (%s); will retry", error.reason)
                return settled, True
            except Exception as error:
                self._entry_failed(entry, error)
                continue
            # Committed now, or a duplicate of a commit that landed before: either way it is billed once.
            self.outbox.remove(entry.seq)
            self._ledger_down = False
            settled += 1
            METRICS.increment("billing.outbox_committed")
        return settled, False

    def _entry_failed(self, entry: OutboxEntry, error: Exception) -> None:
        if isinstance(error, ValueError) and self.ledger._closed:
            # The ledger was closed under us: the entry stays for the next process.
            return
        retry_in = min(_MAX_ENTRY_BACKOFF_S, 0.5 * 2 ** min(entry.attempts, 10))
        logger.error(
            "billing outbox: committing %s failed (attempt %d): %s; retrying in %.1f s",
            entry.key,
            entry.attempts + 1,
            _describe(error),
            retry_in,
        )
        self.outbox.record_failure(entry.seq, _describe(error), retry_in_s=retry_in)

    def _drain_forever(self) -> None:
        backoff = 0.05
        while not self._stopping:
            # Cleared before looking, so a fact parked while we look wakes the wait below at once.
            self._wake.clear()
            try:
                settled, away = self.drain_once()
            except Exception:
                # The outbox itself failed (disk): keep the thread alive and try again later.
                logger.exception("billing outbox %s: drain failed", self.outbox.path)
                settled, away = 0, True
            if self._stopping:
                return
            if away or (settled == 0 and self._has_pending()):
                self._wake.wait(backoff)
                backoff = min(backoff * 2, self._max_backoff_s)
            elif settled:
                backoff = 0.05  # more may be due right away
            else:
                backoff = 0.05
                self._wake.wait(_IDLE_POLL_S)

    def _has_pending(self) -> bool:
        try:
            return self.outbox.has_work(self._identity)
        except Exception:
            return True

    def close(self, timeout_s: float = 5.0) -> None:
        """Stops the drainer (what is parked stays parked for the next start)."""
        with self._lock:
            self._stopping = True
            thread = self._thread
            executor, self._wal_executor = self._wal_executor, None
        self._wake.set()
        if executor is not None:
            executor.shutdown(wait=False)  # a write under way still finishes
        if thread is not None:
            thread.join(timeout_s)
