"""A local stand-in for the OpenAI and Anthropic HTTP APIs, for tests that use the real client libraries.

``FakeProvider`` is an HTTP/1.1 server on 127.0.0.1 (a free port, one thread per connection) answering
``POST /v1/chat/completions`` and ``POST /v1/responses`` like OpenAI and ``POST /v1/messages`` like Anthropic,
plain or streamed (SSE) with usage, with scripted tool calls and errors, streams cut after N events (the
connection really dropped) and hostile usage values. Point a client at it with
``openai.OpenAI(base_url=fake.openai_base_url, api_key="test")`` or
``anthropic.Anthropic(base_url=fake.anthropic_base_url, api_key="test")``.

Replies come from ``fake.script(...)`` (first in, first out), then ``fake.default``; every request is kept
in ``fake.requests``. The ``fake_provider`` fixture (conftest.py) starts one per test and stops it afterwards.
Everything is bounded: sockets time out, ``stop()`` joins its thread with a timeout.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from . import provider_payloads as payloads
from .provider_payloads import Reply, ToolCall

__all__ = ["FakeProvider", "Recorded", "Reply", "ToolCall"]

_SOCKET_TIMEOUT_S = 10.0
_MAX_BODY = 8 * 1024 * 1024


@dataclass(frozen=True)
class Recorded:
    """One request the fake received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]

    @property
    def streamed(self) -> bool:
        return bool(self.body.get("stream"))


class FakeProvider:
    def __init__(self) -> None:
        self.default = Reply()
        self.requests: list[Recorded] = []
        # For tests with many clients: every answer slowed by `delay_s`; replies without an id given one of
        # their own (`msg_000001`, ...) when `unique_ids`; requests `hold` says yes to are never answered
        # (kept in `held` until `release()`, then dropped); the ids of the answers fully sent in `answered`.
        self.delay_s = 0.0
        self.unique_ids = False
        self.hold: Callable[[Recorded], bool] | None = None
        self.held: list[Recorded] = []
        self.answered: list[str] = []
        self._released = threading.Event()
        self._ids = 0
        self._script: deque[Reply] = deque()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------------------

    def start(self) -> FakeProvider:
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._released.set()  # held requests end now, unanswered
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5.0)

    def __enter__(self) -> FakeProvider:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------------------------

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_base_url(self) -> str:
        return f"{self.url}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return self.url  # the Anthropic client adds /v1/messages itself

    # -- scripting -------------------------------------------------------------------------------------------

    def script(self, *replies: Reply) -> None:
        """Queues replies for the next requests, in order; then ``default`` answers."""
        with self._lock:
            self._script.extend(replies)

    def fail_next(self, status: int, times: int = 1, *, retry_after_s: float | None = 0.0) -> None:
        """The next ``times`` requests fail with ``status`` (429, 500, ...) and the provider's error body."""
        self.script(*(Reply(status=status, retry_after_s=retry_after_s) for _ in range(times)))

    def next_reply(self) -> Reply:
        with self._lock:
            reply = self._script.popleft() if self._script else self.default
            if self.unique_ids and reply.response_id is None:
                self._ids += 1
                reply = dataclasses.replace(reply, response_id=f"msg_{self._ids:06d}")
            return reply

    def held_back(self, request: Recorded) -> bool:
        """Whether `request` is held (never answered): it waits here until `release()`."""
        with self._lock:
            if self.hold is None or not self.hold(request):
                return False
            self.held.append(request)
        self._released.wait(60.0)
        return True

    def release(self) -> None:
        self._released.set()

    def note_answered(self, response_id: str) -> None:
        with self._lock:
            self.answered.append(response_id)

    def record(self, request: Recorded) -> None:
        with self._lock:
            self.requests.append(request)

    def paths(self) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests]


def _handler_for(fake: FakeProvider) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        timeout = _SOCKET_TIMEOUT_S

        def log_message(self, format: str, *args: Any) -> None:  # quiet: pytest shows failures
            return None

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length > _MAX_BODY:
                self._json(413, {"error": {"message": "request too large"}})
                return
            raw = self.rfile.read(length) if length else b"{}"
            try:
                body = json.loads(raw)
            except ValueError:
                self._json(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
                return
            path = self.path.split("?", 1)[0]
            recorded = Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body)
            fake.record(recorded)
            if fake.held_back(recorded):
                self.close_connection = True
                return
            if fake.delay_s:
                time.sleep(fake.delay_s)
            route = {
                "/v1/chat/completions": self._chat,
                "/v1/responses": self._responses,
                "/v1/messages": self._messages,
            }.get(path)
            if route is None:
                self._json(404, {"error": {"message": f"no route {path}", "type": "not_found_error"}})
                return
            reply = fake.next_reply()
            model = str(body.get("model") or "fake-model")
            route(reply, model, body)

        # -- dialects ----------------------------------------------------------------------------------------

        def _chat(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
            if reply.status != 200:
                self._json(reply.status, payloads.openai_error(reply), reply.retry_after_s)
            elif body.get("stream"):
                include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
                self._stream(payloads.chat_completion_stream(reply, model, include_usage), reply.cut_after)
            else:
                self._json(200, payloads.chat_completion(reply, model))

        def _responses(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
            if reply.status != 200:
                self._json(reply.status, payloads.openai_error(reply), reply.retry_after_s)
            elif body.get("stream"):
                self._stream(payloads.response_stream(reply, model), reply.cut_after)
            else:
                self._json(200, payloads.response(reply, model))

        def _messages(self, reply: Reply, model: str, body: dict[str, Any]) -> None:
            if reply.status != 200:
                self._json(reply.status, payloads.anthropic_error(reply), reply.retry_after_s)
                return
            if body.get("stream"):
                sent = self._stream(payloads.message_stream(reply, model), reply.cut_after)
            else:
                self._json(200, payloads.message(reply, model))
                sent = True
            if sent:
                fake.note_answered(reply.response_id or "msg_fake0001")

        # -- wire --------------------------------------------------------------------------------------------

        def _json(self, status: int, data: Any, retry_after_s: float | None = None) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(raw)))
            if retry_after_s is not None:
                # Both spellings the clients read; milliseconds keep retry tests fast.
                self.send_header("retry-after-ms", str(int(retry_after_s * 1000)))
                self.send_header("retry-after", str(int(retry_after_s)))
            self.end_headers()
            self.wfile.write(raw)

        def _stream(self, events: Iterable[bytes], cut_after: int | None = None) -> bool:
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("cache-control", "no-cache")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            try:
                for sent, event in enumerate(events):
                    if sent == cut_after:
                        self._cut()
                        return False
                    self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):  # the client closed a stream early
                self.close_connection = True
                return False
            return True

        def _cut(self) -> None:
            """Drops the connection mid-body for real: the chunked body never ends, the socket is shut."""
            self.close_connection = True
            with contextlib.suppress(OSError):  # the client may have gone first
                self.connection.shutdown(socket.SHUT_RDWR)

    return Handler


def iter_sse(raw: bytes) -> Iterator[dict[str, Any]]:
    """Decodes SSE bytes (test helper for the payload renderers)."""
    for block in raw.decode().split("\n\n"):
        data = [line[6:] for line in block.splitlines() if line.startswith("data: ")]
        if data and data[0] != "[DONE]":
            yield json.loads(data[0])
