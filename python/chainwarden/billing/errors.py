"""Typed billing errors: what failed, where, and whether the usage is safe (docs/billing.md)."""

from __future__ import annotations


class LedgerUnavailable(Exception):
    """The ledger's store could not be reached (or stayed locked) within the call's retry budget.

    Nothing was committed by this call, or (when a connection broke during COMMIT) it is unknown whether the
    commit landed: committing the same fact again is safe either way, because its idempotency key makes a
    second commit a no-op when the first one landed. The runtime puts such a fact in its outbox.
    """

    def __init__(self, store: str, *, attempts: int, waited_s: float, reason: str) -> None:
        super().__init__(
            f"{store} unavailable after {attempts} attempt(s) over {waited_s:.1f} s: {reason}; "
            "nothing was lost: committing the same fact again is safe (idempotency key)"
        )
        self.store = store
        self.attempts = attempts
        self.waited_s = waited_s
        self.reason = reason


class BillingUnsettled(Exception):
    """Some usage facts of a run are not committed yet: they wait in the durable outbox.

    They are committed by the outbox drainer once the ledger is back (also by a later process that opens
    the same outbox); this error says how many and where they are.
    """

    def __init__(
        self, run_id: str, keys: list[str], outbox: str, *, waited_s: float, lost: list[str] | None = None
    ) -> None:
        lost = list(lost or [])
        shown = ", ".join(keys[:5]) + (", ..." if len(keys) > 5 else "")
        message = (
            f"run {run_id}: {len(keys) + len(lost)} usage fact(s) not yet committed after waiting "
            f"{waited_s:.1f} s"
        )
        if keys:
            message += (
                f"; {len(keys)} are kept in the outbox {outbox} and will be committed when the ledger is "
                f"back ({shown})"
            )
        if lost:
            message += (
                f"; {len(lost)} could not be written to the outbox either and are NOT kept "
                "(see the CRITICAL log lines of chainwarden.billing)"
            )
        super().__init__(message)
        self.run_id = run_id
        self.keys = list(keys)
        self.lost = lost
        self.count = len(keys) + len(lost)
        self.outbox = outbox
        self.waited_s = waited_s
