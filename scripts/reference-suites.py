#!/usr/bin/env python3
"""Runs veronica-core's own ExecutionContext / ExecutionGraph test files against chainwarden.

The reference's tests are not shipped in its wheel and are never copied into this repository: give this
script a checkout of veronica-core at v3.10.0 (``git clone https://github.com/amabito/veronica-core``).
Each chosen test file is copied to a temporary directory with its imports pointed at chainwarden's
equivalents (the table below: the one place where the two packages' module paths are mapped), then run with
pytest; the summary counts what passed and lists what failed. docs/containment.md "Migrating from
veronica-core" says which failures are deliberate and why.

    .venv/bin/python scripts/reference-suites.py ~/src/veronica-core            # the ExecutionContext suites
    .venv/bin/python scripts/reference-suites.py ~/src/veronica-core --graph    # the ExecutionGraph suites
    .venv/bin/python scripts/reference-suites.py ~/src/veronica-core tests/test_budget_allocator.py --tb=line
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
from pathlib import Path

# Module paths of the reference and where chainwarden keeps the same names. Modules not listed stay
# veronica-core's own (e.g. ``veronica_core.distributed``: its budget backends are third-party backends
# here, as a user would pass them; ``veronica_core.memory``: its MemoryGovernor is a governor a user
# would pass).
MODULES = {
    "veronica_core.containment.execution_context": "chainwarden.containment.execution_context",
    "veronica_core.containment.execution_graph": "chainwarden.containment.execution_graph",
    "veronica_core.containment.budget_allocator": "chainwarden.containment.budget_allocator",
    "veronica_core.containment.types": "chainwarden.containment.types",
    "veronica_core.containment": "chainwarden.containment",
    "veronica_core.shield.pipeline": "chainwarden.shield.pipeline",
    "veronica_core.shield.types": "chainwarden.shield.types",
    "veronica_core.shield.event": "chainwarden.shield.event",
    "veronica_core.shield.budget_window": "chainwarden.shield.budget_window",
    "veronica_core.circuit_breaker": "chainwarden.shield.circuit_breaker",
    "veronica_core.runtime_policy": "chainwarden.shield.policy",
    "veronica_core.partial": "chainwarden.containment.partial",
}
# ``from veronica_core import X`` for the names chainwarden exports at its top level.
TOP_LEVEL = ("ExecutionConfig", "ExecutionContext", "ExecutionGraph", "WrapOptions", "ChainMetadata")

# What the reference's own suites import beyond its API, only there: the value chainwarden has for it (its
# private constants are no part of the drop-in, so they live here rather than in the package).
PRIVATE_IMPORTS = {
    # How many finished calls a snapshot keeps (``ContextSnapshot.nodes``).
    "from veronica_core.containment.execution_context import _MAX_NODES": (
        "from chainwarden._core import MAX_RECORDS as _MAX_NODES"
    ),
}

CONTEXT_SUITES = ("tests/test_execution_context.py", "tests/test_execution_context_close.py")
GRAPH_SUITES = (
    "tests/test_execution_graph.py",
    "tests/test_execution_graph_hooks.py",
    "tests/test_execution_graph_pruning.py",
)


def point_at_chainwarden(source: str) -> str:
    """The test file's text with every mapped module path (and logger name) replaced."""
    for ref, ours in PRIVATE_IMPORTS.items():
        source = source.replace(ref, ours)
    for ref in sorted(MODULES, key=len, reverse=True):
        source = re.sub(rf"\b{re.escape(ref)}\b", MODULES[ref], source)
    names = "|".join(TOP_LEVEL)
    return re.sub(
        rf"^from veronica_core import ((?:(?:{names}),?\s*)+)$",
        r"from chainwarden import \1",
        source,
        flags=re.MULTILINE,
    )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkout", type=Path, help="a veronica-core checkout at v3.10.0")
    parser.add_argument("files", nargs="*", help="test files relative to the checkout")
    parser.add_argument("--graph", action="store_true", help="the ExecutionGraph suites instead")
    args, pytest_args = parser.parse_known_args()  # the rest goes to pytest (-k, --tb=line, ...)
    files = args.files or (GRAPH_SUITES if args.graph else CONTEXT_SUITES)
    with tempfile.TemporaryDirectory(prefix="reference-suites-") as tmp:
        # The files, and the helper modules of the reference's tests they may import (tests/_*.py).
        helpers = [p for p in (args.checkout / "tests").glob("_*.py") if p.name != "__init__.py"]
        for path in [*(args.checkout / name for name in files), *helpers]:
            (Path(tmp) / path.name).write_text(point_at_chainwarden(path.read_text()))
        command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", tmp, *pytest_args]
        return subprocess.call(command, cwd=tmp)


if __name__ == "__main__":
    sys.exit(main())
