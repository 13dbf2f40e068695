"""Where ExecutionContext gets its call graph from.

TEMPORARY until the native ExecutionGraph lands on main: tests may install a stand-in here.
"""

from __future__ import annotations

from typing import Any

from chainwarden import _core

ExecutionGraph: Any = getattr(_core, "ExecutionGraph", None)
