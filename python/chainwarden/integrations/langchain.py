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
from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NoReturn
from uuid import UUID

from chainwarden._core import CallKind
from chainwarden._default_recorder import default_recorder
from chainwarden._extras import require
from chainwarden.containment.calls import Capture, HeldCall, current_context, holds, open_call
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import WrapOptions
from chainwarden.errors import ChainHalted, InvalidArgumentType
from chainwarden.integrations._estimate import Estimate, estimate, output_limit, prompt_tokens
from chainwarden.integrations._facts import request_facts, response_facts
from chainwarden.integrations._options import checked_hint, checked_overrides, checked_provider
from chainwarden.integrations._recorded import GraphCall, Recording
from chainwarden.integrations._streams import Held, settle_failure
from chainwarden.integrations._usage import (
    USAGE_MISSING,
    PriceOverrides,
    Usage,
    UsageError,
    charge,
    count,
    note_usage_missing,
)
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

    held: Held
    fallback: float
    usage: Usage | None = None  # LLM runs only
    streamed: Usage | None = None  # usage of the streamed chunks, for a run that fails mid-stream


def _replies(response: Any, usage: Usage) -> list[str]:
    """The text of each generation; the reply's id and finish reasons go into ``usage`` (LangChain keeps
    them in ``generation_info`` or the message's ``response_metadata``, per provider)."""
    texts: list[str] = []
    for generations in getattr(response, "generations", None) or ():
        for generation in generations:
            texts.append(str(getattr(generation, "text", "")))
            message = getattr(generation, "message", None)
            info = getattr(generation, "generation_info", None) or {}
            meta = getattr(message, "response_metadata", None) or {}
            reason = _first_str(info.get("finish_reason"), meta.get("finish_reason"), meta.get("stop_reason"))
            if reason:
                usage.finish_reasons.append(reason)
            found = _first_str(meta.get("id"), getattr(message, "id", None))
            if found and usage.response_id is None:
                usage.response_id = found
    return texts


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
            raise InvalidArgumentType(
                f"ctx must be an ExecutionContext, got {type(ctx).__name__}", argument="ctx"
            )
        self._setup(provider, cost_estimate_hint, price_overrides)
        self.ctx = ctx

    def _setup(
        self, provider: str | None, cost_estimate_hint: float | None, price_overrides: PriceOverrides | None
    ) -> None:
        checked_provider(provider)
        self._hint: float | None = checked_hint(cost_estimate_hint)
        table = checked_overrides(price_overrides)
        BaseCallbackHandler.__init__(self)
        self._provider = provider
        self._overrides = table
        self._lock = threading.Lock()
        self._open: dict[UUID, _Open] = {}

    # -- bookkeeping -----------------------------------------------------------------------------------

    def _parent(self, parent_run_id: UUID | None) -> Held | None:
        with self._lock:
            parent = self._open.get(parent_run_id) if parent_run_id is not None else None
        return parent.held if parent is not None else None

    def _context(self) -> ExecutionContext | None:
        """The chain this handler's runs belong to: the seam ``chainwarden.instrument()``'s handler
        overrides (the context current when a run starts, None outside any)."""
        return self.ctx

    def _outside_capture(self) -> Capture | None:
        """What a run recorded outside any chain keeps of its content (never, for a handler bound to one)."""
        return None

    def _start(self, run_id: UUID, parent_run_id: UUID | None, kind: CallKind, opts: WrapOptions) -> Held:
        """Opens the run's call: a contained call of the chain (``ChainHalted`` when refused), or, without
        a chain, a node of ``chainwarden.default_recorder()``."""
        parent = self._parent(parent_run_id)
        ctx = self._context()
        if ctx is None:
            return GraphCall(
                default_recorder(),
                kind.value,
                opts.operation_name,
                opts.model,
                capture=self._outside_capture(),
                parent=parent.node_id if isinstance(parent, GraphCall) else None,
            )
        parent_node = parent.node if isinstance(parent, HeldCall) and holds(ctx, parent) else None
        return open_call(ctx, kind, opts, parent_node)

    def _keep(self, run_id: UUID, opened: _Open) -> None:
        with self._lock:
            self._open[run_id] = opened

    def _take(self, run_id: UUID) -> _Open | None:
        with self._lock:
            return self._open.pop(run_id, None)

    def _peek(self, run_id: UUID) -> _Open | None:
        with self._lock:
            return self._open.get(run_id)

    def _succeed(self, held: Held) -> None:
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
        held.annotate(request_facts(held.capture, provider, model, _sent(prompt) if held.capture else None))

    def _estimate(self, provider: str, model: str, prompt: object, kwargs: Mapping[str, Any]) -> Estimate:
        if self._hint is not None:
            return Estimate(self._hint, self._hint)
        ctx = self._context()
        if ctx is None:
            return Estimate(0.0, 0.0)  # recorded, not contained: there is no budget to reserve from
        params = kwargs.get("invocation_params")
        params = params if isinstance(params, Mapping) else {}
        return estimate(
            ctx,
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
        held = opened.held
        said = opened.usage or Usage("", "")
        replies = _replies(response, said)
        held.annotate(response_facts(held.capture, said, replies if held.capture is not None else None))
        self._succeed(held)

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


def _halted(decision: Decision, held: Held) -> ChainHalted:
    return held.halted(decision)


class _InstrumentedHandler(ChainwardenCallbackHandler):
    """The handler ``chainwarden.instrument()`` adds to every LangChain run (docs/integrations.md, "One
    line: chainwarden.instrument()"): a run inside an ``ExecutionContext`` is a contained call of it, any
    other is recorded into ``chainwarden.default_recorder()``."""

    def __init__(self, settings: Callable[[], Recording | None]) -> None:
        self._settings = settings
        self._setup(None, None, None)

    def _context(self) -> ExecutionContext | None:
        return current_context()

    def _outside_capture(self) -> Capture | None:
        settings = self._settings()
        return settings.capture if settings is not None else None

    def _start(self, run_id: UUID, parent_run_id: UUID | None, kind: CallKind, opts: WrapOptions) -> Held:
        settings = self._settings()
        if settings is not None:  # the settings of the latest instrument() call
            self._hint, self._overrides = settings.estimate, settings.overrides
        return super()._start(run_id, parent_run_id, kind, opts)


def _sent(prompt: object) -> Any:
    """What an LLM run was sent, as plain data (a chat model's messages as their role and content)."""
    if isinstance(prompt, list) and prompt and all(isinstance(batch, list) for batch in prompt):
        batches = [
            [{"role": getattr(m, "type", ""), "content": getattr(m, "content", m)} for m in batch]
            for batch in prompt
        ]
        return batches[0] if len(batches) == 1 else batches
    return prompt


def install_global(settings: Callable[[], Recording | None]) -> Any:
    """Adds one ``_InstrumentedHandler`` to every LangChain run that has no ``ChainwardenCallbackHandler``;
    returns the configure-hook entry ``remove_global`` takes out again."""
    from langchain_core.tracers import context as tracer_context  # noqa: PLC0415

    handler: ChainwardenCallbackHandler = _InstrumentedHandler(settings)
    # A default value: every thread and task sees the handler, not only the context that set it.
    var: ContextVar[ChainwardenCallbackHandler | None] = ContextVar("chainwarden_instrument", default=handler)
    tracer_context.register_configure_hook(var, True, ChainwardenCallbackHandler)
    return tracer_context._configure_hooks[-1]


def remove_global(entry: Any) -> None:
    """Takes the entry ``install_global`` returned out of LangChain's configure hooks."""
    from langchain_core.tracers import context as tracer_context  # noqa: PLC0415

    hooks = tracer_context._configure_hooks
    for i in range(len(hooks) - 1, -1, -1):
        if hooks[i] is entry:
            del hooks[i]
