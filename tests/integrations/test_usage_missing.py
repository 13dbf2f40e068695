"""A call that ends with no usage at all is never a silent $0 (docs/design.md §30): it is flagged
``usage_missing`` on its node and on the runtime's report, logged at WARNING with structured fields,
counted in ``METRICS`` (readable through an OpenTelemetry meter), charged its estimate, and billed under
seed 004's ``MISSING:{run_id}/{call_index}`` unit id on every executor, with an ERROR log."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models.chat_models import LangSmithParams
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_openai import ChatOpenAI
from langgraph.graph import START, MessagesState, StateGraph
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from chainwarden.billing import Pricing, SqliteLedger
from chainwarden.billing.metrics import METRICS, OTEL_ATTRIBUTE, OTEL_INSTRUMENT
from chainwarden.containment import ExecutionConfig, ExecutionContext
from chainwarden.integrations.langchain import ChainwardenCallbackHandler
from chainwarden.pricing import price_usage
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    GraphRunRequest,
    GraphRunResult,
    InProcGraphExecutor,
    LangGraphExecutor,
    LlmResult,
    RunContext,
    UsageReport,
)

from .fake_provider import FakeProvider, Reply

pytestmark = pytest.mark.timeout(60)


def context(max_cost_usd: float = 10.0) -> ExecutionContext:
    return ExecutionContext(ExecutionConfig(max_cost_usd=max_cost_usd, max_steps=50, max_retries_total=3))


def llm_nodes(ctx: ExecutionContext) -> list[dict[str, Any]]:
    return [n for n in ctx.get_graph_snapshot()["nodes"].values() if n["kind"] == "llm"]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "ledger.sqlite3") as opened:
        yield opened


def records(caplog: pytest.LogCaptureFixture, metric: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if getattr(r, "chainwarden_metric", None) == metric]


def test_chat_openai_streaming_without_stream_usage_is_flagged_and_charged(
    fake_provider: FakeProvider, caplog: pytest.LogCaptureFixture
) -> None:
    # langchain-openai asks for stream usage only against api.openai.com: against any other base URL its
    # default stream_usage leaves the stream without usage. Today: no tokens, $0.00, no warning.
    fake_provider.default = Reply(text="Bonjour", input_tokens=2_000, output_tokens=300)
    ctx = context()
    handler = ChainwardenCallbackHandler(ctx)
    model = ChatOpenAI(
        model="gpt-4o", base_url=fake_provider.openai_base_url, api_key="k", streaming=True, max_tokens=400
    )
    before = METRICS.get("usage_missing")
    caplog.set_level(logging.WARNING, logger="chainwarden")
    reply = model.invoke("Say hello in French.", config={"callbacks": [handler]})
    assert reply.content == "Bonjour"
    assert "stream_options" not in fake_provider.requests[0].body  # the stream carried no usage
    [node] = llm_nodes(ctx)
    assert (node["status"], node["model"], node["tokens_in"]) == ("success", "gpt-4o", None)
    assert node["metadata"]["usage_missing"] is True and "cache_read_tokens" not in node["metadata"]
    # Charged its worst case: the prompt bound and max_tokens=400, priced as gpt-4o.
    worst = price_usage(provider="openai", model="gpt-4o", input_tokens=1, output_tokens=400)
    assert worst is not None and node["cost_usd"] >= float(worst) > 0
    assert METRICS.get("usage_missing") == before + 1
    [warning] = records(caplog, "usage_missing")
    assert warning.levelno == logging.WARNING and warning.name == "chainwarden.integrations"


def test_the_counters_are_read_through_an_opentelemetry_meter() -> None:
    reader = InMemoryMetricReader()
    METRICS.observe_with(MeterProvider(metric_readers=[reader]).get_meter("test"))
    METRICS.increment("usage_missing")
    expected = METRICS.get("usage_missing")
    points = {
        point.attributes[OTEL_ATTRIBUTE]: point.value
        for resource in reader.get_metrics_data().resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        if metric.name == OTEL_INSTRUMENT
        for point in metric.data.data_points
    }
    assert points["usage_missing"] == expected


# -- the executors: MISSING:{run_id}/{call_index} with an ERROR log and a metric ---------------------------


class Tap:
    """Passes an executor's events on, keeping its usage reports (which no UI subscriber sees)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.reports: list[UsageReport] = []

    def run_graph(self, req: GraphRunRequest) -> GraphRunResult:
        result = self.inner.run_graph(req)

        async def stream() -> AsyncIterator[AiEvent]:
            async for event in result.stream:
                if isinstance(event, UsageReport):
                    self.reports.append(event)
                yield event

        return GraphRunResult(stream=stream(), final=result.final)


async def run(executors: dict[str, Any], ledger: SqliteLedger, req: GraphRunRequest) -> list[UsageReport]:
    [(name, executor)] = executors.items()
    tap = Tap(executor)
    runtime = AiRuntime({name: tap}, ledger, Pricing(markup=1.0))
    async with runtime.run(req) as handle:
        final = await handle.final
        await handle.billing_settled()
    assert final.ok, final
    return tap.reports


def request(graph_id: str, run_id: str) -> GraphRunRequest:
    return GraphRunRequest(
        graph_id=graph_id,
        messages=[{"role": "user", "content": "hi"}],
        model="m1",
        billing_account_id="acct-1",
        virtual_key_id="vk-1",
        run_id=run_id,
    )


async def test_in_process_calls_without_an_id_or_usage(
    ledger: SqliteLedger, caplog: pytest.LogCaptureFixture
) -> None:
    async def graph(ctx: RunContext) -> str:
        async def no_id() -> LlmResult:
            return LlmResult(content="a", input_tokens=10, output_tokens=2)

        async def nothing() -> LlmResult:
            return LlmResult(content="b")  # neither an id nor any usage

        await ctx.call_llm(no_id, cost_estimate_hint=0.01)
        await ctx.call_llm(nothing, cost_estimate_hint=0.02)
        return "done"

    missing_ids = METRICS.get("billing.missing_usage_unit_id")
    usage_missing = METRICS.get("usage_missing")
    caplog.set_level(logging.WARNING, logger="chainwarden")
    reports = await run({"inproc": InProcGraphExecutor(graph)}, ledger, request("inproc:agent", "run-m"))
    # Reported as the provider gave them; the run's billing resolves each once (docs/design.md §17).
    assert [r.fact.usage_unit_id for r in reports] == [None, None]
    assert [r.usage_missing for r in reports] == [False, True]
    assert [r.source_reference for r in ledger.receipts(run_id="run-m")] == [
        "run-m/0/MISSING:run-m/0",
        "run-m/0/MISSING:run-m/1",
    ]
    assert METRICS.get("billing.missing_usage_unit_id") == missing_ids + 2
    assert METRICS.get("usage_missing") == usage_missing + 1
    errors = records(caplog, "billing.missing_usage_unit_id")
    assert [(r.levelno, r.chainwarden_run_id, r.chainwarden_call_index) for r in errors] == [  # type: ignore[attr-defined]
        (logging.ERROR, "run-m", 0),
        (logging.ERROR, "run-m", 1),
    ]
    assert len(records(caplog, "usage_missing")) == 1


class _Model(FakeMessagesListChatModel):
    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        params = super()._get_ls_params(stop=stop, **kwargs)
        params["ls_provider"], params["ls_model_name"] = "acme", "m1"
        return params


async def test_langgraph_calls_without_an_id_or_usage(
    ledger: SqliteLedger, caplog: pytest.LogCaptureFixture
) -> None:
    # Neither reply carries a provider id; the second reports no usage at all.
    usage = {"input_tokens": 100, "output_tokens": 10, "total_tokens": 110}
    model = _Model(responses=[AIMessage("one", usage_metadata=usage), AIMessage("two")])

    async def chat(state: MessagesState) -> dict[str, Any]:
        first = await model.ainvoke(state["messages"])
        return {"messages": [first, await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("chat", chat)
    graph.add_edge(START, "chat")
    executor = LangGraphExecutor(
        graph.compile(),
        price_overrides={("acme", "m1"): {"input_mtok": 1, "output_mtok": 2}},
        cost_estimate_hint=0.01,
    )
    usage_missing = METRICS.get("usage_missing")
    caplog.set_level(logging.WARNING, logger="chainwarden")
    reports = await run({"langgraph": executor}, ledger, request("langgraph:chat", "run-g"))
    # Reported as the provider gave them; the run's billing resolves each once (docs/design.md §17).
    assert [r.fact.usage_unit_id for r in reports] == [None, None]
    assert [r.usage_missing for r in reports] == [False, True]
    assert [(r.source_reference, r.input_tokens) for r in ledger.receipts(run_id="run-g")] == [
        ("run-g/0/MISSING:run-g/0", 100),
        ("run-g/0/MISSING:run-g/1", None),
    ]
    assert METRICS.get("usage_missing") == usage_missing + 1  # counted once, by the containment handler
    assert len(records(caplog, "billing.missing_usage_unit_id")) == 2
