"""A contained call opened now and settled later, from wherever its end is observed.

Integrations see a call's start and end as separate events: a streamed provider reply is settled when
the stream ends or is closed, a LangChain callback handler hears ``on_llm_start`` and later
``on_llm_end``. Unlike a ``with`` block, a held call binds no ContextVar and joins no per-thread stack
(its end may come from another task, thread or the garbage collector), so calls made while it is open
do not become its children. Admission and settlement are those of every wrap (docs/design.md §20):
the estimate is reserved at ``open``, the reported usage is charged at ``succeed``.
"""

from __future__ import annotations

import contextlib
import threading
from typing import TYPE_CHECKING, Any, Final

from chainwarden._core import CallKind
from chainwarden.containment._blocks import ChainHalted, admit_open
from chainwarden.containment._capture import Capture
from chainwarden.containment._outcomes import NO_RESULT, failed, succeeded
from chainwarden.containment._state import ChainState
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import InvalidArgumentType
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from chainwarden.containment.context import ExecutionContext

__all__ = ["HeldCall", "open_call"]

_ALLOW: Final = Decision.ALLOW


class HeldCall:
    """One admitted call of a chain, open until ``succeed`` or ``fail`` (the first one wins)."""

    __slots__ = ("_kind", "_lock", "_node", "_node_id", "_opts", "_s", "node_name")

    def __init__(self, s: ChainState, kind: CallKind, opts: WrapOptions, parent: int | None = None) -> None:
        """Admits the call or raises ``ChainHalted`` (nothing is left open then)."""
        node = admit_open(s, kind, opts, parent, ChainHalted)
        self._s = s
        self._kind = kind
        self._opts = opts
        self._node: int | None = node
        self._node_id = node  # kept after settlement, for flags learnt at the end
        self._lock = threading.Lock()
        self.node_name = s.core.node_name(node)

    @property
    def node(self) -> int | None:
        """The call's node while it is open, None once settled."""
        return self._node

    def _take(self) -> int | None:
        with self._lock:
            node, self._node = self._node, None
        return node

    def report(self, cost_usd: float, tokens_in: int | None = None, tokens_out: int | None = None) -> None:
        """Adds usage to the open call (as ``report_cost`` does inside a wrap); ignored once settled."""
        node = self._node
        if node is not None:
            with contextlib.suppress(KeyError):  # settled by another thread meanwhile
                self._s.core.report(node, cost_usd, tokens_in, tokens_out)

    def annotate(self, entries: dict[str, Any]) -> None:
        """Adds entries to the call's node metadata (what its integration learnt; captured content)."""
        node = self._node
        if node is not None and entries:
            with contextlib.suppress(KeyError, ValueError, TypeError):  # settled meanwhile, or not JSON
                self._s.core.annotate(node, entries)

    @property
    def chain(self) -> ChainState:
        """The state of the chain the call belongs to."""
        return self._s

    @property
    def capture(self) -> Capture | None:
        """The chain's content capture settings (None: off)."""
        return self._s.capture

    def flag(self, key: str) -> None:
        """Sets ``metadata[key] = True`` on the call's node (open or settled; ignored once pruned)."""
        with contextlib.suppress(KeyError, RuntimeError):
            self._s.core.flag(self._node_id, key)

    def succeed(self) -> Decision:
        """Settles the call at what it reported (else its estimate). ALLOW, or the refusing verdict of a
        ``before_charge`` hook. A second settlement is a no-op returning ALLOW."""
        node = self._take()
        if node is None:
            return _ALLOW
        return succeeded(self._s, node, self._kind, self._opts, NO_RESULT)

    def fail(self, exc: BaseException) -> Decision:
        """Settles the call as failed by ``exc`` (RETRY while the retry budget lasts, else HALT).
        ``KeyboardInterrupt`` / ``SystemExit`` are re-raised after the call is counted."""
        node = self._take()
        if node is None:
            return _ALLOW
        return failed(self._s, exc, node, self._opts)

    def stop_reason(self) -> str | None:
        """Why the latest non-ALLOW settlement on this thread ended as it did."""
        return self._s.note.reason

    def halted(self, decision: Decision) -> ChainHalted:
        """The ``ChainHalted`` of a settlement that returned ``decision``, with the chain's figures."""
        return ChainHalted.of(self._s, decision)


def open_call(
    ctx: ExecutionContext, kind: CallKind, opts: WrapOptions, parent: int | None = None
) -> HeldCall:
    """Admits one call of ``ctx`` that ``succeed`` / ``fail`` settle later; raises ``ChainHalted``."""
    if not isinstance(opts, WrapOptions):
        raise InvalidArgumentType(
            f"options must be a WrapOptions, got {type(opts).__name__}", argument="opts"
        )
    return HeldCall(ctx._s, kind, opts, parent)
