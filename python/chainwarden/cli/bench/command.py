"""The ``chainwarden bench`` click command (docs/bench.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from chainwarden.cli.bench import compare
from chainwarden.cli.bench.callspec import CallSpecError, call_workload
from chainwarden.cli.bench.peers import PEERS, available
from chainwarden.cli.bench.runner import Plan, run, steps
from chainwarden.cli.bench.table import print_table
from chainwarden.cli.bench.workloads import WORKLOADS

__all__ = ["bench_cmd"]

NAMES = [w.name for w in WORKLOADS] + ["memory_per_node"]
# (rounds, batch length, nodes for the memory figure): --quick stays under 5 s with both peers installed.
QUICK = (40, 100_000, 20_000)
DEFAULT = (200, 200_000, 100_000)


def _split(value: str, allowed: list[str], option: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    for item in items:
        if item not in allowed:
            raise click.BadParameter(f"{item!r} is not one of {', '.join(allowed)}", param_hint=option)
    return items


@contextmanager
def _progress(total: int) -> Iterator[Callable[[str], None]]:
    """A rich progress bar on a terminal; otherwise one plain line on stderr per workload."""
    if sys.stderr.isatty():
        from rich.console import Console  # noqa: PLC0415 - the cli extra
        from rich.progress import Progress  # noqa: PLC0415

        # On stderr: stdout holds the table or the JSON alone.
        with Progress(console=Console(stderr=True), transient=True) as bar:
            task = bar.add_task("bench", total=total)
            yield lambda name: bar.update(task, advance=1, description=name)
        return
    seen: set[str] = set()

    def tick(name: str) -> None:
        if name not in seen:
            seen.add(name)
            click.echo(f"bench: {name}", err=True)

    yield tick


@click.command("bench")
@click.option("--quick", is_flag=True, help="Fewer rounds and nodes: done in under 5 seconds.")
@click.option("--rounds", type=click.IntRange(min=3), help="Rounds per workload (default 200; --quick 40).")
@click.option(
    "--against",
    metavar="PEERS",
    help="Comma-separated peers to compare with: veronica-core, otel, or none "
    "(default: whichever is importable). A peer that is not installed is reported, not an error.",
)
@click.option(
    "--only", metavar="WORKLOADS", help=f"Comma-separated workloads to run, of: {', '.join(NAMES)}."
)
@click.option(
    "--call", "call_spec", metavar="MODULE:FUNCTION", help="Benchmark containment around your callable."
)
@click.option(
    "--async", "is_async", is_flag=True, help="With --call: the function is async (wrap_llm_call_async)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the figures as JSON (for scripts).")
@click.option("--save", type=click.Path(dir_okay=False, path_type=Path), help="Also write the JSON to FILE.")
@click.option(
    "--compare",
    "compare_to",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Compare with a file written by --save; exit 1 when a median got worse by over --threshold.",
)
@click.option(
    "--threshold",
    type=click.FloatRange(min=0),
    default=10.0,
    show_default=True,
    help="Percent, for --compare.",
)
@click.option(
    "--plain/--rich", default=None, help="Plain text or a rich table (default: rich on a terminal)."
)
def bench_cmd(
    *,
    quick: bool,
    rounds: int | None,
    against: str | None,
    only: str | None,
    call_spec: str | None,
    is_async: bool,
    as_json: bool,
    save: Path | None,
    compare_to: Path | None,
    threshold: float,
    plain: bool | None,
) -> None:
    """Measure what containment and recording cost on this machine.

    Each figure is the per-call overhead over the bare call (p50, p99, min) from interleaved rounds: every
    round times the bare call and each implementation back to back. veronica-core and OpenTelemetry run the
    same workloads in the same process when they are installed. `--call pkg.mod:fn` measures your own
    function bare vs inside ctx.wrap_llm_call.
    """
    if is_async and not call_spec:
        raise click.UsageError("--async goes with --call")
    old = None
    if compare_to is not None:
        try:
            old = compare.load(compare_to)
        except compare.CompareError as exc:
            raise click.ClickException(str(exc)) from None
    n_rounds, batch_ns, mem_nodes = QUICK if quick else DEFAULT
    if against is None:
        peers = [p for p in PEERS if available(p)]
    elif against.strip() == "none":
        peers = []
    else:
        peers = _split(against, list(PEERS), "--against")
    if call_spec:
        try:
            workloads = [call_workload(call_spec, is_async)]
        except CallSpecError as exc:
            raise click.UsageError(str(exc)) from None
        peers, mem_nodes = [], 0
    else:
        chosen = _split(only, NAMES, "--only") if only else NAMES
        workloads = [w for w in WORKLOADS if w.name in chosen]
        if "memory_per_node" not in chosen:
            mem_nodes = 0
    plan = Plan(workloads, peers, rounds or n_rounds, batch_ns, mem_nodes)
    with _progress(steps(plan)) as tick:
        try:
            doc = run(plan, tick)
        except Exception as exc:
            if not call_spec:
                raise
            # The user's function ran fine once, then failed while being timed.
            raise click.ClickException(f"--call: {call_spec} raised {type(exc).__name__}: {exc}") from None
    text = json.dumps(doc, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    if save is not None:
        try:
            save.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise click.ClickException(f"cannot write {save}: {exc.strerror or exc}") from None
    if as_json:
        sys.stdout.write(text)
    else:
        print_table(doc, sys.stdout, rich=sys.stdout.isatty() if plain is None else not plain)
    if old is not None:
        _report_compare(old, doc, threshold, compare_to)


def _report_compare(old: dict[str, Any], new: dict[str, Any], threshold: float, path: Path | None) -> None:
    worse, compared = compare.regressions(old, new, threshold)
    if worse:
        lines = "\n  ".join(worse)
        click.echo(
            f"bench: {len(worse)} of {compared} figures got worse than {path} "
            f"by more than {threshold:g}%:\n  {lines}",
            err=True,
        )
        sys.exit(1)
    click.echo(
        f"bench: no figure worse than {path} by more than {threshold:g}% ({compared} compared)", err=True
    )
