"""The partial-result buffers of one chain's calls, and ``attach_partial_buffer`` /
``get_current_partial_buffer`` (docs/containment.md "Streamed calls, response usage and reconciliation").

A call's buffer is kept by the chain under the call's node id: ``WrapOptions(partial_buffer=...)`` binds it
when the call is admitted, ``attach_partial_buffer`` from inside the call. The running code finds its call
the way ``report_cost`` does (the core's per-thread stack of sync calls, the ContextVar of async calls), so
the wrap's fast path pays nothing for calls without a buffer.

Memory stays bounded: buffers of open calls are always kept, and beyond ``MAX_KEPT_BUFFERS`` the oldest
buffers of finished calls are let go (their records then show ``partial_buffer=None``).
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from contextvars import ContextVar
from typing import Any, Final

from chainwarden._core import ChainCore
from chainwarden.containment._current import owner
from chainwarden.containment._report import current_call
from chainwarden.containment.partial import MAX_KEPT_BUFFERS
from chainwarden.errors import InvalidArgumentType, InvalidState

__all__ = ["PartialBuffers", "attach_partial_buffer", "get_current_partial_buffer"]

_log = logging.getLogger("chainwarden.containment")

# A buffer attached outside every wrapped call (the reference allows it): seen by get_current_partial_buffer
# there, and by calls that have no buffer of their own.
_OUTSIDE: Final[ContextVar[Any]] = ContextVar("chainwarden_partial_buffer", default=None)


class PartialBuffers:
    """node id -> (node, buffer), in the order the buffers were bound."""

    __slots__ = ("_core", "_kept", "_lock")

    def __init__(self, core: ChainCore) -> None:
        self._core = core
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, tuple[int, Any]] = OrderedDict()

    def __bool__(self) -> bool:
        return bool(self._kept)

    def bind(self, node: int, buffer: Any) -> None:
        """Keeps ``buffer`` for ``node``; ``RuntimeError`` if the call already has a different one."""
        name = self._core.node_name(node)
        with self._lock:
            kept = self._kept.get(name)
            if kept is not None:
                if kept[1] is not buffer:
                    raise InvalidState(
                        f"a different partial buffer is already attached to call {name}; "
                        "a call keeps one buffer"
                    )
                return
            if len(self._kept) >= MAX_KEPT_BUFFERS:
                self._let_go_finished()
            self._kept[name] = (node, buffer)

    def _let_go_finished(self) -> None:
        # The oldest buffers of calls that ended go first; buffers of open calls are never dropped.
        excess = len(self._kept) - MAX_KEPT_BUFFERS + 1
        for name, (node, _) in list(self._kept.items()):
            if excess <= 0:
                return
            if not self._core.is_open(node):
                del self._kept[name]
                excess -= 1

    def of_node(self, node: int) -> Any:
        return self.get(self._core.node_name(node))

    def get(self, node_id: str) -> Any:
        with self._lock:
            kept = self._kept.get(node_id)
        return None if kept is None else kept[1]

    def by_node_id(self) -> dict[str, Any]:
        with self._lock:
            return {name: buffer for name, (_, buffer) in self._kept.items()}

    def clear(self) -> None:
        with self._lock:
            self._kept.clear()


def _call_buffers() -> tuple[PartialBuffers, int] | None:
    """The buffers of the chain whose call the running code is inside, and that call's node."""
    call = current_call()
    if call is None:
        return None
    ctx = owner(call.core)
    return None if ctx is None else (ctx._s.partials, call.node)


def get_current_partial_buffer() -> Any:
    """The partial buffer of the wrapped call the running code is inside, else the one attached outside
    any call in this context, else None."""
    found = _call_buffers()
    if found is not None:
        buffers, node = found
        buffer = buffers.of_node(node) if buffers else None
        if buffer is not None:
            return buffer
    return _OUTSIDE.get()


def attach_partial_buffer(buf: Any) -> None:
    """Attaches ``buf`` to the wrapped call the running code is inside (``get_partial_result`` and its
    ``NodeRecord`` then return it). Attaching the same buffer again does nothing; a different one raises
    ``RuntimeError``. Outside every wrapped call the buffer becomes the current one for this context
    (``get_current_partial_buffer``), as in the reference."""
    for method in ("append", "mark_complete", "get_partial"):
        if not callable(getattr(buf, method, None)):
            raise InvalidArgumentType(
                f"buf must provide a callable {method}(), got {type(buf).__name__}", argument="buf"
            )
    found = _call_buffers()
    if found is not None:
        buffers, node = found
        buffers.bind(node, buf)
        return
    current = _OUTSIDE.get()
    if current is not None and current is not buf:
        raise InvalidState(
            "attach_partial_buffer() was given a different buffer than the one already attached"
        )
    _OUTSIDE.set(buf)
