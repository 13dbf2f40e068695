"""Optional dependencies: import a framework only when an integration is used.

The core package has no required third-party dependency; each integration names the extra that installs its
framework, so a missing one fails with an actionable message instead of a bare ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["require"]


def require(module: str, extra: str) -> ModuleType:
    """Imports ``module`` or raises ``ImportError`` telling which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"{module} is not installed; install it with: pip install 'chainwarden[{extra}]'"
        ) from exc
