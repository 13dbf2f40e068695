"""Typed stub of the native module (checked against the binary by mypy.stubtest)."""

__all__ = ["__version__"]

__version__: str
