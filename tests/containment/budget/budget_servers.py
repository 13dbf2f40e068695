"""Real servers for the shared-budget tests: a throwaway redis-server on a unix socket in a temp dir (Debian's
package, found or installed by scripts/redis-path.sh), and the PostgreSQL server of `make test`."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from chainwarden.containment import PostgresBudgetBackend, RedisBudgetBackend

SCRIPTS = Path(__file__).resolve().parents[3] / "scripts"


def redis_binary() -> str:
    for candidate in (os.environ.get("CHAINWARDEN_REDIS_SERVER", ""), "/usr/bin/redis-server"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("no redis-server: run the tests through scripts/test-python.sh, which installs it")


class RedisServer:
    """One redis-server process; ``stop`` and ``start`` take it away and bring it back on the same socket.

    ``persistent`` runs it with an append-only file synced on every write (what docs/containment.md asks
    of a budget's server), else it keeps nothing across a restart; ``password`` requires that password
    (its ``url`` then carries it)."""

    def __init__(self, *, persistent: bool = False, password: str | None = None) -> None:
        self.dir = tempfile.mkdtemp(prefix="cw-redis.")
        self.socket = f"{self.dir}/redis.sock"
        self.url = f"unix://:{password}@{self.socket}" if password else f"unix://{self.socket}"
        self._persistent = persistent
        self._password = password
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        if self._proc is not None:
            return
        self._proc = subprocess.Popen(
            [
                redis_binary(),
                "--port", "0",
                "--unixsocket", self.socket,
                "--unixsocketperm", "700",
                "--dir", self.dir,
                "--save", "",
                "--appendonly", "yes" if self._persistent else "no",
                "--appendfsync", "always",
                "--daemonize", "no",
                *(["--requirepass", self._password] if self._password else []),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )  # fmt: skip
        deadline = time.monotonic() + 10
        while not os.path.exists(self.socket):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.01)
        # Listening is not serving: a server that loads its append-only file answers LOADING meanwhile.
        client = redis.Redis(unix_socket_path=self.socket, password=self._password, socket_timeout=5)
        try:
            while True:
                try:
                    client.ping()
                    return
                except redis.BusyLoadingError:
                    if time.monotonic() > deadline:
                        raise RuntimeError("redis-server did not finish loading its data") from None
                    time.sleep(0.01)
        finally:
            client.close()

    def stop(self) -> None:
        if self._proc is None:
            return
        self._proc.terminate()
        self._proc.wait(timeout=10)
        self._proc = None
        Path(self.socket).unlink(missing_ok=True)

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def fresh_key() -> str:
    return f"budget-{uuid.uuid4().hex[:12]}"


def make_backend(kind: str, url: str, key: str, **kwargs: Any) -> Any:
    cls = RedisBudgetBackend if kind == "redis" else PostgresBudgetBackend
    return cls(url, key=key, **kwargs)
