"""Fixtures of the shared-budget tests: each backend on a real server, under a fresh budget key."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from budget_servers import RedisServer, fresh_key, make_backend
from postgres_server import postgres_dsn


@pytest.fixture(scope="module")
def redis_server() -> Iterator[RedisServer]:
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A server this test alone uses, so it may stop it."""
    server = RedisServer()
    server.start()
    try:
        yield server
    finally:
        server.remove()


@pytest.fixture(params=["redis", "postgres"])
def backend_spec(request: pytest.FixtureRequest) -> tuple[str, str]:
    """(kind, url) of a real server for each backend."""
    if request.param == "redis":
        server: RedisServer = request.getfixturevalue("redis_server")
        return "redis", server.url
    return "postgres", postgres_dsn()


@pytest.fixture
def backend(backend_spec: tuple[str, str]) -> Iterator[Any]:
    b = make_backend(*backend_spec, fresh_key())
    try:
        yield b
    finally:
        b.reset()
        b.close()
