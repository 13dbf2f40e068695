"""`chainwarden worker`: a `WorkerPool` serving a store until SIGTERM / SIGINT (docs/dag.md "Workers")."""

from __future__ import annotations

import importlib
import logging
import os
import signal
import sys
from collections.abc import Mapping
from types import FrameType
from typing import Any

import click

from chainwarden.dag import DagError, Store, StoreError, WorkerPool

__all__ = ["worker_cmd"]


def _executors(spec: str) -> Mapping[str, Any]:
    """`package.module:NAME` -> the mapping of node type to executor that NAME holds."""
    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise click.BadParameter("expected package.module:NAME", param_hint="--executors")
    # Like other worker commands (celery, uvicorn): modules of the directory it is started in import.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise click.BadParameter(f"cannot import {module_name!r}: {exc}", param_hint="--executors") from None
    value: Any = module
    for part in attribute.split("."):
        if not hasattr(value, part):
            raise click.BadParameter(f"{module_name!r} has no {attribute!r}", param_hint="--executors")
        value = getattr(value, part)
    if not isinstance(value, Mapping):
        raise click.BadParameter(
            f"{spec} is a {type(value).__name__}, not a mapping of node type to executor",
            param_hint="--executors",
        )
    return value


@click.command("worker")
@click.argument("store_url")
@click.option(
    "--executors",
    "executors_spec",
    required=True,
    metavar="MODULE:NAME",
    help="Where the executors are: a mapping of node type ('task', 'agent_message') to callable, "
    "e.g. myapp.dag:EXECUTORS.",
)
@click.option(
    "--concurrency", type=click.IntRange(1, 10_000), default=4, show_default=True, help="Executions at once."
)
@click.option(
    "--lease-s",
    type=click.FloatRange(0, 1e9, min_open=True),
    default=30.0,
    show_default=True,
    help="Lease of a claimed node; renewed every third of it while it runs.",
)
@click.option(
    "--poll-s",
    type=click.FloatRange(0, 1e9, min_open=True),
    default=1.0,
    show_default=True,
    help="How often the store is looked at without a notification.",
)
@click.option(
    "--graph",
    "graph_ids",
    multiple=True,
    metavar="GRAPH_ID",
    help="Serve only this graph (repeatable); default: every graph of the store.",
)
@click.option("--worker-id", help="This worker's name in leases and logs (default: host:pid:random).")
@click.option("--until-idle", is_flag=True, help="Exit once no served graph has work left.")
@click.option(
    "--log-level",
    type=click.Choice(["DEBUG", "INFO", "WARNING", "ERROR"]),
    default="INFO",
    show_default=True,
    help="Logging on stderr.",
)
def worker_cmd(  # noqa: PLR0917 - click passes one argument per option
    store_url: str,
    executors_spec: str,
    concurrency: int,
    lease_s: float,
    poll_s: float,
    graph_ids: tuple[str, ...],
    worker_id: str | None,
    until_idle: bool,
    log_level: str,
) -> None:
    """Run DAG nodes of the store at STORE_URL (postgresql://... or sqlite:///path.db) until stopped.

    Claims only what it has free slots for, across every graph of the store (or the --graph ones), wakes on
    new work (PostgreSQL LISTEN/NOTIFY; SQLite polls), renews its leases, and takes over nodes whose
    worker died once their lease ran out. SIGTERM or SIGINT stops it gracefully: nothing more is claimed,
    running executions get --lease-s to finish, what could not finish goes back to pending, and the exit
    status is 0.
    """
    logging.basicConfig(
        stream=sys.stderr, level=log_level, format="%(asctime)s %(levelname)s %(name)s %(message)s"
    )
    executors = _executors(executors_spec)
    try:
        store = Store.open(store_url)
    except (StoreError, DagError, ValueError) as exc:
        raise click.ClickException(str(exc)) from None
    with store:
        try:
            pool = WorkerPool(
                store,
                executors,
                worker_id=worker_id,
                concurrency=concurrency,
                lease_s=lease_s,
                graph_ids=list(graph_ids) or None,
                poll_s=poll_s,
            )
        except (TypeError, ValueError) as exc:
            raise click.ClickException(str(exc)) from None

        def stop(signum: int, frame: FrameType | None) -> None:
            pool.stop()

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
        try:
            stats = pool.run(until_idle=until_idle)
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
    click.echo(
        f"worker {pool.worker_id}: executed {stats.executed} ({dict(stats.outcomes)}), reclaimed "
        f"{stats.reclaimed}, lost leases {stats.lost_leases}, given back {stats.released}, "
        f"errors {stats.errors}",
        err=True,
    )
