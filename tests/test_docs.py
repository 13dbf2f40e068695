"""Every ```python block in README.md and docs/*.md runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)


def blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for i, code in enumerate(BLOCK.findall(doc.read_text())):
            found.append((f"{doc.relative_to(ROOT)}#{i}", code))
    return found


@pytest.mark.parametrize(("where", "code"), blocks(), ids=[w for w, _ in blocks()])
def test_doc_example_runs(where: str, code: str) -> None:
    exec(compile(code, where, "exec"), {"__name__": "__doc_example__"})
