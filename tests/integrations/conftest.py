"""Fixtures for the integration tests: a local fake OpenAI / Anthropic server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_provider import FakeProvider


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A ``FakeProvider`` on 127.0.0.1, started for the test and stopped after it."""
    with FakeProvider() as fake:
        yield fake
