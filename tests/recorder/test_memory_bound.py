"""docs/design.md §27: with `max_nodes=N`, RSS stays flat once N is reached — pruned nodes'
slots, names, metadata and stop reasons are freed or reused, not only uncounted.

Each run is a real subprocess measured with psutil, so nothing else in the test session
(other graphs, hypothesis caches) moves the figure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PROBE = Path(__file__).with_name("_rss_probe.py")
MAX_NODES = 1000
# Allocator noise, not growth: 1.8M nodes at even 8 bytes each would be 14 MB.
ALLOWED_GROWTH = 4 * 1024 * 1024


def probe(mode: str, first: int, total: int) -> tuple[int, int, int]:
    """(RSS growth between the checkpoints, live nodes, pruned nodes)."""
    out = subprocess.run(
        [sys.executable, str(PROBE), mode, str(first), str(total), str(MAX_NODES)],
        capture_output=True,
        text=True,
        timeout=100,
        check=True,
    )
    r = json.loads(out.stdout)
    before, after = r["rss"]
    return int(after) - int(before), int(r["live"]), int(r["pruned"])


@pytest.mark.slow
@pytest.mark.timeout(110)
def test_rss_is_flat_from_200k_to_2m_nodes() -> None:
    growth, live, pruned = probe("same", 200_000, 2_000_000)
    assert live == MAX_NODES
    assert pruned == 2_000_002 - MAX_NODES  # root and the long-running call stay
    assert growth < ALLOWED_GROWTH, f"RSS grew by {growth / 1e6:.1f} MB"


@pytest.mark.slow
@pytest.mark.timeout(110)
def test_rss_is_flat_with_unique_names_and_metadata_per_node() -> None:
    growth, live, _ = probe("unique", 200_000, 1_000_000)
    assert live == MAX_NODES
    assert growth < ALLOWED_GROWTH, f"RSS grew by {growth / 1e6:.1f} MB"
