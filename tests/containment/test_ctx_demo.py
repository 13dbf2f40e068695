"""The demo section is deterministic and shows the cost-ceiling stop (tests/test_docs.py runs the
examples of docs/containment.md)."""

import io

from chainwarden.demo import containment


def test_demo_shows_the_cost_ceiling_stop_deterministically() -> None:
    first, second = io.StringIO(), io.StringIO()
    containment.run(first)
    containment.run(second)
    text = first.getvalue()
    assert text == second.getvalue()
    assert "revise    $0.18  -> HALT" in text
    assert "budget_exceeded [HALT]" in text
    assert "steps=5 cost=$0.49 (ceiling $0.50)" in text
    assert "halted nodes: revise (halted)" in text
