"""What an in-process graph function works with: run identity, event emission and contained LLM calls."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import logging
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from chainwarden._contexts import decision_name
from chainwarden.billing import UsageFact
from chainwarden.billing.facts import check_usage_fields, encode_usage_raw
from chainwarden.errors import ChainwardenError, InvalidArgument, InvalidArgumentType
from chainwarden.integrations.providers import note_usage_missing
from chainwarden.runtime.containment_port import (
    Containment,
    LlmCallGuard,
    refusal_is_timeout,
    stop_reason_of,
)
from chainwarden.runtime.events import AiEvent, Done, Error, ErrorCode, UsageReport
from chainwarden.runtime.port import GraphRunRequest

SOURCE_SYSTEM = "inproc"

logger = logging.getLogger("chainwarden.runtime")


@dataclass(frozen=True)
class LlmResult:
    """What a model client returns for one call; `usage_unit_id` is the provider's call id when it has one."""

    content: str
    model: str | None = None
    provider: str | None = None
    usage_unit_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    cost_usd: float | Decimal | None = None
    usage_raw: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        # Checked here, where the client adapter builds the result, with the ledger's own limits
        # (docs/design.md §26): a value the ledger would refuse must not surface only once the usage,
        # which already happened, is being billed.
        if not isinstance(self.content, str):
            raise InvalidArgumentType(
                f"content must be a str, got {type(self.content).__name__}", argument="content"
            )
        check_usage_fields(
            usage_unit_id=self.usage_unit_id,
            provider=self.provider,
            model=self.model,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
            cache_read_tokens=self.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens,
            cost_usd=self.cost_usd,
        )
        encode_usage_raw(self.usage_raw)

    @property
    def usage_missing(self) -> bool:
        """True when the provider reported nothing this call used: no token count and no cost."""
        counts = (self.input_tokens, self.output_tokens, self.cache_read_tokens, self.cache_write_tokens)
        return self.cost_usd is None and all(n is None for n in counts)


class LlmCallFailed(ChainwardenError):
    """An LLM call that failed after its provider had reported usage (a stream cut after its first
    event): raise it ``from`` the error, with what was used as ``result``. The run bills that usage once
    and counts it against its cost ceiling before any retry; the call counts as failed
    (docs/design.md §30, docs/runtime.md "Failed calls that used tokens")."""

    def __init__(self, result: LlmResult, cause: BaseException) -> None:
        if not isinstance(result, LlmResult):
            raise InvalidArgumentType(
                f"result must be an LlmResult, got {type(result).__name__}", argument="result"
            )
        if not isinstance(cause, BaseException):
            raise InvalidArgumentType(
                f"cause must be an exception, got {type(cause).__name__}", argument="cause"
            )
        super().__init__(f"LLM call failed after using tokens: {type(cause).__name__}: {cause}")
        self.result = result
        self.cause = cause


class LlmCallRefused(ChainwardenError):
    """The ExecutionContext did not let the call through (limit reached, breaker open, retries spent)."""

    def __init__(
        self,
        decision: str,
        cause: BaseException | None = None,
        *,
        timed_out: bool = False,
        stop_reason: str | None = None,
    ) -> None:
        reason = f" ({stop_reason})" if stop_reason else ""
        super().__init__(f"LLM call refused by containment: {decision}{reason}")
        self.decision = decision
        self.cause = cause
        self.timed_out = timed_out
        #: The containment's stop reason (`budget_exceeded`, `insufficient_credits`, ...), when it said one.
        self.stop_reason = stop_reason

    @property
    def code(self) -> ErrorCode:
        """The run's Error code when the graph lets this propagate."""
        if self.stop_reason == "insufficient_credits":
            return "insufficient_credits"
        return "timeout" if self.timed_out else "aborted"


class RunContext:
    """What a graph function gets: run identity, event emission and contained LLM calls."""

    def __init__(
        self,
        req: GraphRunRequest,
        run_id: str,
        guard: LlmCallGuard,
        containment: Containment,
        emit: Callable[[AiEvent], None],
        *,
        llm_threads: concurrent.futures.Executor | None = None,
        source: str = SOURCE_SYSTEM,
    ):
        self.request = req
        self.source = source
        self.run_id = run_id
        self.attempt = req.attempt
        self.guard = guard
        self._containment = containment
        self._emit = emit
        self._llm_threads = llm_threads
        self._llm_calls = 0

    def emit(self, event: AiEvent) -> None:
        """Streams an event to the run's subscribers (Done/Error are the executor's, not the graph's)."""
        if isinstance(event, Done | Error | UsageReport):
            raise InvalidArgumentType(
                f"a graph may not emit {type(event).__name__}; the executor does", argument="event"
            )
        self._emit(event)

    async def call_llm(
        self,
        call: Callable[[], Awaitable[LlmResult]],
        *,
        operation_name: str = "llm",
        cost_estimate_hint: float = 0.0,
    ) -> LlmResult:
        """Runs one LLM call under the run's ExecutionContext and reports its usage.

        Limits are checked before the provider is called; a failed call is retried while the context says
        RETRY.
        """
        options = self._containment.wrap_options(operation_name, cost_estimate_hint)
        while True:
            outcome: list[LlmResult] = []
            failure: list[BaseException] = []
            decision = await self._wrap(call, options, outcome, failure)
            name = decision_name(decision)
            if name == "ALLOW" and outcome:
                return self._report(outcome[0])
            if name == "RETRY":
                continue
            raise LlmCallRefused(
                name,
                failure[0] if failure else None,
                timed_out=refusal_is_timeout(self.guard),
                stop_reason=stop_reason_of(self.guard),
            )

    async def _wrap(
        self,
        call: Callable[[], Awaitable[LlmResult]],
        options: Any,
        outcome: list[LlmResult],
        failure: list[BaseException],
    ) -> Any:
        """One attempt under the context; the result lands in `outcome`, an exception in `failure`."""
        wrap_async = getattr(self.guard, "wrap_llm_call_async", None)
        if wrap_async is not None:
            # chainwarden's ExecutionContext runs the coroutine in a task it cancels on abort or timeout.
            async def attempt() -> None:
                try:
                    result = await _call(call)
                except LlmCallFailed as used:
                    failure.append(self._used_then_failed(used, options))
                    raise used.cause from None
                except BaseException as error:
                    failure.append(error)
                    raise
                outcome.append(result)
                self._charge(result)

            return await wrap_async(attempt, options)
        # A context with only the synchronous API holds a thread for the whole provider call while the
        # coroutine runs on this loop.
        loop = asyncio.get_running_loop()
        bridged = _BridgedCall(
            call,
            loop,
            outcome,
            failure,
            self._charge,
            used_then_failed=lambda used: self._used_then_failed(used, options),
        )
        # A copied context keeps the containment's ContextVar nesting per call, as to_thread does.
        wrapped = functools.partial(
            contextvars.copy_context().run, self.guard.wrap_llm_call, bridged.invoke, options
        )
        try:
            return await loop.run_in_executor(self._llm_threads, wrapped)
        except asyncio.CancelledError:
            bridged.cancel()
            raise

    async def call_tool(self, name: str, call: Callable[[], Awaitable[Any]] | Callable[[], Any]) -> Any:
        """Runs one tool call under the run's ExecutionContext and returns what the tool returned.

        A tool that raises is not retried: its exception propagates (the caller decides, e.g. tells the
        model). A call the context refuses before it runs raises ``LlmCallRefused``."""
        if not isinstance(name, str) or not name:
            raise InvalidArgument(f"name must be a non-empty str, got {name!r}", argument="name")
        options = self._containment.wrap_options(name, 0.0)
        outcome: list[Any] = []
        failure: list[BaseException] = []

        async def attempt() -> None:
            try:
                result = call()
                if asyncio.iscoroutine(result):
                    result = await result
            except BaseException as error:
                failure.append(error)
                raise
            outcome.append(result)

        wrap_async = getattr(self.guard, "wrap_tool_call_async", None)
        if wrap_async is not None:
            decision = await wrap_async(attempt, options)
        else:
            loop = asyncio.get_running_loop()

            def run_in_thread() -> None:
                asyncio.run_coroutine_threadsafe(attempt(), loop).result()

            wrapped = functools.partial(
                contextvars.copy_context().run, self.guard.wrap_tool_call, run_in_thread, options
            )
            decision = await loop.run_in_executor(self._llm_threads, wrapped)
        if failure and not isinstance(failure[0], asyncio.CancelledError):
            raise failure[0]
        if decision_name(decision) == "ALLOW" and outcome:
            return outcome[0]
        raise LlmCallRefused(
            decision_name(decision),
            timed_out=refusal_is_timeout(self.guard),
            stop_reason=stop_reason_of(self.guard),
        )

    def _used_then_failed(self, used: LlmCallFailed, options: Any) -> BaseException:
        """Inside the wrapped call that failed after using tokens: charges the call what it used (its
        estimate when the provider said nothing of it), bills it now, once, and returns the error the
        call fails with (docs/design.md §30)."""
        result = used.result
        estimate = getattr(options, "cost_estimate_hint", 0.0)
        self._charge(result, fallback=estimate)
        self._report(result)
        return used.cause

    def _charge(self, result: LlmResult, *, fallback: float | None = None) -> None:
        """Inside the wrapped call: the context settles it at what the ledger bills, so the run's
        cost ceiling sees real cost (docs/design.md §20). A call whose provider reported no usage is
        flagged ``usage_missing`` on its node and charged ``fallback`` (else its estimate, §30)."""
        if result.usage_missing:
            self._containment.flag_call("usage_missing")
        cost = result.cost_usd if result.cost_usd is not None else fallback
        try:
            self._containment.report_cost(cost)
        except (TypeError, ValueError, RuntimeError):
            # The usage happened and is billed whatever the context thinks of the value; the call
            # is charged its estimate instead.
            logger.warning(
                "run %s: LLM cost %r not counted by containment", self.run_id, result.cost_usd, exc_info=True
            )

    def report_usage(self, result: LlmResult, *, usage_missing_noted: bool = False) -> LlmResult:
        """Reports the usage of an LLM call that was contained elsewhere (a framework's callbacks, not
        ``call_llm``): one ``UsageReport``, ``usage_unit_id`` as for ``call_llm``. ``usage_missing_noted``:
        whoever contained the call already logged and counted that it reported no usage."""
        if not isinstance(result, LlmResult):
            raise InvalidArgumentType(
                f"result must be an LlmResult, got {type(result).__name__}", argument="result"
            )
        return self._report(result, usage_missing_noted=usage_missing_noted)

    def _report(self, result: LlmResult, *, usage_missing_noted: bool = False) -> LlmResult:
        index = self._llm_calls
        self._llm_calls += 1
        req = self.request
        if result.usage_missing and not usage_missing_noted:
            note_usage_missing("runtime", f"{self.run_id}/{index}")
        fact = UsageFact(
            run_id=self.run_id,
            attempt=req.attempt,
            source=self.source,
            billing_account_id=req.billing_account_id,
            virtual_key_id=req.virtual_key_id,
            usage_unit_id=result.usage_unit_id,
            provider=result.provider,
            model=result.model or req.model,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            cache_read_tokens=result.cache_read_tokens,
            cache_write_tokens=result.cache_write_tokens,
            cost_usd=result.cost_usd,
            usage_raw=result.usage_raw,
        )
        # The provider's id when there is one; otherwise the billing resolves the fact once, at the report's
        # position in the run (seed 004's MISSING:{run_id}/{index}: the same on a replay, so a replay never
        # bills twice), logged at ERROR and counted (docs/design.md §17, §30).
        self._emit(UsageReport(fact, usage_missing=result.usage_missing))
        return result


class _BridgedCall:
    """One attempt of an async LLM call, invoked from the context's worker thread and run on the loop."""

    def __init__(
        self,
        call: Callable[[], Awaitable[LlmResult]],
        loop: asyncio.AbstractEventLoop,
        outcome: list[LlmResult],
        failure: list[BaseException],
        charge: Callable[[LlmResult], None],
        *,
        used_then_failed: Callable[[LlmCallFailed], BaseException],
    ) -> None:
        self._call = call
        self._charge = charge
        self._used_then_failed = used_then_failed
        self._loop = loop
        self._future: concurrent.futures.Future[LlmResult] | None = None
        self._lock = threading.Lock()
        self._cancelled = False
        self.outcome = outcome
        self.failure = failure

    def invoke(self) -> None:
        with self._lock:
            # The awaiting task may have been cancelled before this thread got here: start nothing then.
            if self._cancelled:
                raise asyncio.CancelledError
            future = self._future = asyncio.run_coroutine_threadsafe(_call(self._call), self._loop)
        try:
            result = future.result()
        except LlmCallFailed as used:
            self.failure.append(self._used_then_failed(used))
            raise used.cause from None
        except BaseException as error:
            self.failure.append(error)
            raise
        self.outcome.append(result)
        self._charge(result)

    def cancel(self) -> None:
        with self._lock:
            self._cancelled = True
            if self._future is not None:
                self._future.cancel()


async def _call(call: Callable[[], Awaitable[LlmResult]]) -> LlmResult:
    result = await call()
    if not isinstance(result, LlmResult):
        raise InvalidArgumentType(f"an LLM call must return LlmResult, got {type(result).__name__}")
    return result
