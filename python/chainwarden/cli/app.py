"""The click commands behind ``chainwarden``; `chainwarden.cli.main` runs them."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from chainwarden import __version__, demo
from chainwarden.billing import LedgerUnavailable
from chainwarden.cli.bench.command import bench_cmd
from chainwarden.cli.console import print_sections, print_summary
from chainwarden.cli.html_report import render_html
from chainwarden.cli.ledger_runs import (
    LedgerSourceError,
    is_ledger,
    ledger_sections,
    ledger_summary,
    open_ledger,
)
from chainwarden.cli.mermaid import run_to_mermaid
from chainwarden.cli.reconcile import reconcile, reconcile_sections
from chainwarden.cli.runfile import Run, RunFileError, load_run
from chainwarden.cli.summary import summarize
from chainwarden.cli.worker import worker_cmd
from chainwarden.dag.store import Store, StoreError

__all__ = ["cli"]

RUN_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _load(path: Path) -> Run:
    try:
        return load_run(path)
    except RunFileError as exc:
        raise click.ClickException(str(exc)) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "-V", "--version", prog_name="chainwarden", message="%(prog)s %(version)s")
def cli() -> None:
    """Record, contain, schedule and bill LLM-agent runs.

    Look at a saved run with `inspect` (a summary) or `render` (a self-contained HTML report or a Mermaid
    chart). A run file is the JSON of an ExecutionGraph snapshot (`graph.snapshot_json()`), of a
    containment snapshot (`chainwarden.cli.export.context_snapshot_json(ctx.get_snapshot())`) or of a DAG
    (`Graph.to_json()`).
    """


cli.add_command(bench_cmd)
cli.add_command(worker_cmd)


@cli.command("demo")
@click.option(
    "--only",
    type=click.Choice([name for name, _ in demo.SECTIONS]),
    help="Run only this part of the demo.",
)
def demo_cmd(only: str | None) -> None:
    """Simulate agent runs and show what chainwarden records.

    Deterministic and offline: a recorded call graph, a chain halted by its cost ceiling, a task DAG with a
    failure and a retry, and idempotent billing.
    """
    demo.run(sys.stdout, only=only)


@cli.command("inspect")
@click.argument("source", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON (for scripts).")
@click.option(
    "--plain/--rich",
    default=None,
    help="Plain text or rich tables (default: rich tables on a terminal, plain text otherwise).",
)
@click.option("--run", "run_id", help="Ledger only: show this run's attempts and its receipts.")
@click.option(
    "--limit",
    type=click.IntRange(1, 100_000),
    default=50,
    show_default=True,
    help="Ledger only: list at most this many runs, the latest first.",
)
@click.option(
    "--reconcile",
    is_flag=True,
    help="Link every receipt of a DAG (SOURCE: its graph id; all graphs when omitted) to its node and "
    "recorded call, and list calls without receipts, receipts without calls and cost mismatches "
    "(needs --ledger and --store; exits 1 when the report is not clean).",
)
@click.option(
    "--ledger", "ledger_url", help="With --reconcile: the ledger (a SQLite file or postgresql:// DSN)."
)
@click.option(
    "--store", "store_url", help="With --reconcile: the DAG store URL (sqlite:///path or postgresql://)."
)
def inspect_cmd(  # noqa: PLR0917 - one argument per option
    source: str | None,
    as_json: bool,
    plain: bool | None,
    run_id: str | None,
    limit: int,
    reconcile: bool,
    ledger_url: str | None,
    store_url: str | None,
) -> None:
    """Summarize a saved run, or list the runs of a ledger.

    SOURCE is a run file (prints the nodes by kind and status, cost and tokens, amplification factors, the
    slowest and the most expensive calls, halts and failures with their reasons, and divergence events),
    or a ledger: a SQLite ledger file or a PostgreSQL DSN (postgresql://...), whose recorded runs are
    listed with status, tokens and credits (--run RUN_ID adds that run's receipts).
    """
    rich = sys.stdout.isatty() if plain is None else not plain
    if reconcile:
        _reconcile(source, ledger_url, store_url, as_json=as_json, rich=rich)
        return
    if ledger_url is not None or store_url is not None:
        raise click.UsageError("--ledger and --store apply to --reconcile")
    if source is None:
        raise click.UsageError("missing SOURCE (a run file or a ledger)")
    if is_ledger(source):
        try:
            with open_ledger(source) as ledger:
                summary = ledger_summary(ledger, run_id=run_id, limit=limit)
        except (LedgerSourceError, LedgerUnavailable) as exc:
            raise click.ClickException(str(exc)) from None
        if run_id is not None and not summary["runs"] and not summary["receipts"]:
            raise click.ClickException(f"no run {run_id!r} in {summary['ledger']}")
        if as_json:
            sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
            return
        print_sections(ledger_sections(summary), sys.stdout, rich=rich)
        return
    if run_id is not None:
        raise click.UsageError("--run applies to a ledger, not to a run file")
    path = Path(source)
    if not path.exists():
        raise click.UsageError(f"SOURCE {source!r} does not exist (nor is it a postgresql:// DSN)")
    if not path.is_file():
        raise click.UsageError(f"SOURCE {source!r} is not a file")
    summary = summarize(_load(path))
    if as_json:
        sys.stdout.write(json.dumps(summary, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
        return
    print_summary(summary, sys.stdout, rich=rich)


def _reconcile(
    graph_id: str | None, ledger_url: str | None, store_url: str | None, *, as_json: bool, rich: bool
) -> None:
    if ledger_url is None or store_url is None:
        raise click.UsageError("--reconcile needs --ledger URL and --store URL")
    try:
        with open_ledger(ledger_url) as ledger, Store.open(store_url) as store:
            if graph_id is not None and graph_id not in store.graph_ids():
                raise click.ClickException(f"no graph {graph_id!r} in {store.url}")
            report = reconcile(ledger, store, graph_id)
    except (LedgerSourceError, LedgerUnavailable, StoreError) as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        sys.stdout.write(json.dumps(report, indent=2, ensure_ascii=False, allow_nan=False) + "\n")
    else:
        print_sections(reconcile_sections(report), sys.stdout, rich=rich)
    if not report["clean"]:
        raise click.exceptions.Exit(1)


def _same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file (through links and relative parts alike)."""
    try:
        return b.exists() and os.path.samefile(a, b)
    except OSError:
        return a.resolve() == b.resolve()


@cli.command("render")
@click.argument("file", type=RUN_FILE)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["html", "mermaid"]),
    default="html",
    show_default=True,
    help="html: a self-contained report (graph, timeline, costs, halts); mermaid: a flowchart.",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, writable=True, allow_dash=True, path_type=Path),
    default=Path("-"),
    help="Where to write it (default: standard output).",
)
def render_cmd(file: Path, fmt: str, output: Path) -> None:
    """Draw a saved run as an HTML report or a Mermaid flowchart.

    The HTML file needs no network to view: styles, script and pictures are inside it.
    """
    if str(output) != "-" and _same_file(file, output):
        # The saved run is the only copy of what happened: never written over by its own report.
        raise click.UsageError(f"--output {output} is the run file itself; choose another path")
    run = _load(file)
    try:
        text = render_html(run) if fmt == "html" else run_to_mermaid(run)
    except RunFileError as exc:
        raise click.ClickException(f"{file}: {exc}") from None
    if str(output) == "-":
        sys.stdout.write(text)
        return
    try:
        output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise click.ClickException(f"cannot write {output}: {exc.strerror or exc}") from None
    click.echo(f"wrote {output} ({len(text.encode()):,} bytes)", err=True)
