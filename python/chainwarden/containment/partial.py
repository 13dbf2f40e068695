"""``PartialResultBuffer``: what a streamed call produced so far, kept when the call is cut short.

A wrapped call that streams its answer appends each chunk to a buffer (given as
``WrapOptions(partial_buffer=...)`` or attached from inside the call with ``attach_partial_buffer``). When
the chain stops the call (abort, timeout, a budget) or the call fails, the text received so far is still
there: ``ctx.get_partial_result(node_id)`` and ``NodeRecord.partial_buffer`` return the buffer, whose
``is_partial`` tells an interrupted answer from a complete one. A call that succeeds marks its options'
buffer complete. See docs/containment.md "Streamed calls, response usage and reconciliation".

Memory is bounded: a buffer refuses a chunk beyond ``max_chunks`` chunks or ``max_bytes`` UTF-8 bytes
(``PartialBufferOverflow``, nothing appended), and a context keeps at most ``MAX_KEPT_BUFFERS`` buffers of
finished calls.
"""

from __future__ import annotations

import threading
from typing import Any, Final

from chainwarden._args import strict_int
from chainwarden.errors import ChainwardenError, ClosedError, InvalidArgumentType

__all__ = ["MAX_BYTES", "MAX_CHUNKS", "MAX_KEPT_BUFFERS", "PartialBufferOverflow", "PartialResultBuffer"]

MAX_CHUNKS: Final = 10_000
MAX_BYTES: Final = 10 * 1024 * 1024
# Buffers of finished calls one context keeps for get_partial_result (the oldest go first).
MAX_KEPT_BUFFERS: Final = 1_000


class PartialBufferOverflow(ChainwardenError, ValueError):
    """A chunk would take a buffer past its chunk or byte limit; the buffer is unchanged.

    ``truncation_point`` names the limit (``"chunk_count"`` or ``"byte_size"``); ``kept_chunks`` /
    ``kept_bytes`` are what the buffer holds, ``total_chunks`` / ``total_bytes`` what it would have held."""

    def __init__(  # noqa: PLR0917  (the reference's fields, in its order)
        self,
        message: str,
        total_bytes: int,
        kept_bytes: int,
        total_chunks: int,
        kept_chunks: int,
        truncation_point: str,
    ) -> None:
        super().__init__(message)
        self.total_bytes = total_bytes
        self.kept_bytes = kept_bytes
        self.total_chunks = total_chunks
        self.kept_chunks = kept_chunks
        self.truncation_point = truncation_point


class PartialResultBuffer:
    """Chunks of one streamed answer, thread-safe and bounded. ``append`` after ``mark_complete`` raises
    ``ValueError``; ``clear`` makes the buffer new again."""

    __slots__ = (
        "_bytes",
        "_chunks",
        "_complete",
        "_lock",
        "_max_bytes",
        "_max_chunks",
        "_meta",
        "_overflowed",
    )

    def __init__(self, *, max_chunks: int = MAX_CHUNKS, max_bytes: int = MAX_BYTES) -> None:
        self._max_chunks = strict_int(max_chunks, "max_chunks", minimum=1)
        self._max_bytes = strict_int(max_bytes, "max_bytes", minimum=1)
        self._lock = threading.Lock()
        self._chunks: list[str] = []
        self._bytes = 0
        self._complete = False
        self._overflowed = False
        self._meta: dict[str, Any] = {}

    def append(self, chunk: str) -> None:
        """Adds one chunk, or raises ``PartialBufferOverflow`` (a ``ValueError``) past a limit."""
        if not isinstance(chunk, str):
            raise InvalidArgumentType(f"chunk must be a str, got {type(chunk).__name__}", argument="chunk")
        size = len(chunk.encode("utf-8", "surrogatepass"))
        with self._lock:
            if self._complete:
                raise ClosedError("cannot append to a PartialResultBuffer marked complete")
            count = len(self._chunks)
            if count >= self._max_chunks or self._bytes + size > self._max_bytes:
                self._overflowed = True
                by_count = count >= self._max_chunks
                limit = f"{self._max_chunks} chunks" if by_count else f"{self._max_bytes} bytes"
                raise PartialBufferOverflow(
                    f"PartialResultBuffer is full ({limit}); the chunk was not kept",
                    total_bytes=self._bytes + size,
                    kept_bytes=self._bytes,
                    total_chunks=count + 1,
                    kept_chunks=count,
                    truncation_point="chunk_count" if by_count else "byte_size",
                )
            self._chunks.append(chunk)
            self._bytes += size

    def mark_complete(self) -> None:
        """The answer arrived whole."""
        with self._lock:
            self._complete = True

    def get_partial(self) -> str:
        """Every chunk so far, joined."""
        with self._lock:
            return "".join(self._chunks)

    @property
    def chunk_count(self) -> int:
        with self._lock:
            return len(self._chunks)

    @property
    def is_complete(self) -> bool:
        with self._lock:
            return self._complete

    @property
    def is_partial(self) -> bool:
        """Some chunks arrived but the answer was not completed."""
        with self._lock:
            return bool(self._chunks) and not self._complete

    def set_metadata(self, key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise InvalidArgumentType(f"key must be a str, got {type(key).__name__}", argument="key")
        with self._lock:
            self._meta[key] = value

    @property
    def metadata(self) -> dict[str, Any]:
        """A copy of the metadata set on the buffer."""
        with self._lock:
            return dict(self._meta)

    def clear(self) -> None:
        with self._lock:
            self._chunks.clear()
            self._meta.clear()
            self._bytes = 0
            self._complete = False
            self._overflowed = False

    def to_dict(self) -> dict[str, Any]:
        """``partial_text``, ``chunk_count``, ``is_complete``, ``metadata`` (and ``truncated: True`` after
        a refused chunk)."""
        with self._lock:
            out: dict[str, Any] = {
                "partial_text": "".join(self._chunks),
                "chunk_count": len(self._chunks),
                "is_complete": self._complete,
                "metadata": dict(self._meta),
            }
            if self._overflowed:
                out["truncated"] = True
        return out

    def __repr__(self) -> str:
        with self._lock:
            state = "complete" if self._complete else "open"
            return f"<PartialResultBuffer {state} chunks={len(self._chunks)} bytes={self._bytes}>"
