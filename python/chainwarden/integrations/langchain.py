"""LangChain: every LLM and tool call of a chain or agent as a contained call (``chainwarden[langchain]``).

``ChainwardenCallbackHandler(ctx)`` opens a contained call of ``ctx`` when LangChain starts a chat model,
an LLM or a tool, and settles it when the run ends or fails: kind ``llm`` named after the model class with
the model the run reports (``ls_model_name`` / ``invocation_params``), or kind ``tool`` named after the
tool. LLM usage (``usage_metadata``, else ``llm_output["token_usage"]``) is priced with
``chainwarden.pricing.price_usage`` (provider from ``ls_provider``) and settled as the call's actual cost
(docs/design.md §20). A call containment refuses raises ``ChainHalted`` from the start callback, before
the model or tool runs; ``raise_error = True`` so LangChain propagates it and the run stops. Runs nest:
an LLM call started inside a contained tool (or a ``contained_node``) is that call's child.
See docs/integrations.md.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn
from uuid import UUID

from chainwarden._core import CallKind
from chainwarden._extras import require
from chainwarden.containment._blocks import ChainHalted
from chainwarden.containment._held import HeldCall, open_call
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import WrapOptions
from chainwarden.integrations._estimate import Estimate, estimate, output_limit, prompt_tokens
from chainwarden.integrations._streams import settle_failure
from chainwarden.integrations._usage import (
    USAGE_MISSING,
    PriceOverrides,
    Usage,
    UsageError,
    charge,
    count,
    note_usage_missing,
)
from chainwarden.pricing import _overrides
from chainwarden.shield.types import Decision

if TYPE_CHECKING:
    from langchain_core.callbacks import BaseCallbackHandler
else:
    BaseCallbackHandler = require("langchain_core.callbacks", "langchain").BaseCallbackHandler

__all__ = ["ChainwardenCallbackHandler"]


def _first_str(*values: object) -> str:
    for value in values:
        if isinstance(value, str) and value:
            return value
    return ""


def _name(serialized: Mapping[str, Any] | None, kwargs: Mapping[str, Any], fallback: str) -> str:
    if isinstance(serialized, Mapping):
        ids = serialized.get("id")
        last = ids[-1] if isinstance(ids, list) and ids else None
        return _first_str(kwargs.get("name"), serialized.get("name"), last, fallback)
    return _first_str(kwargs.get("name"), fallback)


def model_of(metadata: Mapping[str, Any] | None, kwargs: Mapping[str, Any]) -> tuple[str, str]:
    """``(provider, model)`` of an LLM run as LangChain reports them at its start ("" when it does not)."""
    meta = metadata or {}
    params = kwargs.get("invocation_params")
    params = params if isinstance(params, Mapping) else {}
    model = _first_str(meta.get("ls_model_name"), params.get("model"), params.get("model_name"))
    return _first_str(meta.get("ls_provider")), model


def usage_of(response: Any, usage: Usage) -> None:
    """Sums the usage of every generation of an ``LLMResult`` (LangChain's ``usage_metadata`` counts
    cached input tokens in ``input_tokens``, as genai-prices does). A count that cannot be a token count
    raises ``UsageError``."""
    for generations in getattr(response, "generations", None) or ():
        for generation in generations:
            add_usage_metadata(getattr(getattr(generation, "message", None), "usage_metadata", None), usage)
    if usage.seen:
        return
    output = getattr(response, "llm_output", None)
    tokens = output.get("token_usage") if isinstance(output, Mapping) else None
    if isinstance(tokens, Mapping):
        usage.seen = True
        usage.input_tokens = count(tokens.get("prompt_tokens"), "llm_output.token_usage.prompt_tokens")
        usage.output_tokens = count(
            tokens.get("completion_tokens"), "llm_output.token_usage.completion_tokens"
        )


def add_usage_metadata(meta: object, usage: Usage) -> None:
    """Adds one message's (or streamed chunk's) ``usage_metadata`` to ``usage``."""
    if not isinstance(meta, Mapping):
        return
    usage.seen = True
    usage.input_tokens += count(meta.get("input_tokens"), "usage_metadata.input_tokens")
    usage.output_tokens += count(meta.get("output_tokens"), "usage_metadata.output_tokens")
    details = meta.get("input_token_details")
    if isinstance(details, Mapping):
        usage.cache_read_tokens += count(
            details.get("cache_read"), "usage_metadata.input_token_details.cache_read"
        )
        usage.cache_write_tokens += count(
            details.get("cache_creation"), "usage_metadata.input_token_details.cache_creation"
        )
    usage.checked()  # sums past 2**63 end the call too


# The output limit of a run, as LangChain's chat models name it in their invocation parameters.
_OUTPUT_FIELDS = (
    "max_tokens",
    "max_completion_tokens",
    "max_output_tokens",
    "max_tokens_to_sample",
    "num_predict",
)


@dataclass
class _Open:
    """One open run: its held call, what it may be charged and the usage seen so far."""

    held: HeldCall
    fallback: float
    usage: Usage | None = None  # LLM runs only
    streamed: Usage | None = None  # usage of the streamed chunks, for a run that fails mid-stream


class ChainwardenCallbackHandler(BaseCallbackHandler):
    """Records and contains the LLM and tool calls of LangChain runs in ``ctx``.

    ``provider`` overrides the price list LangChain reports (``ls_provider``), ``cost_estimate_hint`` is
    each call's reserved estimate, ``price_overrides`` is ``price_usage``'s ``overrides``. One handler
    may serve concurrent runs (threads, ``abatch``)."""

    raise_error = True  # a refusal must stop the run, not be logged and skipped
    run_inline = True  # async runs call it on the loop, in order, so a refusal comes before the call

    def __init__(
        self,
        ctx: ExecutionContext,
        *,
        provider: str | None = None,
        cost_estimate_hint: float | None = None,
        price_overrides: PriceOverrides | None = None,
    ) -> None:
        if not isinstance(ctx, ExecutionContext):
            raise TypeError(f"ctx must be an ExecutionContext, got {type(ctx).__name__}")
        if provider is not None and (not isinstance(provider, str) or not provider):
            raise TypeError(f"provider must be a non-empty str or None, got {provider!r}")
        self._hint = (
            None
            if cost_estimate_hint is None
            else WrapOptions(cost_estimate_hint=cost_estimate_hint).cost_estimate_hint
        )
        try:
            table = _overrides(price_overrides)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"price_overrides: {exc}") from None
        super().__init__()
        self.ctx = ctx
        self._provider = provider
        self._overrides = table or None
        self._lock = threading.Lock()
        self._open: dict[UUID, _Open] = {}

    # -- bookkeeping -----------------------------------------------------------------------------------

    def _start(self, run_id: UUID, parent_run_id: UUID | None, kind: CallKind, opts: WrapOptions) -> HeldCall:
        with self._lock:
            parent = self._open.get(parent_run_id) if parent_run_id is not None else None
        parent_node = parent.held.node if parent is not None else None
        return open_call(self.ctx, kind, opts, parent_node)  # ChainHalted when refused

    def _keep(self, run_id: UUID, opened: _Open) -> None:
        with self._lock:
            self._open[run_id] = opened

    def _take(self, run_id: UUID) -> _Open | None:
        with self._lock:
            return self._open.pop(run_id, None)

    def _peek(self, run_id: UUID) -> _Open | None:
        with self._lock:
            return self._open.get(run_id)

    def _succeed(self, held: HeldCall) -> None:
        decision = held.succeed()
        if decision is not Decision.ALLOW:
            raise _halted(decision, held)

    def _fail(self, run_id: UUID, error: BaseException, response: Any = None) -> None:
        opened = self._take(run_id)
        if opened is None:
            return
        usage = opened.usage
        if usage is not None:
            # A run that fails after its provider reported usage, or after its stream started (cut
            # mid-way), is charged what it used: the usage seen, else its estimate (docs/design.md §30).
            # A request that failed before any answer is charged nothing.
            try:
                usage_of(response, usage)
                if usage.seen or opened.streamed is not None:
                    self._report(run_id, opened, response)
            except UsageError as invalid:
                self._end_invalid(run_id, opened, invalid)
        halted = settle_failure(opened.held, error)
        if halted is not None:
            raise halted from error

    def _report(self, run_id: UUID, opened: _Open, response: Any) -> None:
        """Reports the run's usage (the response's, else the streamed chunks') to its open call; no
        usage at all is charged the fallback and flagged. Raises ``UsageError``."""
        usage = opened.usage
        assert usage is not None
        if not usage.seen and opened.streamed is not None:
            usage = opened.streamed
        held = opened.held
        price = charge(usage, opened.fallback, self._overrides, held.report)
        if not usage.seen:
            note_usage_missing("langchain", held.node_name, lambda: held.flag(USAGE_MISSING))
        self.usage_reported(run_id, usage, price, response)

    def _end_invalid(self, run_id: UUID, opened: _Open, invalid: UsageError) -> NoReturn:
        """The run reported a count that cannot be one: it ends failed with ``invalid``, charged its
        estimate (it ran; what it cost is unknown), and its usage counts as missing."""
        held = opened.held
        held.report(opened.fallback)
        if opened.usage is not None:
            unknown = Usage(opened.usage.provider, opened.usage.model)
            note_usage_missing("langchain", held.node_name, lambda: held.flag(USAGE_MISSING))
            self.usage_reported(run_id, unknown, None, None)
        halted = settle_failure(held, invalid)
        if halted is not None:
            raise halted from invalid
        raise invalid

    def usage_reported(self, run_id: UUID, usage: Usage, price: Decimal | None, response: Any) -> None:
        """Called once for each LLM run that used tokens, after they were charged: ``usage`` (its
        ``seen`` is False when the provider reported none), its ``price`` (None: unknown) and the run's
        ``LLMResult`` (None when it failed mid-stream). Does nothing; the seam for a subclass that bills
        the usage (the runtime's ``LangGraphExecutor``)."""

    # -- LLM runs --------------------------------------------------------------------------------------

    def _llm_start(  # noqa: PLR0917  (what every start callback passes on)
        self,
        serialized: dict[str, Any] | None,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
        prompt: object,
    ) -> None:
        provider, model = model_of(metadata, kwargs)
        provider = self._provider or provider
        cost = self._estimate(provider, model, prompt, kwargs)
        opts = WrapOptions(_name(serialized, kwargs, "llm"), cost.reserve, model=model or None)
        held = self._start(run_id, parent_run_id, CallKind.LLM, opts)
        self._keep(run_id, _Open(held, cost.fallback, Usage(provider, model)))

    def _estimate(self, provider: str, model: str, prompt: object, kwargs: Mapping[str, Any]) -> Estimate:
        if self._hint is not None:
            return Estimate(self._hint, self._hint)
        params = kwargs.get("invocation_params")
        params = params if isinstance(params, Mapping) else {}
        return estimate(
            self.ctx,
            hint=None,
            provider=provider,
            model=model,
            prompt=prompt_tokens(prompt, params.get("tools"), params.get("functions")),
            output=output_limit(params, _OUTPUT_FIELDS),
            overrides=self._overrides,
        )

    def on_chat_model_start(
        self,
        serialized: dict[str, Any],
        messages: list[list[Any]],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._llm_start(serialized, run_id, parent_run_id, metadata, kwargs, messages)

    def on_llm_start(
        self,
        serialized: dict[str, Any],
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._llm_start(serialized, run_id, parent_run_id, metadata, kwargs, prompts)

    def on_llm_new_token(
        self,
        token: str | list[str | dict[str, Any]],
        *,
        chunk: Any = None,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        **kwargs: Any,
    ) -> None:
        # Streamed chunks carry the usage seen so far (Anthropic's message_start has the prompt's), which
        # is all there is when the stream is cut before its end (docs/design.md §30).
        opened = self._peek(run_id)
        if opened is None or opened.usage is None:
            return
        if opened.streamed is None:
            opened.streamed = Usage(opened.usage.provider, opened.usage.model)
        try:
            add_usage_metadata(
                getattr(getattr(chunk, "message", None), "usage_metadata", None), opened.streamed
            )
        except UsageError as invalid:
            if self._take(run_id) is not None:
                self._end_invalid(run_id, opened, invalid)  # LangChain re-raises it (raise_error)
            raise

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        opened = self._take(run_id)
        if opened is None:
            return
        try:
            if opened.usage is not None:
                usage_of(response, opened.usage)
            self._report(run_id, opened, response)
        except UsageError as invalid:
            self._end_invalid(run_id, opened, invalid)
        self._succeed(opened.held)

    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._fail(run_id, error, kwargs.get("response"))

    # -- tool runs -------------------------------------------------------------------------------------

    def on_tool_start(
        self,
        serialized: dict[str, Any],
        input_str: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        tags: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        inputs: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        hint = self._hint or 0.0
        opts = WrapOptions(_name(serialized, kwargs, "tool"), hint)
        held = self._start(run_id, parent_run_id, CallKind.TOOL, opts)
        self._keep(run_id, _Open(held, hint))

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        opened = self._take(run_id)
        if opened is not None:
            self._succeed(opened.held)

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._fail(run_id, error)


def _halted(decision: Decision, held: HeldCall) -> ChainHalted:
    return held.halted(decision)
