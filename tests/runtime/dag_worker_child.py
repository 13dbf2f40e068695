"""A worker process of the 50-node DAG test (not a test itself).

Usage: python dag_worker_child.py URL ANTHROPIC_BASE_URL NAME
Serves the agent nodes of every graph in the store at URL (PostgreSQL; the ledger lives in the same database)
through AiRuntime: each node a run of `anthropic:chat` (AnthropicExecutor over the real `anthropic` client,
its requests marked with the worker's NAME), until no work is left; prints its stats.
"""

from __future__ import annotations

import sys

import anthropic

from chainwarden.billing import PostgresLedger, Pricing
from chainwarden.dag import Store, WorkerPool
from chainwarden.runtime import AiRuntime, AnthropicExecutor, dag_node_executor

MODEL = "claude-test-1"
PRICES = {("anthropic", MODEL): {"input_mtok": "3", "output_mtok": "15"}}
LEASE_S = 2.0


def main(url: str, base_url: str, name: str) -> None:
    client = anthropic.AsyncAnthropic(
        base_url=base_url, api_key="test", max_retries=0, default_headers={"x-worker": name}
    )
    with Store.open(url) as store, PostgresLedger(url) as ledger:
        executor = AnthropicExecutor(client, stream=False, price_overrides=PRICES)
        with AiRuntime({"anthropic": executor}, ledger, Pricing(markup=1.0), run_lease_s=1.0) as runtime:
            node = dag_node_executor(
                runtime, "anthropic:chat", billing_account_id="acct-1", virtual_key_id="vk-1", model=MODEL
            )
            pool = WorkerPool(
                store, {"agent_message": node}, worker_id=name, concurrency=4, lease_s=LEASE_S, poll_s=0.1
            )
            print("started", flush=True)
            stats = pool.run(until_idle=True)
            print("stats", stats.executed, dict(stats.outcomes), stats.reclaimed, flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:4])
