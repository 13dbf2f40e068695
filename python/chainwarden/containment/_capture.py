"""Opt-in content capture (docs/containment.md, "Content capture").

With ``ExecutionConfig(capture_content=True)`` each wrapped call keeps its input and output on its node's
metadata (``content_input``, ``content_output``) as text: the messages for the integrations, a ``repr``
for plain callables (a decorated function's arguments, its result). Every text passes through ``mask``
first (so a secret is masked before anything stores or exports it, docs/design.md §31), then is cut to
``max_content_chars``. A mask that raises or returns something other than a str keeps nothing of that
text (logged without the text); capture never fails the call.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any, Final

from chainwarden._call_facts import CONTENT_INPUT, CONTENT_OUTPUT
from chainwarden._core import ChainCore

__all__ = [
    "INPUT_ATTR",
    "INPUT_KEY",
    "OUTPUT_KEY",
    "SELF_CAPTURED",
    "CallInput",
    "Capture",
    "describe",
    "input_of",
    "keep",
]

_log = logging.getLogger("chainwarden.containment")

INPUT_KEY: Final = CONTENT_INPUT
OUTPUT_KEY: Final = CONTENT_OUTPUT
# The attribute a wrap's callable may carry to say what its input was (a decorated function's call).
INPUT_ATTR: Final = "__chainwarden_input__"
_ELLIPSIS: Final = "…"
#: Set as a callable's INPUT_ATTR by code that keeps the call's content itself (the client integrations).
SELF_CAPTURED: Final = object()


class CallInput:
    """A decorated function's call, described lazily (only when capture is on)."""

    __slots__ = ("args", "fn", "kwargs")

    def __init__(self, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.fn = fn
        self.args = args
        self.kwargs = kwargs

    def __str__(self) -> str:
        name = getattr(self.fn, "__qualname__", None) or type(self.fn).__name__
        parts = [repr(a) for a in self.args] + [f"{k}={v!r}" for k, v in self.kwargs.items()]
        return f"{name}({', '.join(parts)})"


def describe(value: object) -> str:
    """A value as text: a str as it is, JSON for dicts and lists (messages), ``repr`` otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, CallInput):
        return str(value)
    if isinstance(value, Mapping | list | tuple):
        try:
            return json.dumps(value, ensure_ascii=False, default=repr)
        except (TypeError, ValueError, RecursionError):
            pass
    return repr(value)


class Capture:
    """The capture settings of one chain (or of calls recorded outside any chain)."""

    __slots__ = ("mask", "max_chars")

    def __init__(self, max_chars: int, mask: Callable[[str], str] | None) -> None:
        self.max_chars = max_chars
        self.mask = mask

    def text(self, value: object, what: str) -> str | None:
        """``value`` described, masked, then cut; None when the mask failed (nothing is kept then)."""
        try:
            text = describe(value)
        except Exception:  # a repr that raises: user code, never the caller's failure
            _log.warning("content capture: describing the %s raised; not kept", what, exc_info=True)
            return None
        if self.mask is not None:
            try:
                masked = self.mask(text)
            except Exception as exc:
                # The text may hold the very secret the mask was for: log the error's type only.
                _log.warning("content capture: mask raised %s; the %s is not kept", type(exc).__name__, what)
                return None
            if not isinstance(masked, str):
                kind = type(masked).__name__
                _log.warning("content capture: mask returned %s, not str; the %s is not kept", kind, what)
                return None
            text = masked
        if len(text) > self.max_chars:
            text = text[: max(0, self.max_chars - 1)] + _ELLIPSIS if self.max_chars else ""
        return text

    def entries(
        self, *, input: object = None, output: object = None, has_output: bool = False
    ) -> dict[str, str]:
        """The metadata entries for a call's ``input`` (None: not known) and ``output``."""
        out: dict[str, str] = {}
        if input is not None:
            kept = self.text(input, "input")
            if kept is not None:
                out[INPUT_KEY] = kept
        if has_output:
            kept = self.text(output, "output")
            if kept is not None:
                out[OUTPUT_KEY] = kept
        return out


def input_of(fn: object) -> object:
    """What a wrapped callable's input was: its declared call, else the callable itself."""
    declared = getattr(fn, INPUT_ATTR, None)
    return declared if declared is not None else fn


def keep(capture: Capture, core: ChainCore, node: int, entries: dict[str, str]) -> None:
    """Adds captured entries to the call's node; the node may already be gone (pruned), which is fine."""
    if not entries:
        return
    try:
        core.annotate(node, entries)
    except (KeyError, ValueError, TypeError):
        _log.debug("content capture: node %s not annotated", node, exc_info=True)
