"""``chainwarden.instrument()`` / ``uninstrument()``: every installed SDK chainwarden knows, in one line.

(docs/integrations.md, "One line: chainwarden.instrument()".) Instrumenting patches the SDKs' own classes,
so every client of the process is covered, whenever it was made:

- OpenAI: ``chat.completions.create`` and ``responses.create`` (sync and async resource classes);
- Anthropic: ``messages.create`` (sync and async);
- LangChain: a configure hook (``langchain_core.tracers.context.register_configure_hook``) adds one
  handler to every run, unless the run already has a ``ChainwardenCallbackHandler`` of its own.

Each call goes where the code runs: into ``chainwarden.current_context()`` as a contained call (limits,
pricing, refusal before the request, exactly as ``instrument(client, ctx)``), or, outside any context, into
the process-wide ``chainwarden.default_recorder()``. A client instrumented for a context of its own keeps
going to that context. ``uninstrument()`` puts back the very objects it replaced.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import threading
from collections.abc import Callable
from typing import Any, Final

from chainwarden._args import strict_int
from chainwarden._default_recorder import default_recorder
from chainwarden.containment.calls import Capture, current_context
from chainwarden.containment.types import MAX_CONTENT_CHARS
from chainwarden.errors import InvalidArgumentType
from chainwarden.integrations._anthropic import MESSAGES
from chainwarden.integrations._calls import Dialect, Setup, acall, call
from chainwarden.integrations._openai import CHAT, RESPONSES
from chainwarden.integrations._options import checked_hint, checked_overrides
from chainwarden.integrations._recorded import Destination, Recording, arecord, record
from chainwarden.integrations._usage import PriceOverrides

__all__ = ["KNOWN", "ORIGINAL", "instrument_all", "instrumented", "uninstrument_all"]

#: The attribute a patched class method carries: the function it replaced.
ORIGINAL: Final = "__chainwarden_class_original__"

# (SDK, module, class, dialect, async) of every method patched; the SDK is skipped when not installed.
_METHODS: Final = (
    ("openai", "openai.resources.chat.completions", "Completions", CHAT, False),
    ("openai", "openai.resources.chat.completions", "AsyncCompletions", CHAT, True),
    ("openai", "openai.resources.responses", "Responses", RESPONSES, False),
    ("openai", "openai.resources.responses", "AsyncResponses", RESPONSES, True),
    ("anthropic", "anthropic.resources.messages", "Messages", MESSAGES, False),
    ("anthropic", "anthropic.resources.messages", "AsyncMessages", MESSAGES, True),
)
#: The SDKs ``instrument()`` knows, in the order it instruments them.
KNOWN: Final = ("openai", "anthropic", "langchain")

_lock = threading.Lock()
_settings: Recording | None = None
_patched: list[tuple[type, Any]] = []  # (class, the ``create`` it had in its own __dict__)
_sdks: list[str] = []
_langchain: Any = None  # the configure-hook entry, removed again by uninstrument


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _class_wrapper(
    sdk: str, dialect: Dialect, original: Callable[..., Any], is_async: bool
) -> Callable[..., Any]:
    def route(resource: Any) -> tuple[Any, Setup | Destination | None]:
        bound = original.__get__(resource, type(resource))
        settings = _settings
        if settings is None:  # uninstrumented while a call was on its way in
            return bound, None
        ctx = current_context()
        if ctx is not None:
            return bound, Setup(ctx, sdk, settings.estimate, settings.overrides)
        return bound, Destination(default_recorder(), dialect, sdk, settings)

    if is_async:

        @functools.wraps(original)
        async def create_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            bound, where = route(self)
            if where is None:
                return await bound(*args, **kwargs)
            if isinstance(where, Setup):
                return await acall(where, dialect, bound, args, kwargs)
            return await arecord(where, bound, args, kwargs)

        wrapped: Callable[..., Any] = create_async
    else:

        @functools.wraps(original)
        def create(self: Any, *args: Any, **kwargs: Any) -> Any:
            bound, where = route(self)
            if where is None:
                return bound(*args, **kwargs)
            if isinstance(where, Setup):
                return call(where, dialect, bound, args, kwargs)
            return record(where, bound, args, kwargs)

        wrapped = create
    setattr(wrapped, ORIGINAL, original)
    return wrapped


def _settings_of(
    cost_estimate_hint: float | None,
    price_overrides: PriceOverrides | None,
    capture_content: bool,
    max_content_chars: int,
    mask: Callable[[str], str] | None,
) -> Recording:
    estimate = checked_hint(cost_estimate_hint)
    table = checked_overrides(price_overrides)
    if not isinstance(capture_content, bool):
        raise InvalidArgumentType(
            f"capture_content must be a bool, got {type(capture_content).__name__}",
            argument="capture_content",
        )
    strict_int(max_content_chars, "max_content_chars", maximum=MAX_CONTENT_CHARS)
    if mask is not None and not callable(mask):
        raise InvalidArgumentType(
            f"mask must be callable or None, got {type(mask).__name__}", argument="mask"
        )
    capture = Capture(max_content_chars, mask) if capture_content else None
    return Recording(estimate, table, capture)


def instrument_all(
    *,
    cost_estimate_hint: float | None = None,
    price_overrides: PriceOverrides | None = None,
    capture_content: bool = False,
    max_content_chars: int = 4096,
    mask: Callable[[str], str] | None = None,
) -> tuple[str, ...]:
    """Instruments every installed SDK of ``KNOWN``; returns their names. Calling it again keeps what is
    instrumented and takes the new settings. Bad arguments raise before anything changes."""
    global _settings, _langchain  # noqa: PLW0603 - process-wide by design
    settings = _settings_of(cost_estimate_hint, price_overrides, capture_content, max_content_chars, mask)
    with _lock:
        _settings = settings
        if _sdks:
            return tuple(_sdks)
        for sdk, module_name, class_name, dialect, is_async in _METHODS:
            if not _installed(sdk):
                continue
            owner = getattr(importlib.import_module(module_name), class_name)
            original = owner.__dict__["create"]
            _patched.append((owner, original))
            owner.create = _class_wrapper(sdk, dialect, original, is_async)
            if sdk not in _sdks:
                _sdks.append(sdk)
        if _installed("langchain_core"):
            from chainwarden.integrations import langchain  # noqa: PLC0415 - imports langchain_core

            _langchain = langchain.install_global(lambda: _settings)
            _sdks.append("langchain")
        return tuple(_sdks)


def uninstrument_all() -> tuple[str, ...]:
    """Undoes ``instrument_all`` exactly (the original methods, the configure hooks as they were); returns
    the names it uninstrumented (none when nothing was)."""
    global _settings, _langchain  # noqa: PLW0603
    with _lock:
        done = tuple(_sdks)
        for owner, original in reversed(_patched):
            owner.create = original
        _patched.clear()
        if _langchain is not None:
            from chainwarden.integrations import langchain  # noqa: PLC0415

            langchain.remove_global(_langchain)
            _langchain = None
        _sdks.clear()
        _settings = None
        return done


def instrumented() -> tuple[str, ...]:
    """The SDKs instrumented now."""
    with _lock:
        return tuple(_sdks)


def class_original(resource: object) -> Callable[..., Any] | None:
    """The unpatched ``create`` of ``resource``'s class, bound to it, when ``instrument()`` patched it: what
    ``instrument(client, ctx)`` wraps, so one call is never recorded twice."""
    patched = getattr(type(resource), "create", None)
    original = getattr(patched, ORIGINAL, None)
    return None if original is None else original.__get__(resource, type(resource))
