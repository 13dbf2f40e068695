"""The dashboard of ``chainwarden serve`` (docs/ui.md): a read-only Starlette app over a ledger, a DAG store
and a directory of run files.

Every route is a GET (anything else is 405): the page, its script and style, JSON reads, the HTML report of a
run file, and one server-sent-event stream per watched DAG, which re-reads the graph every ``poll_s`` and
sends it when its version moved. The page's Content-Security-Policy allows only the server's own script and
style; a Host check refuses requests for other names while the server listens on localhost (DNS rebinding).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import fields
from importlib.resources import files
from typing import Any

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from chainwarden import __version__
from chainwarden.cli.html_report import render_html
from chainwarden.dag import DagError
from chainwarden.ui.sources import DagSource, Filters, LedgerSource, RunFiles, RunRow, spend
from chainwarden.vocab import DagState

__all__ = ["LOCAL_HOSTS", "create_app"]

_log = logging.getLogger("chainwarden.ui")

#: Host names a server on localhost answers to.
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1", "[::1]")
#: At most this many runs in one answer (the table pages through them in the browser).
MAX_RUNS = 5_000
_PAGE_CSP = (
    "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'"
)
_STATIC = {"dashboard.js": "text/javascript", "dashboard.css": "text/css"}


def _json(value: Any, status: int = 200) -> JSONResponse:
    return JSONResponse(value, status_code=status, headers={"Cache-Control": "no-store"})


def _filters(request: Request) -> Filters:
    names = {f.name for f in fields(Filters)}
    return Filters(**{k: v.strip() for k, v in request.query_params.items() if k in names})


class Dashboard:
    """The sources and the routes that read them."""

    def __init__(
        self, ledger: LedgerSource | None, store: DagSource | None, runs: RunFiles | None, poll_s: float
    ) -> None:
        self.ledger = ledger
        self.store = store
        self.runs = runs
        self.poll_s = poll_s

    def _rows(self) -> list[RunRow]:
        rows: list[RunRow] = []
        if self.ledger is not None:
            rows += self.ledger.rows()
        if self.runs is not None:
            rows += self.runs.rows()
        return sorted(rows, key=lambda r: (r.started_at or "", r.run_id), reverse=True)

    async def page(self, request: Request) -> Response:
        html = files("chainwarden.ui").joinpath("dashboard.html").read_text(encoding="utf-8")
        # The DAG's states come from the core's vocabulary, written into the page for the legend and the
        # counts (docs/errors.md "Vocabularies"): the script keeps no list of its own.
        html = html.replace("{{version}}", __version__).replace("{{dag_states}}", " ".join(DagState))
        return HTMLResponse(html, headers={"Content-Security-Policy": _PAGE_CSP, "Cache-Control": "no-store"})

    async def static(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in _STATIC:
            return Response("not found", status_code=404)
        body = files("chainwarden.ui").joinpath(name).read_text(encoding="utf-8")
        return Response(body, media_type=_STATIC[name], headers={"Cache-Control": "no-store"})

    async def sources(self, request: Request) -> Response:
        return _json(
            {
                "version": __version__,
                "ledger": None if self.ledger is None else self.ledger.describe,
                "store": None if self.store is None else self.store.url,
                "runs": None if self.runs is None else str(self.runs.directory),
            }
        )

    async def run_list(self, request: Request) -> Response:
        filters = _filters(request)
        rows = await asyncio.to_thread(self._rows)
        chosen = [r for r in rows if filters.match(r)]
        facets = {
            "accounts": sorted({r.account for r in rows if r.account}),
            "statuses": sorted({r.status for r in rows}),
            "users": sorted({r.user_id for r in rows if r.user_id})[:500],
            "tags": sorted({t for r in rows for t in r.tags})[:500],
        }
        return _json(
            {
                "total": len(rows),
                "matched": len(chosen),
                "runs": [r.as_dict() for r in chosen[:MAX_RUNS]],
                **facets,
            }
        )

    async def spend(self, request: Request) -> Response:
        by = request.query_params.get("by", "model")
        if by not in ("account", "model", "day"):
            return _json({"error": "by must be account, model or day"}, 400)
        return _json(
            {"by": by, "rows": await asyncio.to_thread(spend, self.ledger, self.runs, _filters(request), by)}
        )

    async def ledger_run(self, request: Request) -> Response:
        if self.ledger is None:
            return _json({"error": "no ledger (--ledger)"}, 404)
        found = await asyncio.to_thread(self.ledger.run, request.path_params["run_id"])
        return _json(found) if found is not None else _json({"error": "no such run"}, 404)

    async def file_run(self, request: Request) -> Response:
        if self.runs is None:
            return _json({"error": "no run directory (--runs)"}, 404)
        found = await asyncio.to_thread(self.runs.run, request.path_params["name"])
        if found is None:
            return _json({"error": "no such run file"}, 404)
        run, summary = found
        stopped = [c for c in run.calls if c.halted or c.failed]
        calls = sorted(run.calls, key=lambda c: (c.start_ms or 0.0, c.id))
        return _json(
            {
                "origin": "file",
                "run_id": request.path_params["name"],
                "summary": summary,
                "calls": [_call(c) for c in calls[:200]],
                "stopped": [_call(c) for c in stopped[:200]],
                "events": [_plain(e) for e in (run.events or run.divergence)[:200]],
            }
        )

    async def file_report(self, request: Request) -> Response:
        if self.runs is None:
            return Response("no run directory (--runs)", status_code=404)
        found = await asyncio.to_thread(self.runs.run, request.path_params["name"])
        if found is None:
            return Response("no such run file", status_code=404)
        html = await asyncio.to_thread(render_html, found[0])
        return HTMLResponse(html)  # its own Content-Security-Policy is in the page

    async def graph_list(self, request: Request) -> Response:
        if self.store is None:
            return _json({"graphs": [], "error": "no DAG store (--store)"})
        return _json({"graphs": await asyncio.to_thread(self.store.graph_ids)})

    async def graph(self, request: Request) -> Response:
        if self.store is None:
            return _json({"error": "no DAG store (--store)"}, 404)
        try:
            return _json(await asyncio.to_thread(self.store.graph, request.path_params["graph_id"]))
        except DagError as err:
            return _json({"error": str(err)}, 404)

    async def graph_events(self, request: Request) -> Response:
        """Server-sent events: the graph now, then again each time its version moves."""
        if self.store is None:
            return _json({"error": "no DAG store (--store)"}, 404)
        store, graph_id, poll_s = self.store, request.path_params["graph_id"], self.poll_s

        async def stream() -> AsyncIterator[str]:
            seen = -1
            quiet = 0.0
            while not await request.is_disconnected():
                try:
                    graph = await asyncio.to_thread(store.graph, graph_id)
                except DagError as err:
                    yield f"event: problem\ndata: {json.dumps({'error': str(err)})}\n\n"
                    return
                if graph["version"] != seen:
                    seen = graph["version"]
                    quiet = 0.0
                    yield f"event: graph\ndata: {json.dumps(graph, ensure_ascii=False)}\n\n"
                elif quiet >= 15.0:
                    quiet = 0.0
                    yield ": keep-alive\n\n"  # proxies and the browser keep the stream open
                await asyncio.sleep(poll_s)
                quiet += poll_s

        headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
        return StreamingResponse(stream(), media_type="text/event-stream", headers=headers)


def _call(c: Any) -> dict[str, Any]:
    return {
        "id": c.id,
        "name": c.name,
        "kind": c.kind,
        "status": c.status,
        "model": c.model,
        "duration_ms": c.duration_ms,
        "cost_usd": c.cost_usd,
        "tokens_in": c.tokens_in,
        "tokens_out": c.tokens_out,
        "reason": c.reason,
    }


def _plain(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str, allow_nan=False))
    except ValueError:
        return str(value)


def create_app(
    *,
    ledger: str | None = None,
    store: str | None = None,
    runs: str | None = None,
    local_only: bool = True,
    poll_s: float = 0.25,
) -> Starlette:
    """The dashboard over the given sources (each optional). ``local_only`` answers only requests for
    localhost names (the server then listens on 127.0.0.1)."""
    with contextlib.ExitStack() as opened:  # a source that cannot be opened closes those opened before it
        ledger_source = LedgerSource(ledger) if ledger else None
        if ledger_source is not None:
            opened.callback(ledger_source.close)
        dag_source = DagSource(store) if store else None
        if dag_source is not None:
            opened.callback(dag_source.close)
        board = Dashboard(ledger_source, dag_source, RunFiles(runs) if runs else None, poll_s)
        opened.pop_all()  # from here on the app's lifespan closes them
    routes = [
        Route("/", board.page),
        Route("/static/{name}", board.static),
        Route("/api/sources", board.sources),
        Route("/api/runs", board.run_list),
        Route("/api/spend", board.spend),
        Route("/api/ledger/runs/{run_id}", board.ledger_run),
        Route("/api/files/{name:path}", board.file_run),
        Route("/report/{name:path}", board.file_report),
        Route("/api/graphs", board.graph_list),
        Route("/api/graphs/{graph_id}", board.graph),
        Route("/api/graphs/{graph_id}/events", board.graph_events),
    ]  # Route's default methods are GET (and HEAD): every other method is 405
    middleware = [Middleware(TrustedHostMiddleware, allowed_hosts=list(LOCAL_HOSTS))] if local_only else []

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        try:
            yield
        finally:
            for source in (board.ledger, board.store):
                if source is not None:
                    source.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.dashboard = board
    return app
