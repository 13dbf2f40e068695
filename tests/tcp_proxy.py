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
            pair = _Pair(client, server)
            threading.Thread(target=self._pump, args=(pair, client, server, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(pair, server, client, False), daemon=True).start()

    def _pump(self, pair: _Pair, source: socket.socket, sink: socket.socket, from_client: bool) -> None:
        try:
            while True:
                chunk = source.recv(65536)
                if not chunk:
                    break
                if not from_client:
                    if not pair.forward(sink, chunk):
                        break
                    continue
                mode = self._take(chunk)
                if mode == "before_commit":
                    self.cuts.append(mode)
                    break
                if mode == "after_commit":
                    # Muted first: the server's answer must not reach the client even when this thread is
                    # descheduled between forwarding the COMMIT and cutting (under load it was, and the
                    # client heard "committed" before the cut).
                    pair.mute()
                    self.cuts.append(mode)
                sink.sendall(chunk)
                if mode == "after_commit":
                    break
        except OSError:
            pass
        finally:
            pair.done()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self._listener.close()
        for sock in self._sockets:
            # shutdown wakes a pump blocked in recv (its pair then closes both sockets); a close from here
            # could free a descriptor number a pump is about to use.
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class _Pair:
    """The two sockets of one proxied connection. The first pump to stop shuts both down (which wakes the
    other); only the last one closes them: a socket closed while the other pump still held its descriptor
    number let that pump shut down whichever new connection was given the number next."""

    def __init__(self, client: socket.socket, server: socket.socket) -> None:
        self._sockets = (client, server)
        self._running = 2
        self._muted = False
        self._lock = threading.Lock()

    def mute(self) -> None:
        """Nothing more from the server reaches the client."""
        with self._lock:
            self._muted = True

    def forward(self, client: socket.socket, chunk: bytes) -> bool:
        with self._lock:
            if self._muted:
                return False
            client.sendall(chunk)
            return True

    def done(self) -> None:
        for sock in self._sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        with self._lock:
            self._running -= 1
            last = self._running == 0
        if last:
            for sock in self._sockets:
                sock.close()
