"""Every exception chainwarden raises, under one root: ``except ChainwardenError`` catches them all.

The hierarchy is documented in docs/errors.md. Each class also keeps the built-in base callers caught
before (``CallRefused`` is a ``RuntimeError``, ``InvalidArgument`` a ``ValueError``, ``NotFound`` a
``KeyError`` ...), so existing ``except`` clauses keep working.

The root and the generic families (``InvalidArgument``, ``InvalidArgumentType``, ``NotFound``,
``InvalidState``) and the ``DagError`` family are created by the native module, whose engines raise them
directly; the families of the Python layer are defined here. Each class is also importable where it was
before (``chainwarden.containment.CallRefused``, ``chainwarden.billing.LedgerUnavailable``, ...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, Self

from chainwarden._core import (
    ChainwardenError,
    DagEdgeError,
    DagError,
    DagInvalidArgumentError,
    DagNotFoundError,
    DagPreconditionError,
    InvalidArgument,
    InvalidArgumentType,
    InvalidState,
    NotFound,
)
from chainwarden.vocab import ErrorCode

if TYPE_CHECKING:
    from chainwarden.shield.types import Decision

__all__ = [
    "BillingError",
    "BillingUnsettled",
    "BudgetBackendUnavailable",
    "BudgetExceeded",
    "CallRefused",
    "ChainHalted",
    "ChainwardenError",
    "ClosedError",
    "DagEdgeError",
    "DagError",
    "DagInvalidArgumentError",
    "DagNotFoundError",
    "DagPreconditionError",
    "InvalidArgument",
    "InvalidArgumentType",
    "InvalidState",
    "LedgerUnavailable",
    "NotFound",
    "StoreCommitUnknownError",
    "StoreConflictError",
    "StoreConnectionError",
    "StoreError",
    "StoreSchemaError",
    "StoreUrlError",
]


class ClosedError(InvalidState, ValueError):
    """The object was closed (a ledger, an outbox) or finished (a partial-result buffer marked complete):
    nothing was done. A ``ValueError`` too, as these always were."""


# --- containment ------------------------------------------------------------------------------------


class _StopNote(Protocol):
    @property
    def reason(self) -> str | None: ...


class _Chain(Protocol):
    """What a refusal reads of its chain (containment's ``ChainState``): named structurally, so this module,
    which every layer imports, imports none of them."""

    @property
    def note(self) -> _StopNote: ...
    def describe_stop(self, reason: str | None) -> str: ...


class CallRefused(ChainwardenError, RuntimeError):
    """A contained call did not run (or its result was not accepted).

    ``decision`` is the refusing verdict, ``stop_reason`` why, and ``detail`` the chain's figures
    for that limit at the time (e.g. ``spent $1.0200 of the $1.0000 ceiling``), also in the message.
    """

    _prefix = "call refused"

    def __init__(self, decision: Decision, stop_reason: str | None, detail: str | None = None) -> None:
        text = f"{self._prefix}: {stop_reason or 'unknown'} ({decision.value})"
        super().__init__(f"{text}: {detail}" if detail else text)
        self.decision = decision
        self.stop_reason = stop_reason
        self.detail = detail

    @classmethod
    def of(cls, s: _Chain, decision: Decision, stop_reason: str | None = None) -> Self:
        """The refusal of a call of chain ``s``, with the chain's figures for the limit that refused it
        (``stop_reason`` defaults to the reason the last call on this thread recorded)."""
        reason = s.note.reason if stop_reason is None else stop_reason
        return cls(decision, reason, s.describe_stop(reason))

    def __reduce__(self) -> tuple[type[Self], tuple[Decision, str | None, str | None]]:
        return (type(self), (self.decision, self.stop_reason, self.detail))


class ChainHalted(CallRefused):
    """Containment refused a call made through an integration (a provider client, a LangChain
    callback, a LangGraph node): the run stops here (docs/integrations.md).

    A ``CallRefused``, so code that already catches refusals of ``@ctx.llm_call`` catches these;
    ``stop_reason`` names why (``budget_exceeded``, ``step_limit_exceeded``, ``pipeline_halt``, ...)
    and ``decision`` is the refusing verdict (HALT, or a pipeline's DEGRADE / QUARANTINE / ...)."""

    _prefix = "chain halted"


class BudgetExceeded(ChainwardenError, OverflowError):
    """A shared budget refused a hold: what is spent and held plus the estimate would pass its ceiling.
    An ``OverflowError`` too, as veronica-core's backends raise (docs/containment.md "Shared budgets")."""


class BudgetBackendUnavailable(ChainwardenError, ConnectionError):
    """A shared budget backend's server could not be reached (or answered with an error); nothing was
    changed."""


# --- the durable DAG store --------------------------------------------------------------------------


class StoreError(ChainwardenError):
    """A durable DAG store could not do what was asked; `.code` names what went wrong."""

    code = ErrorCode.DAG_STORE_ERROR


class StoreUrlError(StoreError, InvalidArgument):
    """`Store.open` was given a URL it cannot use (an `InvalidArgument`, so a `ValueError`)."""

    code = ErrorCode.DAG_STORE_BAD_URL


class StoreConnectionError(StoreError, ConnectionError):
    """The database is unreachable, or the connection was lost mid-call and the change did not land (it was
    not committed; running it again applies it once)."""

    code = ErrorCode.DAG_STORE_CONNECTION


class StoreCommitUnknownError(StoreConnectionError):
    """The connection broke while a change was being committed and the database could not be reached again
    to find out whether it landed (docs/design.md §33). The graph object reloads before its next call; look at
    the graph (`refresh()`) before doing the change again."""

    code = ErrorCode.DAG_STORE_COMMIT_UNKNOWN


class StoreSchemaError(StoreError):
    """The database holds a schema version this chainwarden does not know."""

    code = ErrorCode.DAG_STORE_SCHEMA_VERSION


class StoreConflictError(StoreError):
    """A graph id given to `create_graph` already exists in the store."""

    code = ErrorCode.DAG_STORE_GRAPH_EXISTS


# --- billing ----------------------------------------------------------------------------------------


class BillingError(ChainwardenError):
    """Usage could not be billed now; the subclass says what failed and whether the usage is safe
    (docs/billing.md)."""


class LedgerUnavailable(BillingError):
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


class BillingUnsettled(BillingError):
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
