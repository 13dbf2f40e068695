"""`chainwarden demo --only dag` tells the story it promises, deterministically."""

from __future__ import annotations

import io

from chainwarden.cli import main
from chainwarden.demo import dag


def test_demo_story_and_mermaid() -> None:
    out = io.StringIO()
    dag.run(out)
    text = out.getvalue()
    assert "planner attempt 1: errored (ConnectionError: LLM endpoint rate-limited)" in text
    assert "tool-rome   errored   TimeoutError: weather service timed out for Rome" in text
    assert "propagation: compare skipped, blocked by ['tool-rome']" in text
    assert "dag.retry.downstream_not_pending" in text
    assert "N1 -->|branch:retry| N2" in text  # planner attempt 1 -> 2, ids by creation order
    assert text.count("flowchart TD") == 1
    second = io.StringIO()
    dag.run(second)
    assert second.getvalue() == text


def test_cli_runs_only_the_dag_section(capsys: object) -> None:
    assert main(["demo", "--only", "dag"]) == 0
    captured = capsys.readouterr()  # type: ignore[attr-defined]
    assert captured.out.startswith("== dag ==")
