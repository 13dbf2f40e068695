"""The DagError family, created by the native module so the engine raises them directly.

`DAG_ERROR_CODES` is the core's registry (every code -> its class); codes are never written here
(docs/design.md §28)."""

from chainwarden._core import (
    DAG_ERROR_CODES,
    DagEdgeError,
    DagError,
    DagInvalidArgumentError,
    DagNotFoundError,
    DagPreconditionError,
)

__all__ = [
    "DAG_ERROR_CODES",
    "DagEdgeError",
    "DagError",
    "DagInvalidArgumentError",
    "DagNotFoundError",
    "DagPreconditionError",
]


def invalid_argument(message: str, *, argument: str | None = None) -> DagInvalidArgumentError:
    """The error the Python layer raises for its own argument checks, naming the argument; the class carries
    its only code."""
    return DagInvalidArgumentError(message, argument=argument)
