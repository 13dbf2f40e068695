"""The executor port's contract as a reusable check (docs/runtime.md "Checking an executor"):
`await check_executor(executor, request)` runs the request through `executor.run_graph` and raises
`ContractViolation` (an `AssertionError`, so any test runner reports it) naming every rule broken:

- `run_graph` returns a `GraphRunResult` at once (not a coroutine), without starting to stream;
- the stream yields only `AiEvent`s, exactly one `Done`, last; at most one `Error`, right before it;
- `final` resolves exactly once (every await gives the same `GraphFinal`) and never raises; it names the
  request's run; `final.ok` agrees with the stream (no `Error`), and a failed final has an error code;
- every `UsageReport` carries a fact of the request's run, attempt, account and virtual key; no two facts of
  the run share an idempotency key; a fact without `usage_unit_id` is reported (it is billed under the
  `MISSING:` fallback, an adapter bug: docs/design.md §17);
- with `replay=True` (deterministic executors: a fake provider, a recorded stream) a second run of the same
  request reports the same keys: a replay bills nothing new;
- cancellation: closing the stream after its first event returns promptly, and `final` still resolves.

Everything is bounded by `timeout_s`: an executor that hangs is a violation, never a hung test.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable
from dataclasses import dataclass, field
from typing import Any

from chainwarden.billing import UsageFact
from chainwarden.billing.facts import Billable
from chainwarden.errors import ChainwardenError, InvalidArgument, InvalidArgumentType
from chainwarden.runtime.events import AI_EVENT_TYPES, AiEvent, Done, Error, UsageReport
from chainwarden.runtime.port import GraphExecutor, GraphFinal, GraphRunRequest, GraphRunResult

__all__ = ["ContractViolation", "ExecutorCheck", "check_executor"]


class ContractViolation(ChainwardenError, AssertionError):
    """The executor broke the port's contract; `problems` lists every rule, one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("the executor breaks the port's contract:\n- " + "\n- ".join(problems))
        self.problems = problems


@dataclass
class ExecutorCheck:
    """What one checked run showed: its events, final, usage facts (their keys) and warnings."""

    events: list[AiEvent] = field(default_factory=list)
    final: GraphFinal | None = None
    facts: list[UsageFact] = field(default_factory=list)
    keys: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


async def check_executor(
    executor: GraphExecutor, request: GraphRunRequest, *, replay: bool = False, timeout_s: float = 30.0
) -> ExecutorCheck:
    """Checks `executor` against the port's contract with `request` (see the module); returns what the run
    showed, or raises `ContractViolation`."""
    if not callable(getattr(executor, "run_graph", None)):
        raise InvalidArgumentType(
            f"executor has no run_graph method: {type(executor).__name__}", argument="executor"
        )
    if not isinstance(request, GraphRunRequest):
        raise InvalidArgumentType(
            f"request must be a GraphRunRequest, got {type(request).__name__}", argument="request"
        )
    if request.run_id is None:
        raise InvalidArgument(
            "request.run_id must be given: the check compares every fact with it", argument="request.run_id"
        )
    problems: list[str] = []
    check = await _one_run(executor, request, problems, timeout_s)
    if replay and not problems:
        again = await _one_run(executor, request, problems, timeout_s)
        if sorted(again.keys) != sorted(check.keys):
            problems.append(
                f"a replay of the same request reported other keys ({sorted(again.keys)} after "
                f"{sorted(check.keys)}): it would be billed again"
            )
    await _cancellation(executor, request, problems, timeout_s)
    if problems:
        raise ContractViolation(problems)
    return check


def _started(executor: GraphExecutor, request: GraphRunRequest, problems: list[str]) -> GraphRunResult | None:
    try:
        result = executor.run_graph(request)
    except Exception as error:
        problems.append(f"run_graph raised {type(error).__name__}: {error}")
        return None
    if inspect.isawaitable(result) and not isinstance(result, GraphRunResult):
        problems.append("run_graph returned an awaitable: it must return a GraphRunResult at once")
        close = getattr(result, "close", None)
        if callable(close):
            close()
        return None
    if not isinstance(result, GraphRunResult):
        problems.append(f"run_graph returned a {type(result).__name__}, not a GraphRunResult")
        return None
    if not hasattr(result.stream, "__anext__"):
        problems.append("result.stream is not an async iterator")
        return None
    if not inspect.isawaitable(result.final):
        problems.append("result.final is not awaitable")
        return None
    return result


async def _one_run(
    executor: GraphExecutor, request: GraphRunRequest, problems: list[str], timeout_s: float
) -> ExecutorCheck:
    check = ExecutorCheck()
    result = _started(executor, request, problems)
    if result is None:
        return check
    try:
        await asyncio.wait_for(_drain(result.stream, check), timeout_s)
    except TimeoutError:
        problems.append(f"the stream did not end within {timeout_s:g} s")
        await _close(result.stream)
        return check
    except Exception as error:
        problems.append(
            f"the stream raised {type(error).__name__}: {error} (it must end with Error and Done)"
        )
        return check
    _check_events(check.events, problems)
    finals = []
    for _ in range(2):
        try:
            finals.append(await asyncio.wait_for(_awaited(result.final), timeout_s))
        except TimeoutError:
            problems.append(f"final did not resolve within {timeout_s:g} s of the stream's end")
            return check
        except Exception as error:
            problems.append(f"awaiting final raised {type(error).__name__}: {error}")
            return check
    final = check.final = finals[0]
    if not isinstance(final, GraphFinal):
        problems.append(f"final resolved to a {type(final).__name__}, not a GraphFinal")
        return check
    if finals[1] is not final:
        problems.append("final resolved to two different values: it must resolve exactly once")
    if final.run_id != request.run_id:
        problems.append(f"final names run {final.run_id!r}, not the request's {request.run_id!r}")
    failed = any(isinstance(e, Error) for e in check.events)
    if final.ok == failed:
        problems.append(f"final.ok is {final.ok} but the stream {'has' if failed else 'has no'} Error")
    if not final.ok and not final.error:
        problems.append("a failed final has no error code")
    _check_facts(request, check, problems)
    return check


async def _drain(stream: AsyncIterator[Any], check: ExecutorCheck) -> None:
    async for event in stream:
        check.events.append(event)


async def _awaited(final: Awaitable[GraphFinal]) -> GraphFinal:
    return await final


def _check_events(events: list[Any], problems: list[str]) -> None:
    strangers = [type(e).__name__ for e in events if not isinstance(e, AI_EVENT_TYPES)]
    if strangers:
        problems.append(f"the stream yielded objects that are not AiEvents: {strangers}")
    dones = [i for i, e in enumerate(events) if isinstance(e, Done)]
    if len(dones) != 1:
        problems.append(f"the stream has {len(dones)} Done events; exactly one is required")
    elif dones[0] != len(events) - 1:
        problems.append(f"Done is event {dones[0] + 1} of {len(events)}: it must be the last")
    errors = [i for i, e in enumerate(events) if isinstance(e, Error)]
    if len(errors) > 1:
        problems.append(f"the stream has {len(errors)} Error events; at most one")
    elif errors and dones and errors[0] != dones[0] - 1:
        problems.append("Error must come right before Done")


def _check_facts(request: GraphRunRequest, check: ExecutorCheck, problems: list[str]) -> None:
    index = 0
    for event in check.events:
        if not isinstance(event, UsageReport):
            continue
        fact = event.fact
        check.facts.append(fact)
        expected = {
            "run_id": request.run_id,
            "attempt": request.attempt,
            "billing_account_id": request.billing_account_id,
            "virtual_key_id": request.virtual_key_id,
        }
        for name, value in expected.items():
            if getattr(fact, name) != value:
                problems.append(
                    f"usage fact {index}: {name} is {getattr(fact, name)!r}, not the request's {value!r}"
                )
        if fact.usage_unit_id is None:
            check.warnings.append(
                f"usage fact {index} has no usage_unit_id: billed under MISSING:{request.run_id}/{index}"
            )
        check.keys.append(Billable.resolve(fact, index).key)
        index += 1
    repeated = sorted({k for k in check.keys if check.keys.count(k) > 1})
    if repeated:
        problems.append(f"two usage facts of the run share a key (one would not be billed): {repeated}")


async def _cancellation(
    executor: GraphExecutor, request: GraphRunRequest, problems: list[str], timeout_s: float
) -> None:
    result = _started(executor, request, problems)
    if result is None:
        return
    try:
        await asyncio.wait_for(result.stream.__anext__(), timeout_s)
    except StopAsyncIteration:
        problems.append("the stream ended without any event (Done is required)")
    except TimeoutError:
        problems.append(f"the stream yielded nothing within {timeout_s:g} s")
    except Exception as error:
        problems.append(f"the stream raised {type(error).__name__}: {error}")
    try:
        await asyncio.wait_for(_close(result.stream), timeout_s)
    except TimeoutError:
        problems.append(f"closing the stream (cancelling the run) did not return within {timeout_s:g} s")
        return
    except Exception as error:
        problems.append(f"closing the stream raised {type(error).__name__}: {error}")
    try:
        final = await asyncio.wait_for(_awaited(result.final), timeout_s)
    except TimeoutError:
        problems.append(f"after a cancel, final did not resolve within {timeout_s:g} s")
        return
    except Exception as error:
        problems.append(f"after a cancel, awaiting final raised {type(error).__name__}: {error}")
        return
    if not isinstance(final, GraphFinal):
        problems.append(f"after a cancel, final resolved to a {type(final).__name__}")


async def _close(stream: Any) -> None:
    close = getattr(stream, "aclose", None)
    if close is not None:
        await close()
