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
from typing import TYPE_CHECKING, Any
from uuid import UUID

from chainwarden._core import CallKind
from chainwarden._default_recorder import default_recorder
from chainwarden._extras import require
from chainwarden.containment._blocks import ChainHalted
from chainwarden.containment._current import current_context
from chainwarden.containment._held import HeldCall, open_call
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import WrapOptions
from chainwarden.integrations._facts import request_facts, response_facts
from chainwarden.integrations._recorded import GraphCall, Recording
from chainwarden.integrations._streams import Held, settle_failure
from chainwarden.integrations._usage import PriceOverrides, Usage, charge, count
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
    cached input tokens in ``input_tokens``, as genai-prices does)."""
    for generations in getattr(response, "generations", None) or ():
        for generation in generations:
            meta = getattr(getattr(generation, "message", None), "usage_metadata", None)
            if not isinstance(meta, Mapping):
                continue
            usage.seen = True
            usage.input_tokens += count(meta.get("input_tokens"))
            usage.output_tokens += count(meta.get("output_tokens"))
            details = meta.get("input_token_details")
            if isinstance(details, Mapping):
                usage.cache_read_tokens += count(details.get("cache_read"))
                usage.cache_write_tokens += count(details.get("cache_creation"))
    if usage.seen:
        return
    output = getattr(response, "llm_output", None)
    tokens = output.get("token_usage") if isinstance(output, Mapping) else None
    if isinstance(tokens, Mapping):
        usage.seen = True
        usage.input_tokens = count(tokens.get("prompt_tokens"))
        usage.output_tokens = count(tokens.get("completion_tokens"))


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
        cost_estimate_hint: float = 0.0,
        price_overrides: PriceOverrides | None = None,
    ) -> None:
        if not isinstance(ctx, ExecutionContext):
            raise TypeError(f"ctx must be an ExecutionContext, got {type(ctx).__name__}")
        self._setup(provider, cost_estimate_hint, price_overrides)
        self.ctx = ctx

    def _setup(
        self, provider: str | None, cost_estimate_hint: float, price_overrides: PriceOverrides | None
    ) -> None:
        if provider is not None and (not isinstance(provider, str) or not provider):
            raise TypeError(f"provider must be a non-empty str or None, got {provider!r}")
        self._estimate = WrapOptions(cost_estimate_hint=cost_estimate_hint).cost_estimate_hint
        try:
            table = _overrides(price_overrides)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"price_overrides: {exc}") from None
        BaseCallbackHandler.__init__(self)
        self._provider = provider
        self._overrides = table or None
        self._lock = threading.Lock()
        self._open: dict[UUID, tuple[Held, Usage | None]] = {}

    # -- bookkeeping -----------------------------------------------------------------------------------

    def _parent(self, parent_run_id: UUID | None) -> Held | None:
        with self._lock:
            parent = self._open.get(parent_run_id) if parent_run_id is not None else None
        return parent[0] if parent is not None else None

    def _start(self, run_id: UUID, parent_run_id: UUID | None, kind: CallKind, opts: WrapOptions) -> Held:
        """Opens the run's call (the seam ``chainwarden.instrument()``'s own handler overrides)."""
        parent = self._parent(parent_run_id)
        parent_node = parent.node if isinstance(parent, HeldCall) else None
        return open_call(self.ctx, kind, opts, parent_node)  # ChainHalted when refused

    def _keep(self, run_id: UUID, held: Held, usage: Usage | None) -> None:
        with self._lock:
            self._open[run_id] = (held, usage)

    def _take(self, run_id: UUID) -> tuple[Held, Usage | None] | None:
        with self._lock:
            return self._open.pop(run_id, None)

    def _succeed(self, held: Held) -> None:
        decision = held.succeed()
        if decision is not Decision.ALLOW:
            raise _halted(decision, held)

    def _fail(self, run_id: UUID, error: BaseException) -> None:
        opened = self._take(run_id)
        if opened is not None:
            halted = settle_failure(opened[0], error)
            if halted is not None:
                raise halted from error

    # -- LLM runs --------------------------------------------------------------------------------------

    def _llm_start(
        self,
        serialized: dict[str, Any] | None,
        run_id: UUID,
        parent_run_id: UUID | None,
        metadata: Mapping[str, Any] | None,
        kwargs: Mapping[str, Any],
        *,
        sent: Any,
    ) -> None:
        provider, model = model_of(metadata, kwargs)
        provider = self._provider or provider
        opts = WrapOptions(_name(serialized, kwargs, "llm"), self._estimate, model=model or None)
        held = self._start(run_id, parent_run_id, CallKind.LLM, opts)
        held.annotate(request_facts(held.capture, provider, model, sent))
        usage = Usage(provider, model) if provider and model else None  # unpriceable: the estimate
        self._keep(run_id, held, usage)

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
        sent = [
            [{"role": getattr(m, "type", ""), "content": getattr(m, "content", m)} for m in b]
            for b in messages
        ]
        self._llm_start(
            serialized, run_id, parent_run_id, metadata, kwargs, sent=sent[0] if len(sent) == 1 else sent
        )

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
        self._llm_start(serialized, run_id, parent_run_id, metadata, kwargs, sent=prompts)

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        opened = self._take(run_id)
        if opened is None:
            return
        held, usage = opened
        counted = usage or Usage("", "")
        usage_of(response, counted)
        replies = _replies(response, counted)
        held.annotate(response_facts(held.capture, counted, replies if held.capture is not None else None))
        if usage is not None:
            charge(usage, self._estimate, self._overrides, held.report)
        elif counted.seen:  # tokens without a price: recorded, charged the estimate
            held.report(self._estimate, counted.total_input(), counted.output_tokens)
        self._succeed(held)

    def on_llm_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._fail(run_id, error)

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
        opts = WrapOptions(_name(serialized, kwargs, "tool"), self._estimate)
        held = self._start(run_id, parent_run_id, CallKind.TOOL, opts)
        self._keep(run_id, held, None)

    def on_tool_end(
        self, output: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        opened = self._take(run_id)
        if opened is not None:
            self._succeed(opened[0])

    def on_tool_error(
        self, error: BaseException, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        self._fail(run_id, error)


def _halted(decision: Decision, held: Held) -> ChainHalted:
    return held.halted(decision)


class _InstrumentedHandler(ChainwardenCallbackHandler):
    """The handler ``chainwarden.instrument()`` adds to every LangChain run (docs/integrations.md, "One
    line: instrument()"): a run inside an ``ExecutionContext`` is a contained call of it, any other is
    recorded into ``chainwarden.default_recorder()``."""

    def __init__(self, settings: Callable[[], Recording | None]) -> None:
        self._settings = settings
        self._setup(None, 0.0, None)

    def _start(self, run_id: UUID, parent_run_id: UUID | None, kind: CallKind, opts: WrapOptions) -> Held:
        settings = self._settings()
        if settings is not None:  # the settings of the latest instrument() call
            self._estimate, self._overrides = settings.estimate, settings.overrides
        parent = self._parent(parent_run_id)
        ctx = current_context()
        if ctx is not None:
            same = isinstance(parent, HeldCall) and parent.chain is ctx._s
            held_opts = WrapOptions(opts.operation_name, self._estimate, model=opts.model)
            return open_call(ctx, kind, held_opts, parent.node if same and parent is not None else None)  # type: ignore[arg-type]
        return GraphCall(
            default_recorder(),
            "llm" if kind == CallKind.LLM else "tool",
            opts.operation_name,
            opts.model,
            capture=settings.capture if settings is not None else None,
            parent=parent.node_id if isinstance(parent, GraphCall) else None,
        )


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
