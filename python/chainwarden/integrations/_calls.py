"""One provider request as a contained ``llm`` call of a chain (docs/integrations.md).

A plain request runs inside ``wrap_llm_call`` / ``wrap_llm_call_async`` (so it has every property of a
wrapped call: nesting, cancellation of async calls on abort or timeout), reporting its priced usage from
inside the wrap. A streamed request cannot end inside the wrap — the caller consumes the stream later — so
it is a held call (``containment._held``), settled by the stream proxy. Either way a refused call raises
``ChainHalted`` before the request is sent, and the call reserves its worst case first (``_estimate``).
Usage that cannot be a token count ends the call with ``UsageError``, charged its estimate: the request
happened, what it cost is unknown (docs/design.md §30).
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from chainwarden._core import CallKind
from chainwarden.containment.calls import (
    INPUT_ATTR,
    SELF_CAPTURED,
    Capture,
    capture_of,
    current_call,
    flag_current_call,
    open_call,
    report_cost,
)
from chainwarden.containment.calls import halted as refused
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import WrapOptions
from chainwarden.integrations._estimate import PROMPT_FIELDS, Estimate, estimate, output_limit, prompt_tokens
from chainwarden.integrations._facts import request_facts, response_facts
from chainwarden.integrations._streams import AsyncHeldStream, HeldStream, Settle, Watch, settle_failure
from chainwarden.integrations._usage import (
    USAGE_MISSING,
    PriceOverrides,
    Usage,
    UsageError,
    charge,
    note_usage_missing,
)
from chainwarden.shield.types import Decision

__all__ = ["Dialect", "Setup", "acall", "call", "outcome", "requested_model", "stream_watch"]


@dataclass(frozen=True)
class Setup:
    """What ``instrument`` was given, shared by every wrapped method of one client."""

    ctx: ExecutionContext
    provider: str
    hint: float | None  # an explicit cost_estimate_hint; None: each request's worst case
    overrides: PriceOverrides | None


@dataclass(frozen=True)
class Dialect:
    """How one provider method reports usage."""

    operation: str  # the node's name, e.g. "openai.chat.completions"
    usage_of: Callable[[Any, Usage], None]  # a plain response's usage (and id, finish reasons) into the Usage
    watch: Watch  # one stream event's usage into the Usage; False hides the event
    prepare: Callable[[dict[str, Any]], Watch | None] | None = None  # may adjust a streamed request
    input_of: Callable[[dict[str, Any]], Any] = lambda kwargs: None  # what was sent, for content capture
    output_of: Callable[[Any], Any] = lambda response: None  # a plain response's reply, for content capture
    output_fields: tuple[str, ...] = ("max_tokens",)  # the request's output limit, first one given


def requested_model(kwargs: dict[str, Any]) -> str:
    model = kwargs.get("model")
    return model if isinstance(model, str) else ""


def _estimate(setup: Setup, dialect: Dialect, model: str, kwargs: dict[str, Any]) -> Estimate:
    if setup.hint is not None:
        return Estimate(setup.hint, setup.hint)
    return estimate(
        setup.ctx,
        hint=None,
        provider=setup.provider,
        model=model,
        prompt=prompt_tokens(*(kwargs.get(name) for name in PROMPT_FIELDS)),
        output=output_limit(kwargs, dialect.output_fields),
        overrides=setup.overrides,
    )


def _report(cost: float, tokens_in: int | None, tokens_out: int | None) -> None:
    report_cost(cost, tokens_in=tokens_in, tokens_out=tokens_out)


def outcome(ctx: ExecutionContext, decision: Decision, box: list[Any], errors: list[BaseException]) -> Any:
    """What a wrapped call's caller gets: its result, its own error while retries remain, else
    ``ChainHalted`` (chained to the error that stopped the chain, if any)."""
    if decision is Decision.ALLOW:
        return box[0]
    if errors and decision is Decision.RETRY:
        raise errors[0]  # the provider's own error, counted against the retry budget
    halted = refused(ctx, decision)
    if errors:
        raise halted from errors[0]
    raise halted


def stream_watch(dialect: Dialect, kwargs: dict[str, Any]) -> Watch:
    if dialect.prepare is not None:
        adjusted = dialect.prepare(kwargs)
        if adjusted is not None:
            return adjusted
    return dialect.watch


def _capture(setup: Setup) -> Capture | None:
    return capture_of(setup.ctx)


def _asked(setup: Setup, dialect: Dialect, model: str, kwargs: dict[str, Any]) -> dict[str, Any]:
    capture = _capture(setup)
    return request_facts(capture, setup.provider, model, dialect.input_of(kwargs) if capture else None)


def _annotate_current(entries: dict[str, Any]) -> None:
    """Adds entries to the node of the wrapped call this runs in (the thunk of ``call`` / ``acall``)."""
    found = current_call()
    if found is not None and entries:
        with contextlib.suppress(KeyError, ValueError, TypeError):
            found.core.annotate(found.node, entries)


def _answered(setup: Setup, dialect: Dialect, response: Any, usage: Usage) -> None:
    capture = _capture(setup)
    _annotate_current(response_facts(capture, usage, dialect.output_of(response) if capture else None))


def _settle_response(
    setup: Setup,
    dialect: Dialect,
    response: Any,
    usage: Usage,
    *,
    fallback: float,
    errors: list[BaseException],
) -> None:
    """Inside the wrap: reports what the response cost, or ends the call with ``UsageError``."""
    try:
        dialect.usage_of(response, usage)
        charge(usage, fallback, setup.overrides, _report)
    except UsageError as exc:
        _report(fallback, None, None)  # the request happened; what it cost is unknown: its estimate
        errors.append(exc)
        raise
    if not usage.seen:
        note_usage_missing(dialect.operation, dialect.operation, lambda: flag_current_call(USAGE_MISSING))


def call(
    setup: Setup, dialect: Dialect, original: Callable[..., Any], args: Any, kwargs: dict[str, Any]
) -> Any:
    model = requested_model(kwargs)
    streamed = kwargs.get("stream") is True
    watch = stream_watch(dialect, kwargs) if streamed else dialect.watch
    cost = _estimate(setup, dialect, model, kwargs)
    opts = WrapOptions(dialect.operation, cost.reserve, model=model or None)
    usage = Usage(setup.provider, model)
    if streamed:
        held = open_call(setup.ctx, CallKind.LLM, opts)
        held.annotate(_asked(setup, dialect, model, kwargs))
        usage.keep_text = held.capture is not None
        try:
            inner = original(*args, **kwargs)
        except BaseException as exc:
            halted = settle_failure(held, exc)
            if halted is None:
                raise
            raise halted from exc
        settle = Settle(
            held, usage, watch, fallback=cost.fallback, overrides=setup.overrides, name=dialect.operation
        )
        return HeldStream(inner, settle)

    box: list[Any] = []
    errors: list[BaseException] = []

    def thunk() -> None:
        _annotate_current(_asked(setup, dialect, model, kwargs))
        try:
            response = original(*args, **kwargs)
        except BaseException as exc:
            errors.append(exc)
            raise
        _settle_response(setup, dialect, response, usage, fallback=cost.fallback, errors=errors)
        _answered(setup, dialect, response, usage)
        box.append(response)

    setattr(thunk, INPUT_ATTR, SELF_CAPTURED)  # the messages, not the thunk, are the call's content
    return outcome(setup.ctx, setup.ctx.wrap_llm_call(thunk, opts), box, errors)


async def acall(
    setup: Setup, dialect: Dialect, original: Callable[..., Awaitable[Any]], args: Any, kwargs: dict[str, Any]
) -> Any:
    model = requested_model(kwargs)
    streamed = kwargs.get("stream") is True
    watch = stream_watch(dialect, kwargs) if streamed else dialect.watch
    cost = _estimate(setup, dialect, model, kwargs)
    opts = WrapOptions(dialect.operation, cost.reserve, model=model or None)
    usage = Usage(setup.provider, model)
    if streamed:
        held = open_call(setup.ctx, CallKind.LLM, opts)
        held.annotate(_asked(setup, dialect, model, kwargs))
        usage.keep_text = held.capture is not None
        try:
            inner = await original(*args, **kwargs)
        except BaseException as exc:
            halted = settle_failure(held, exc)
            if halted is None:
                raise
            raise halted from exc
        settle = Settle(
            held, usage, watch, fallback=cost.fallback, overrides=setup.overrides, name=dialect.operation
        )
        return AsyncHeldStream(inner, settle)

    box: list[Any] = []
    errors: list[BaseException] = []

    async def thunk() -> None:
        _annotate_current(_asked(setup, dialect, model, kwargs))
        try:
            response = await original(*args, **kwargs)
        except BaseException as exc:
            errors.append(exc)
            raise
        _settle_response(setup, dialect, response, usage, fallback=cost.fallback, errors=errors)
        _answered(setup, dialect, response, usage)
        box.append(response)

    setattr(thunk, INPUT_ATTR, SELF_CAPTURED)
    return outcome(setup.ctx, await setup.ctx.wrap_llm_call_async(thunk, opts), box, errors)
