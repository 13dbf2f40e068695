"""Every Python example in docs/dag.md runs and its assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "dag.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)


def test_the_doc_has_examples() -> None:
    assert len(BLOCKS) >= 6


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_doc_example_runs(index: int) -> None:
    block = BLOCKS[index]
    if index > 0:
        # every example after the import line proves its claim with asserts, which exec below evaluates
        assert "assert " in block
    namespace: dict[str, object] = {}
    exec("from chainwarden.dag import DagError, ExecutionResult, Graph, Runner\n" + block, namespace)
