"""A TCP proxy on 127.0.0.1 in front of a PostgreSQL unix socket, that can cut a connection exactly around a
COMMIT: `arm("after_commit")` forwards the next client message carrying a COMMIT to the server and then closes
both sides before any answer comes back (the commit happens, the client never hears of it);
`arm("before_commit")` closes both sides instead of forwarding it (the commit never happens). One cut per
`arm`; every other byte passes unchanged, and new connections are accepted throughout."""

from __future__ import annotations

import contextlib
import socket
import threading


class CommitCutter:
    def __init__(self, unix_socket: str) -> None:
        self._target = unix_socket
        self._listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port: int = self._listener.getsockname()[1]
        self._mode: str | None = None
        self._lock = threading.Lock()
        self.cuts: list[str] = []
        self._closed = False
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="commit-cutter").start()

    def url(self, schema: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres?options=-csearch_path%3D{schema}"

    def arm(self, mode: str) -> None:
        assert mode in ("after_commit", "before_commit")
        with self._lock:
            self._mode = mode

    def _take(self, chunk: bytes) -> str | None:
        # An extended-protocol Parse of "COMMIT" or a simple Query "COMMIT": the statement text, NUL-ended.
        if b"COMMIT\x00" not in chunk:
            return None
        with self._lock:
            mode, self._mode = self._mode, None
        return mode

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                server.connect(self._target)
            except OSError:
                client.close()
                continue
            self._sockets += [client, server]
            threading.Thread(target=self._pump, args=(client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, False), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                mode = self._take(chunk) if from_client else None
                if mode == "before_commit":
                    self.cuts.append(mode)
                    break
                sink.sendall(chunk)
                if mode == "after_commit":
                    self.cuts.append(mode)
                    break
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.close()
