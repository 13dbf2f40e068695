"""The Python examples in docs/ run as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[2] / "docs"


def examples(name: str) -> list[str]:
    text = (DOCS / name).read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)


@pytest.mark.parametrize("doc", ["billing.md"])
def test_doc_examples_run(doc: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    blocks = [b for b in examples(doc) if "import" in b]
    assert blocks, f"{doc} has no runnable example"
    for block in blocks:
        exec(compile(block, f"{doc}:example", "exec"), {"__name__": "__doc_example__"})
