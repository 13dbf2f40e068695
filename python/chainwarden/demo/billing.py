"""Demo section: a simulated agent run billed exactly once into a SQLite ledger."""

from __future__ import annotations

import asyncio
import tempfile
from decimal import Decimal
from pathlib import Path
from typing import TextIO

from chainwarden.billing import Pricing, SqliteLedger, usd_to_credits
from chainwarden.runtime import (
    AiEvent,
    AiRuntime,
    GraphRunRequest,
    InProcGraphExecutor,
    LlmResult,
    RunContext,
    TextDelta,
    ToolCallResult,
    ToolCallStart,
)

ACCOUNT = "acct-demo"
# (provider call id, reply, input tokens, output tokens, provider cost in USD): a scripted model, no network.
MODEL_REPLIES = [
    ("chatcmpl-001", "I will look that up.", 812, 24, Decimal("0.0002555")),
    ("chatcmpl-002", "Paris has 2.1 million inhabitants.", 1034, 41, Decimal("0.00031")),
    ("chatcmpl-003", "Answer: about 2.1 million.", 1101, 12, Decimal("0.00001")),
]


async def _agent(ctx: RunContext) -> str:
    replies = iter(MODEL_REPLIES)

    async def model() -> LlmResult:
        unit, text, tokens_in, tokens_out, cost = next(replies)
        return LlmResult(
            content=text,
            model="sim-gpt",
            provider="simulated",
            usage_unit_id=unit,
            input_tokens=tokens_in,
            output_tokens=tokens_out,
            cost_usd=cost,
        )

    plan = await ctx.call_llm(model, operation_name="plan")
    ctx.emit(TextDelta(plan.content))
    ctx.emit(ToolCallStart("tool-1", "population", {"city": "Paris"}))
    ctx.emit(ToolCallResult("tool-1", {"population": 2_102_650}))
    draft = await ctx.call_llm(model, operation_name="draft")
    ctx.emit(TextDelta(draft.content))
    final = await ctx.call_llm(model, operation_name="final")
    return final.content


def _show(event: AiEvent) -> str:
    fields = {k: v for k, v in vars(event).items() if k != "type"}
    return f"{event.type} {fields}" if fields else event.type


async def _bill_runs(ledger: SqliteLedger, out: TextIO) -> None:
    req = GraphRunRequest(
        graph_id="inproc:researcher",
        messages=[{"role": "user", "content": "How many people live in Paris?"}],
        model="sim-gpt",
        billing_account_id=ACCOUNT,
        virtual_key_id="vk-demo",
        run_id="run-demo-1",
    )
    # Closed when done: the runtime owns its outbox's connection and drainer thread.
    with AiRuntime(
        executors={"inproc": InProcGraphExecutor(_agent)}, ledger=ledger, pricing=Pricing(markup=2.0)
    ) as runtime:
        async with runtime.run(req) as run:
            async for event in run.ui_events():
                out.write(f"  ui: {_show(event)}\n")
            final = await run.final
            await run.billing_settled()
        out.write(
            f"final: ok={final.ok} content={final.content!r} "
            f"tokens={final.usage.prompt_tokens}+{final.usage.completion_tokens}\n"
        )
        out.write(f"run-demo-1 billed {len(run.receipts)} receipts\n")
        # A redelivery of the same run (same run_id and attempt) must not bill again.
        async with runtime.run(req) as replay:
            await replay.billing_settled()
    out.write(f"replay of run-demo-1 billed {len(replay.receipts)} new receipts (idempotent)\n")


def _usd(amount: Decimal | None) -> str:
    return "unknown" if amount is None else format(amount.normalize(), "f")


def run(out: TextIO) -> None:
    out.write("== billing ==\n")
    with (
        tempfile.TemporaryDirectory(prefix="chainwarden-demo-") as tmp,
        SqliteLedger(Path(tmp) / "ledger.sqlite3") as ledger,
    ):
        ledger.create_account(ACCOUNT, balance_credits=usd_to_credits(Decimal("0.01")))
        asyncio.run(_bill_runs(ledger, out))
        out.write("receipts (source_system source_reference: credits, user cost after 2.0x markup):\n")
        for r in ledger.receipts():
            out.write(
                f"  {r.source_system} {r.source_reference}: {r.charged_credits} credits, "
                f"${_usd(r.response_cost_usd)} ({r.model}, {r.input_tokens}+{r.output_tokens} tokens)\n"
            )
        out.write("ledger entries:\n")
        for e in ledger.ledger_entries(ACCOUNT):
            out.write(f"  {e.reason:<16} {e.amount:>+9} -> {e.balance_after:>9}  {e.reference}\n")
        out.write(f"balance of {ACCOUNT}: {ledger.balance(ACCOUNT)} credits\n")
