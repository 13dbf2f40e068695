"""What the dashboard reads (docs/ui.md): a ledger's run records and receipts, a directory of saved run files,
a DAG store. Plain Python, no web framework: every method returns JSON-ready values and never writes.

Run rows from both origins share one shape (``RunRow``) so one filter and one table serve them all; a
receipt's user, session and tags are those of its run record (``RunRecord.context``), so spend can be
filtered like runs.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chainwarden._chain_context import read_labels, tag_texts
from chainwarden.billing import ChargeReceipt, Ledger, RunRecord
from chainwarden.cli.ledger_runs import open_ledger
from chainwarden.cli.runfile import Run, RunFileError, load_run
from chainwarden.cli.summary import summarize
from chainwarden.dag import Store
from chainwarden.vocab import ENDED_NODE_STATUSES, DagOutcome, DagState, NodeStatus

__all__ = ["DagSource", "Filters", "LedgerSource", "RunFiles", "RunRow", "spend"]

#: Run files larger than this are listed by name only (parsing them for the list would stall it).
MAX_LISTED_FILE_BYTES = 64 * 1024 * 1024
#: How many receipts a spend chart reads at most (the latest).
MAX_RECEIPTS = 200_000
#: Seconds a ledger read is reused: a dashboard refreshing every few seconds reads the ledger once.
CACHE_S = 1.0


@dataclass(frozen=True, slots=True)
class RunRow:
    """One run as the runs table shows it."""

    origin: str  # "ledger" or "file"
    run_id: str
    attempt: int
    graph_id: str
    status: str  # running, ok, error, abandoned (docs/runtime.md "Reconnect, resume and retry")
    started_at: str | None
    ended_at: str | None
    duration_s: float | None
    account: str | None
    user_id: str | None
    session_id: str | None
    tags: list[str] = field(default_factory=list)
    model: str | None = None
    cost_usd: float | None = None
    credits: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    calls: int | None = None
    receipts: int | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, slots=True)
class Filters:
    """The runs table's filters; an empty field filters nothing."""

    account: str = ""
    user: str = ""
    session: str = ""
    tag: str = ""
    status: str = ""
    since: str = ""  # an ISO date or time: started at or after
    until: str = ""  # started before the end of this day (a date) or this instant
    q: str = ""  # a part of the run id or graph id

    def match(self, row: RunRow) -> bool:
        if self.account and row.account != self.account:
            return False
        if self.user and row.user_id != self.user:
            return False
        if self.session and row.session_id != self.session:
            return False
        if self.tag and not any(self.tag == t or t.startswith(self.tag + "=") for t in row.tags):
            return False
        if self.status and row.status != self.status:
            return False
        if self.q and self.q.lower() not in f"{row.run_id} {row.graph_id}".lower():
            return False
        if self.since or self.until:
            if row.started_at is None:
                return False
            if self.since and row.started_at < _instant(self.since):
                return False
            if self.until and row.started_at >= _instant(self.until, end_of_day=True):
                return False
        return True


def _instant(text: str, *, end_of_day: bool = False) -> str:
    """A filter's date or time as the ISO text run rows are compared with (UTC)."""
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        return text
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    if end_of_day and len(text) <= 10:
        value = value.replace(hour=23, minute=59, second=59, microsecond=999_999)
    return value.astimezone(UTC).isoformat()


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC).isoformat()


class _Cached:
    """A value recomputed at most once per ``CACHE_S``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._at = -1e9
        self._value: Any = None

    def get(self, compute: Any) -> Any:
        with self._lock:
            now = time.monotonic()
            if now - self._at > CACHE_S:
                self._value = compute()
                self._at = now
            return self._value


class LedgerSource:
    """A ledger's runs and receipts (a SQLite file or a PostgreSQL DSN)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.ledger: Ledger = open_ledger(url)
        self._runs = _Cached()
        self._receipts = _Cached()

    @property
    def describe(self) -> str:
        return self.ledger.describe

    def records(self) -> list[RunRecord]:
        records: list[RunRecord] = self._runs.get(lambda: self.ledger.runs(limit=100_000))
        return records

    def receipts(self) -> list[ChargeReceipt]:
        receipts: list[ChargeReceipt] = self._receipts.get(lambda: self.ledger.receipts()[-MAX_RECEIPTS:])
        return receipts

    def rows(self) -> list[RunRow]:
        return [_ledger_row(r) for r in self.records()]

    def run(self, run_id: str) -> dict[str, Any] | None:
        attempts = [r for r in self.ledger.runs(run_id=run_id, limit=1_000)]
        receipts = self.ledger.receipts(run_id=run_id)
        if not attempts and not receipts:
            return None
        return {
            "origin": "ledger",
            "run_id": run_id,
            "attempts": [
                _ledger_row(r).as_dict() | {"error": r.error, "finish_reason": r.finish_reason}
                for r in attempts
            ],
            "receipts": [_receipt(r) for r in receipts],
            "context": next((r.context for r in attempts if r.context), None),
        }

    def close(self) -> None:
        self.ledger.close()


def _ledger_row(r: RunRecord) -> RunRow:
    labels = read_labels(r.context)
    ended = r.ended_at
    return RunRow(
        origin="ledger",
        run_id=r.run_id,
        attempt=r.attempt,
        graph_id=r.graph_id,
        status=r.status,
        started_at=_iso(r.started_at),
        ended_at=_iso(ended),
        duration_s=None if ended is None else (ended - r.started_at).total_seconds(),
        account=r.billing_account_id,
        user_id=labels.user_id,
        session_id=labels.session_id,
        tags=tag_texts(labels.tags),
        model=r.model,
        credits=r.charged_credits,
        tokens_in=r.prompt_tokens,
        tokens_out=r.completion_tokens,
        receipts=r.receipt_count,
    )


def _receipt(r: ChargeReceipt) -> dict[str, Any]:
    return {
        "source_system": r.source_system,
        "source_reference": r.source_reference,
        "attempt": r.attempt,
        "account": r.billing_account_id,
        "provider": r.provider,
        "model": r.model,
        "input_tokens": r.input_tokens,
        "output_tokens": r.output_tokens,
        "credits": r.charged_credits,
        "cost_usd": None if r.response_cost_usd is None else str(r.response_cost_usd),  # exact
        "created_at": _iso(r.created_at),
    }


class RunFiles:
    """The run files (``*.json``) of a directory and its subdirectories, parsed once per change."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        if not self.directory.is_dir():
            raise NotADirectoryError(f"--runs {self.directory}: not a directory")
        self._lock = threading.Lock()
        self._parsed: dict[Path, tuple[tuple[int, int], Run | None]] = {}

    def _files(self) -> Iterator[Path]:
        yield from sorted(self.directory.rglob("*.json"))

    def name(self, path: Path) -> str:
        return path.relative_to(self.directory).as_posix()

    def path(self, name: str) -> Path | None:
        """The file a run's name points at, only inside the directory (never ``..`` out of it)."""
        candidate = (self.directory / name).resolve()
        root = self.directory.resolve()
        if candidate.suffix != ".json" or not candidate.is_relative_to(root) or not candidate.is_file():
            return None
        return candidate

    def load(self, path: Path) -> Run | None:
        """The parsed run (None when the file is not a run, or too large to list); cached by size and time."""
        try:
            stat = path.stat()
        except OSError:
            return None
        key = (stat.st_mtime_ns, stat.st_size)
        with self._lock:
            cached = self._parsed.get(path)
            if cached is not None and cached[0] == key:
                return cached[1]
        run: Run | None = None
        if stat.st_size <= MAX_LISTED_FILE_BYTES:
            try:
                run = load_run(path)
            except (RunFileError, RecursionError):
                run = None
        with self._lock:
            self._parsed[path] = (key, run)
        return run

    def rows(self) -> list[RunRow]:
        out = []
        for path in self._files():
            run = self.load(path)
            if run is not None:
                out.append(_file_row(self.name(path), run))
        return out

    def run(self, name: str) -> tuple[Run, dict[str, Any]] | None:
        path = self.path(name)
        run = self.load(path) if path is not None else None
        if run is None:
            return None
        summary = summarize(run)
        return run, summary

    def runs(self) -> Iterable[Run]:
        for path in self._files():
            run = self.load(path)
            if run is not None:
                yield run


# A call still open: a call-graph node not ended, or a DAG node without an outcome (the core's words).
_OPEN_STATUSES = (frozenset(NodeStatus) - ENDED_NODE_STATUSES) | (frozenset(DagState) - frozenset(DagOutcome))


def _file_status(run: Run) -> str:
    if any(c.status in _OPEN_STATUSES for c in run.calls if c.parents):
        return "running"
    return "error" if any(c.halted or c.failed for c in run.calls) else "ok"


def _file_row(name: str, run: Run) -> RunRow:
    summary = summarize(run)
    starts = [c.start_ms for c in run.calls if c.start_ms is not None]
    ends = [c.end_ms for c in run.calls if c.end_ms is not None]
    started = datetime.fromtimestamp(min(starts) / 1000, UTC) if starts else None
    ended = datetime.fromtimestamp(max(ends) / 1000, UTC) if ends else None
    models = sorted({c.model for c in run.calls if c.model})
    labels = run.labels
    return RunRow(
        origin="file",
        run_id=name,
        attempt=0,
        graph_id=run.title,
        status=_file_status(run),
        started_at=_iso(started),
        ended_at=_iso(ended),
        duration_s=None if started is None or ended is None else max(0.0, (ended - started).total_seconds()),
        account=_text(labels.attributes.get("billing_account_id") or labels.attributes.get("account")),
        user_id=labels.user_id,
        session_id=labels.session_id,
        tags=tag_texts(labels.tags),
        model=", ".join(models[:3]) or None,
        cost_usd=summary["cost_usd"],
        tokens_in=summary["tokens_in"],
        tokens_out=summary["tokens_out"],
        calls=len(run.calls),
    )


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def spend(
    ledger: LedgerSource | None, files: RunFiles | None, filters: Filters, by: str
) -> list[dict[str, Any]]:
    """Money by ``account``, ``model`` or ``day``: the ledger's receipts (credits and USD, each receipt
    filtered through its run's row) and the run files' calls (USD); sorted by key (days) or by USD."""
    totals: dict[str, dict[str, Any]] = {}

    def add(key: str | None, usd: float, credits: int) -> None:
        label = key or f"(no {by})"
        entry = totals.setdefault(label, {"key": label, "usd": 0.0, "credits": 0, "calls": 0})
        entry["usd"] += usd
        entry["credits"] += credits
        entry["calls"] += 1

    if ledger is not None:
        rows = {(r.run_id, r.attempt): r for r in ledger.rows()}
        for receipt in ledger.receipts():
            row = rows.get((receipt.run_id, receipt.attempt))
            if row is None:  # a receipt without its run record: only its own fields can match
                row = RunRow(
                    "ledger",
                    receipt.run_id,
                    receipt.attempt,
                    "",
                    "",
                    _iso(receipt.created_at),
                    None,
                    None,
                    receipt.billing_account_id,
                    None,
                    None,
                )
            if not filters.match(row):
                continue
            day = _iso(receipt.created_at)
            key = {
                "account": receipt.billing_account_id,
                "model": receipt.model,
                "day": day[:10] if day else None,
            }[by]
            usd = float(receipt.response_cost_usd) if receipt.response_cost_usd is not None else 0.0
            add(key, usd, receipt.charged_credits)
    if files is not None:
        for path in files._files():
            run = files.load(path)
            if run is None or not filters.match(_file_row(files.name(path), run)):
                continue
            account = _file_row(files.name(path), run).account
            for call in run.calls:
                if call.cost_usd <= 0:
                    continue
                when = (
                    datetime.fromtimestamp(call.start_ms / 1000, UTC).date().isoformat()
                    if call.start_ms
                    else None
                )
                key = {"account": account, "model": call.model, "day": when}[by]
                add(key, call.cost_usd, 0)
    out = list(totals.values())
    if by == "day":
        return sorted(out, key=lambda e: e["key"])
    return sorted(out, key=lambda e: (-e["usd"], -e["credits"], e["key"]))


class DagSource:
    """A DAG store: its graphs, each read whole (``Store.load``) when asked and when it changed."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.store = Store.open(url)

    def graph_ids(self) -> list[str]:
        return self.store.graph_ids()

    def graph(self, graph_id: str) -> dict[str, Any]:
        """The graph's nodes and edges as the page draws them (``KeyError``-like DagError when unknown)."""
        graph = self.store.load(graph_id)
        nodes = graph.nodes()
        edges = graph.edges()
        return {
            "graph_id": graph_id,
            "version": graph.version,
            "nodes": [_dag_node(n) for n in nodes],
            "edges": [[e["from_node_id"], e["to_node_id"], e["edge_type"]] for e in edges],
        }

    def close(self) -> None:
        self.store.close()


def _dag_node(n: dict[str, Any]) -> dict[str, Any]:
    inp = n.get("input") or {}
    tool = inp.get("name") if isinstance(inp, dict) else None
    meta = n.get("metadata") or {}
    return {
        "id": n["node_id"],
        "type": n["node_type"],
        "state": n["state"],
        "name": tool if isinstance(tool, str) else n["node_type"],
        "error": meta.get("error") or meta.get("reason"),
        "worker": meta.get("claimed_by"),
    }
