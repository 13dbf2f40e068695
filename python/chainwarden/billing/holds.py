"""Credit holds: the estimate of each call in flight, held against its account's balance in the ledger's
database, so that concurrent runs in any process see each other's spending before it is billed
(docs/billing.md "Credit holds").

An account's *available* credits are its balance minus its unexpired holds. A hold is placed only while the
available credits stay at or above the policy's minimum; placing one locks the account's holds for the
transaction (PostgreSQL: a transaction-level advisory lock per account; SQLite: the file's write lock), so two
processes never both take the last credits. When the call ends its hold is *settled* — its amount becomes what
the call is charged — and it is dropped once a committed receipt of the same run for that amount exists
(`release_charged`): at every moment a call counts as its hold or its charge, never as neither. A hold lives
under its runtime's lease (`owner`, renewed with its runs): a dead process's holds expire.

Holds are not money: the balance changes only through receipts (`billing/ledger.py`). They are written with
relaxed durability (a power cut may drop the newest; a killed process does not).
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from typing import Any

from chainwarden.billing.facts import check_text
from chainwarden.billing.ledger import Ledger
from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = ["CreditHolds"]

# PostgreSQL: the holds of one account are placed one transaction at a time, under this lock class and a
# 32-bit hash of the account id (two accounts sharing a hash only wait for each other).
_LOCK_CLASS = 0x63776364  # "cwcd"
_LOCK = "SELECT pg_advisory_xact_lock(%s, %s)"
_EXPIRE = "DELETE FROM credit_holds WHERE billing_account_id = %s AND expires_at < {now}"
_BALANCE = "SELECT balance_credits FROM billing_accounts WHERE id = %s"
_HELD = "SELECT COALESCE(SUM(credits), 0) FROM credit_holds WHERE billing_account_id = %s"
_HELD_LIVE = _HELD + " AND expires_at >= {now}"
_INSERT = (
    "INSERT INTO credit_holds (id, billing_account_id, run_id, attempt, credits, settled, owner, expires_at) "
    "VALUES (%s, %s, %s, %s, %s, 0, %s, {now} + %s)"
)
_SETTLE = "UPDATE credit_holds SET credits = %s, settled = 1 WHERE id = %s"
_RELEASE = "DELETE FROM credit_holds WHERE id = %s"
_RELEASE_CHARGED = (
    "DELETE FROM credit_holds WHERE id = (SELECT id FROM credit_holds WHERE run_id = %s AND attempt = %s "
    "AND settled = 1 AND credits = %s LIMIT 1)"
)
_RELEASE_RUN = "DELETE FROM credit_holds WHERE run_id = %s AND attempt = %s"
# A run that ended with billing still unsettled: its holds stay, no longer renewed, and expire one lease on.
_ORPHAN_RUN = "UPDATE credit_holds SET owner = '' WHERE run_id = %s AND attempt = %s"


class CreditHolds:
    """The credit holds of one ledger's database."""

    def __init__(self, ledger: Ledger) -> None:
        if not isinstance(ledger, Ledger):
            raise InvalidArgumentType(
                f"ledger must be a Ledger, got {type(ledger).__name__}", argument="ledger"
            )
        self.ledger = ledger
        now = ledger._NOW_EPOCH
        self._postgres = ledger._POSTGRES
        self._expire = _EXPIRE.format(now=now)
        self._held_live = _HELD_LIVE.format(now=now)
        self._insert = _INSERT.format(now=now)

    def available(self, billing_account_id: str) -> int:
        """The account's balance (0 for an account the ledger does not know) less its unexpired holds."""
        account = _account(billing_account_id)
        balance = self.ledger._read(_BALANCE, (account,))
        held = self.ledger._read(self._held_live, (account,))
        return (int(balance[0][0]) if balance else 0) - int(held[0][0])

    def place(
        self,
        billing_account_id: str,
        run_id: str,
        attempt: int,
        credits: int,
        *,
        owner: str,
        ttl_s: float,
        min_balance: int,
    ) -> tuple[str | None, int]:
        """Holds `credits` for a call of the run if the account's available credits stay at or above
        `min_balance` after it; returns the hold's id (None: refused, nothing held) and the credits that were
        available before it."""
        account = _account(billing_account_id)
        if isinstance(credits, bool) or not isinstance(credits, int) or credits < 0:
            raise InvalidArgument(f"credits must be an int >= 0, got {credits!r}", argument="credits")
        ledger = self.ledger
        hold_id = uuid.uuid4().hex

        def body(cursor: Any) -> tuple[str | None, int]:
            if self._postgres:
                cursor.execute(_LOCK, (_LOCK_CLASS, _account_lock(account)))
            cursor.execute(ledger._sql(self._expire), (account,))
            cursor.execute(ledger._sql(_BALANCE), (account,))
            row = cursor.fetchone()
            balance = int(row[0]) if row else 0
            cursor.execute(ledger._sql(_HELD), (account,))
            available = balance - int(cursor.fetchone()[0])
            if available - credits < min_balance:
                return None, available
            cursor.execute(
                ledger._sql(self._insert), (hold_id, account, run_id, attempt, credits, owner, ttl_s)
            )
            return hold_id, available

        result: tuple[str | None, int] = ledger._run_write(body, durable=False)
        return result

    def settle(self, hold_id: str, credits: int) -> None:
        """The call ended and is charged `credits`: its hold now stands for that charge until it is billed."""
        ledger = self.ledger
        ledger._run_write(lambda c: c.execute(ledger._sql(_SETTLE), (credits, hold_id)), durable=False)

    def release(self, hold_id: str) -> None:
        """The call was charged nothing (refused before it ran, failed without using anything)."""
        ledger = self.ledger
        ledger._run_write(lambda c: c.execute(ledger._sql(_RELEASE), (hold_id,)), durable=False)

    def release_charged(self, run_id: str, attempt: int, charged: Sequence[int]) -> None:
        """Receipts of the run for these amounts are committed: drops one settled hold per amount (the same
        amount: which call's hold goes does not change any total)."""
        if not charged:
            return
        ledger = self.ledger

        def body(cursor: Any) -> None:
            for credits in charged:
                cursor.execute(ledger._sql(_RELEASE_CHARGED), (run_id, attempt, credits))

        ledger._run_write(body, durable=False)

    def end_run(self, run_id: str, attempt: int, *, billed: bool) -> None:
        """The run ended: with every fact `billed`, its holds go; otherwise they stay until they expire (no
        longer renewed), still counting for the charges that wait in the outbox."""
        ledger = self.ledger
        statement = _RELEASE_RUN if billed else _ORPHAN_RUN
        ledger._run_write(lambda c: c.execute(ledger._sql(statement), (run_id, attempt)), durable=False)


def _account(billing_account_id: object) -> str:
    checked = check_text("billing_account_id", billing_account_id)
    assert checked is not None
    return checked


def _account_lock(account: str) -> int:
    digest = hashlib.blake2b(account.encode(), digest_size=4).digest()
    return int.from_bytes(digest, "big", signed=True)
