"""`chainwarden inspect --reconcile --ledger URL --store URL [GRAPH_ID]`: the money of a DAG, call by call
(docs/billing.md "Reconciliation").

Every receipt is linked to the DAG node it paid for (its run id is `dag.<graph id>.<node id>`,
docs/runtime.md "DAG nodes through the port") and to the call its run recorded (the run's journal keeps each
usage report it saw, with its billing key and the credits it should cost). Reported as discrepancies:

- calls without receipts — usage a run saw that is not (yet) billed: parked in an outbox, or lost;
- receipts without calls — charges no run recorded (billed outside a run, or a journal cut short);
- cost mismatches — a receipt that charged other credits than its recorded call should cost;
- receipts without nodes — a DAG run id whose node the store does not have.

Reading changes nothing in either database beyond what opening them does.
"""

from __future__ import annotations

from typing import Any

from chainwarden.billing import ChargeReceipt, Ledger
from chainwarden.billing.run_store import CallRow, RunStore
from chainwarden.cli.console import Section
from chainwarden.dag.store import Store
from chainwarden.runtime.dag_node import dag_run_id

__all__ = ["reconcile", "reconcile_sections"]

_DAG_PREFIX = "dag."


def reconcile(ledger: Ledger, store: Store, graph_id: str | None = None) -> dict[str, Any]:
    """The reconciliation report of `graph_id` (every graph of the store when None) as a JSON-ready dict."""
    graph_ids = [graph_id] if graph_id is not None else store.graph_ids()
    nodes: dict[str, tuple[str, str, dict[str, Any]]] = {}
    for gid in graph_ids:
        graph = store.load(gid)
        for node in graph.nodes(include_compressed=True):
            nodes[dag_run_id(gid, node["node_id"])] = (gid, node["node_id"], node)
    if graph_id is None:
        receipts = [r for r in ledger.receipts() if r.run_id.startswith(_DAG_PREFIX)]
    else:
        receipts = []
        for run_id in nodes:
            receipts += ledger.receipts(run_id=run_id)
    run_ids = sorted({r.run_id for r in receipts} | set(nodes))
    calls = RunStore(ledger).calls(run_ids)
    by_key = {(c.source_system, c.source_reference): c for c in calls}
    billed = {(r.source_system, r.source_reference) for r in receipts}
    linked = []
    without_calls = []
    mismatches = []
    without_nodes = []
    for receipt in receipts:
        call = by_key.get((receipt.source_system, receipt.source_reference))
        owner = nodes.get(receipt.run_id)
        row = _receipt(receipt, owner, call)
        linked.append(row)
        if call is None:
            without_calls.append(row)
        elif call.credits is not None and call.credits != receipt.charged_credits:
            mismatches.append({**row, "expected_credits": call.credits})
        if owner is None:
            without_nodes.append(row)
    unbilled = [
        _call(c, nodes.get(c.run_id)) for c in calls if (c.source_system, c.source_reference) not in billed
    ]
    return {
        "ledger": ledger.describe,
        "store": store.url,
        "graph_id": graph_id,
        "graphs": len(graph_ids),
        "nodes_billed": len({r.run_id for r in receipts if r.run_id in nodes}),
        "charged_credits": sum(r.charged_credits for r in receipts),
        "receipts": linked,
        "calls_without_receipts": unbilled,
        "receipts_without_calls": without_calls,
        "cost_mismatches": mismatches,
        "receipts_without_nodes": without_nodes,
        "clean": not (unbilled or without_calls or mismatches or without_nodes),
    }


def _receipt(
    receipt: ChargeReceipt, owner: tuple[str, str, dict[str, Any]] | None, call: CallRow | None
) -> dict[str, Any]:
    return {
        "source_system": receipt.source_system,
        "source_reference": receipt.source_reference,
        "run_id": receipt.run_id,
        "attempt": receipt.attempt,
        "graph_id": None if owner is None else owner[0],
        "node_id": None if owner is None else owner[1],
        "call_index": None if call is None else call.call_index,
        "charged_credits": receipt.charged_credits,
    }


def _call(call: CallRow, owner: tuple[str, str, dict[str, Any]] | None) -> dict[str, Any]:
    return {
        "source_system": call.source_system,
        "source_reference": call.source_reference,
        "run_id": call.run_id,
        "attempt": call.attempt,
        "graph_id": None if owner is None else owner[0],
        "node_id": None if owner is None else owner[1],
        "call_index": call.call_index,
        "expected_credits": call.credits,
    }


def reconcile_sections(report: dict[str, Any]) -> list[Section]:
    """The report as console sections (`chainwarden.cli.console`)."""
    verdict = "clean" if report["clean"] else "DISCREPANCIES"
    head: Section = (
        "reconciliation",
        ["ledger", "store", "graphs", "nodes billed", "receipts", "credits", "verdict"],
        [
            [
                report["ledger"],
                report["store"],
                str(report["graphs"]),
                str(report["nodes_billed"]),
                str(len(report["receipts"])),
                str(report["charged_credits"]),
                verdict,
            ]
        ],
    )
    columns = ["key", "graph", "node", "attempt", "call", "credits"]

    def rows(items: list[dict[str, Any]], credits: str) -> list[list[str]]:
        return [
            [
                f"{i['source_system']}:{i['source_reference']}",
                str(i["graph_id"]),
                str(i["node_id"]),
                str(i["attempt"]),
                str(i["call_index"]),
                str(i.get(credits)),
            ]
            for i in items
        ]

    sections = [head, ("receipts", columns, rows(report["receipts"], "charged_credits"))]
    for name, key, credits in (
        ("calls without receipts", "calls_without_receipts", "expected_credits"),
        ("receipts without calls", "receipts_without_calls", "charged_credits"),
        ("cost mismatches", "cost_mismatches", "expected_credits"),
        ("receipts without nodes", "receipts_without_nodes", "charged_credits"),
    ):
        if report[key]:
            sections.append((name, columns, rows(report[key], credits)))
    return sections
