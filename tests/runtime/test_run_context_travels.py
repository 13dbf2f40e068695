"""A run's context (user, session, tags, attributes) given on its request reaches its ExecutionContext's graph
and its run record in the ledger; bad context is refused when the request is built."""

from __future__ import annotations

import asyncio
import math
from decimal import Decimal
from typing import Any

import pytest

from chainwarden.billing import SqliteLedger
from chainwarden.runtime import AiRuntime, GraphRunRequest, InProcGraphExecutor, LlmResult, RunContext


def _request(**context: Any) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id="inproc:agent",
        messages=[],
        model="sim",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id="run-ctx",
        **context,
    )


def test_the_context_reaches_the_runs_graph_and_its_record() -> None:
    roots: list[dict[str, Any]] = []

    async def agent(ctx: RunContext) -> str:
        async def call() -> LlmResult:
            return LlmResult(
                content="hi", usage_unit_id="c1", input_tokens=3, output_tokens=1, cost_usd=Decimal("0.001")
            )

        await ctx.call_llm(call)
        graph = ctx.guard.get_graph_snapshot()  # type: ignore[attr-defined]
        roots.append(graph["nodes"][graph["root_id"]]["metadata"])
        return "done"

    async def main() -> Any:
        with SqliteLedger() as ledger:
            runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger)
            req = _request(user_id="u-1", session_id="s-1", tags=["beta"], attributes={"plan": "pro"})
            async with runtime.run(req) as run:
                await run.final
                await run.billing_settled()
            return ledger.runs()[0]

    record = asyncio.run(main())
    context = {"user_id": "u-1", "session_id": "s-1", "tags": ["beta"], "attributes": {"plan": "pro"}}
    assert record.context == context and record.status == "ok"
    assert roots == [{"request_id": "run-ctx", **context}]


@pytest.mark.parametrize(
    ("context", "error"),
    [
        ({"user_id": 7}, TypeError),
        ({"tags": "beta"}, TypeError),
        ({"attributes": {"x": math.inf}}, ValueError),
    ],
)
def test_bad_context_is_refused_naming_it(context: dict[str, Any], error: type[Exception]) -> None:
    with pytest.raises(error, match=next(iter(context))):
        _request(**context)


def test_a_request_without_context_has_none() -> None:
    assert _request().context() is None


def test_a_retry_keeps_the_runs_context() -> None:
    outcomes = iter([RuntimeError("the first attempt breaks"), None])

    async def agent(ctx: RunContext) -> str:
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome
        return "fine"

    async def main() -> Any:
        with SqliteLedger() as ledger:
            runtime = AiRuntime({"inproc": InProcGraphExecutor(agent)}, ledger)
            async with runtime.run(_request(user_id="u-1", tags={"env": "prod"})) as run:
                assert not (await run.final).ok
            retried = runtime.retry("run-ctx")
            assert (await retried.final).ok
            runtime.close()
            return retried.request, ledger.runs(run_id="run-ctx")

    request, records = asyncio.run(main())
    assert (request.user_id, request.tags) == ("u-1", {"env": "prod"})
    assert [(r.attempt, r.context) for r in records] == [
        (1, {"user_id": "u-1", "tags": {"env": "prod"}}),
        (0, {"user_id": "u-1", "tags": {"env": "prod"}}),
    ]
