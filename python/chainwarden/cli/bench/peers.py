"""The implementations a run can be compared with, and whether they are importable here."""

from __future__ import annotations

import importlib.metadata
import importlib.util

__all__ = ["PEERS", "available", "describe_missing", "version_of"]

# --against name -> (module that must import, distribution to name in versions and install hints)
PEERS: dict[str, tuple[str, str]] = {
    "veronica-core": ("veronica_core", "veronica-core"),
    "otel": ("opentelemetry.sdk", "opentelemetry-sdk"),
}


def available(peer: str) -> bool:
    module = PEERS[peer][0]
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):  # a parent package missing or half-installed
        return False


def version_of(peer: str) -> str | None:
    try:
        return importlib.metadata.version(PEERS[peer][1])
    except importlib.metadata.PackageNotFoundError:
        return None


def describe_missing(peer: str) -> str:
    return f"not installed (pip install {PEERS[peer][1]})"
