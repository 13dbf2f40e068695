"""The DagError family, created by the native module so the engine raises them directly."""

from chainwarden._core import (
    DagEdgeError,
    DagError,
    DagInvalidArgumentError,
    DagNotFoundError,
    DagPreconditionError,
)

__all__ = [
    "DagEdgeError",
    "DagError",
    "DagInvalidArgumentError",
    "DagNotFoundError",
    "DagPreconditionError",
]


def invalid_argument(message: str) -> DagInvalidArgumentError:
    """The error the Python layer raises for its own argument checks, same code as the engine's."""
    err = DagInvalidArgumentError(message)
    err.code = "dag.invalid_argument"
    return err
