"""Fixtures for the integration tests: a local fake OpenAI / Anthropic server, an in-memory OTel SDK."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from .fake_provider import FakeProvider


@pytest.fixture(autouse=True)
def _collect_after_each_test() -> Iterator[None]:
    """Collects each test's garbage before the next test starts.

    A client a test leaves unclosed holds an open socket; found by a later, unrelated collection, its
    ResourceWarning would fail whichever test happened to be running then. Collected here it fails the test
    that left it, every time.
    """
    yield
    gc.collect()


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A ``FakeProvider`` on 127.0.0.1, started for the test and stopped after it."""
    with FakeProvider() as fake:
        yield fake


@dataclass
class Spans:
    """A real SDK ``TracerProvider`` exporting synchronously to memory."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def by_node(self) -> dict[str, ReadableSpan]:
        return {
            str(attrs["chainwarden.node_id"]): s
            for s in self.finished()
            if "chainwarden.node_id" in (attrs := s.attributes or {})
        }


@pytest.fixture
def spans() -> Iterator[Spans]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Spans(provider, exporter)
    provider.shutdown()
