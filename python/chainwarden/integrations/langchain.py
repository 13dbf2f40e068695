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
from typing import TYPE_CHECKING, Any
from uuid import UUID

from chainwarden._core import CallKind
from chainwarden._extras import require
from chainwarden.containment._blocks import ChainHalted
from chainwarden.containment._held import HeldCall, open_call
from chainwarden.containment.context import ExecutionContext
from chainwarden.containment.types import WrapOptions
from chainwarden.integrations._streams import settle_failure
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
        if provider is not None and (not isinstance(provider, str) or not provider):
            raise TypeError(f"provider must be a non-empty str or None, got {provider!r}")
        self._estimate = WrapOptions(cost_estimate_hint=cost_estimate_hint).cost_estimate_hint
        try:
            table = _overrides(price_overrides)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"price_overrides: {exc}") from None
        super().__init__()
        self.ctx = ctx
        self._provider = provider
        self._overrides = table or None
        self._lock = threading.Lock()
        self._open: dict[UUID, tuple[HeldCall, Usage | None]] = {}

    # -- bookkeeping -----------------------------------------------------------------------------------

    def _start(self, run_id: UUID, parent_run_id: UUID | None, kind: CallKind, opts: WrapOptions) -> HeldCall:
        with self._lock:
            parent = self._open.get(parent_run_id) if parent_run_id is not None else None
        parent_node = parent[0].node if parent is not None else None
        return open_call(self.ctx, kind, opts, parent_node)  # ChainHalted when refused

    def _keep(self, run_id: UUID, held: HeldCall, usage: Usage | None) -> None:
        with self._lock:
            self._open[run_id] = (held, usage)

    def _take(self, run_id: UUID) -> tuple[HeldCall, Usage | None] | None:
        with self._lock:
            return self._open.pop(run_id, None)

    def _succeed(self, held: HeldCall) -> None:
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
    ) -> None:
        provider, model = model_of(metadata, kwargs)
        provider = self._provider or provider
        opts = WrapOptions(_name(serialized, kwargs, "llm"), self._estimate, model=model or None)
        held = self._start(run_id, parent_run_id, CallKind.LLM, opts)
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
        self._llm_start(serialized, run_id, parent_run_id, metadata, kwargs)

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
        self._llm_start(serialized, run_id, parent_run_id, metadata, kwargs)

    def on_llm_end(
        self, response: Any, *, run_id: UUID, parent_run_id: UUID | None = None, **kwargs: Any
    ) -> None:
        opened = self._take(run_id)
        if opened is None:
            return
        held, usage = opened
        counted = usage or Usage("", "")
        usage_of(response, counted)
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


def _halted(decision: Decision, held: HeldCall) -> ChainHalted:
    return held.halted(decision)
