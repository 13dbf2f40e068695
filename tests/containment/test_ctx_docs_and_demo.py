"""The documentation's examples run as written; the demo is deterministic."""

import io
import re
from pathlib import Path

import pytest

from chainwarden.demo import containment

DOC = Path(__file__).resolve().parents[2] / "docs" / "containment.md"
EXAMPLES = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.DOTALL)


def test_doc_has_examples() -> None:
    assert len(EXAMPLES) >= 5


@pytest.mark.parametrize("source", EXAMPLES, ids=[f"example-{i}" for i in range(len(EXAMPLES))])
def test_doc_example_runs(source: str) -> None:
    exec(compile(source, str(DOC), "exec"), {"__name__": "doc_example"})


def test_demo_shows_the_cost_ceiling_stop_deterministically() -> None:
    first, second = io.StringIO(), io.StringIO()
    containment.run(first)
    containment.run(second)
    text = first.getvalue()
    assert text == second.getvalue()
    assert "revise    $0.18  -> HALT" in text
    assert "budget_exceeded [HALT]" in text
    assert "steps=5 cost=$0.49 (ceiling $0.50)" in text
