"""Every ```python block in README.md and docs/*.md runs on its own, and its output comments are true.

The rule (also in CONTRIBUTING.md, for doc writers):

1. Each block runs alone, in a fresh namespace, as if pasted into a new interpreter: it makes its own imports
   and defines everything it uses. Blocks never depend on each other.
2. Output comments ``# -> EXPECTED`` (``EXPECTED`` is the rest of the line, compared exactly):
   - at the end of a top-level simple statement, REPL-style: for a bare expression (not a ``print(...)``)
     ``repr()`` of its value must equal ``EXPECTED``; for any other statement what it wrote to stdout, without
     the final newline;
   - anywhere else (inside a ``for``/``try``/``async def`` body, or on a comment-only line after the statement
     that prints): each such comment must equal a line the block prints, in the order of the comments, after
     the line matched by the comment before it. Lines printed without a comment are allowed.
3. So a comment that claims output which never appears (inside a function that is never called, say) fails:
   no comment can silently check nothing.

Each block is one test, named ``<document>#<index>`` (counting from 0), so a failure says which block."""

from __future__ import annotations

import ast
import contextlib
import gc
import io
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
ARROW = re.compile(r"#\s*->\s?(.*)$")


def _blocks() -> list[tuple[str, str]]:
    found = []
    for doc in DOCS:
        for i, code in enumerate(BLOCK.findall(doc.read_text(encoding="utf-8"))):
            found.append((f"{doc.name}#{i}", code))
    return found


BLOCKS = _blocks()


def _is_print(node: ast.stmt) -> bool:
    return (
        isinstance(node, ast.Expr)
        and isinstance(node.value, ast.Call)
        and isinstance(node.value.func, ast.Name)
        and node.value.func.id == "print"
    )


def run_block(name: str, code: str) -> int:
    """Runs one block as the docstring says; returns how many output comments it checked."""
    tree = ast.parse(code, filename=name)
    lines = code.splitlines()
    strict = {stmt.end_lineno for stmt in tree.body if not hasattr(stmt, "body")}
    loose = [
        (number, m.group(1))
        for number, line in enumerate(lines, start=1)
        if (m := ARROW.search(line)) is not None and number not in strict
    ]
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    printed: list[str] = []
    checked = 0
    for stmt in tree.body:
        assert stmt.end_lineno is not None
        match = ARROW.search(lines[stmt.end_lineno - 1]) if stmt.end_lineno in strict else None
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if isinstance(stmt, ast.Expr) and not _is_print(stmt):
                value = eval(compile(ast.Expression(stmt.value), name, "eval"), namespace)
                shown = repr(value)
            else:
                exec(compile(ast.Module([stmt], type_ignores=[]), name, "exec"), namespace)
                shown = out.getvalue().removesuffix("\n")
        printed.extend(out.getvalue().splitlines())
        if match is not None:
            expected = match.group(1)
            assert shown == expected, (
                f"{name} line {stmt.end_lineno}: shows {shown!r}, the comment says {expected!r}"
            )
            checked += 1
    cursor = 0
    for number, expected in loose:
        try:
            cursor = printed.index(expected, cursor) + 1
        except ValueError:
            raise AssertionError(
                f"{name} line {number}: the comment says {expected!r}, but the block printed no such line "
                f"after the previous comment's; it printed {printed!r}"
            ) from None
        checked += 1
    return checked


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_doc_block_runs_alone_and_its_output_comments_hold(name: str, code: str) -> None:
    run_block(name, code)
    # What the block left open is reported here, against this block (Python 3.13 warns about a SQLite
    # connection collected unclosed), not against whichever later test happens to collect it.
    gc.collect()


def test_every_user_doc_has_examples() -> None:
    for doc in DOCS:
        if doc.name in {"design.md", "dag-rules.md"}:  # rules and decisions: prose, no API to show
            continue
        assert BLOCK.search(doc.read_text(encoding="utf-8")), f"{doc.name} has no runnable example"


def test_the_checker_catches_wrong_output_and_misplaced_comments() -> None:
    """The rule is enforced, not just documented: a wrong claim fails, a right one passes."""
    assert run_block("ok", "x = [1, 2]\nx  # -> [1, 2]\nprint(len(x))  # -> 2\n") == 2
    assert run_block("loop", "for i in range(2):\n    print(i)  # -> 0\n# -> 1\n") == 2
    with pytest.raises(AssertionError, match="shows '3'"):
        run_block("wrong", "print(1 + 2)  # -> 4\n")
    with pytest.raises(AssertionError, match="printed no such line"):
        run_block("out of order", "for i in range(2):\n    print(i)  # -> 1\n# -> 0\n")
    with pytest.raises(AssertionError, match="printed no such line"):
        run_block("never", "def f() -> None:\n    print(1)  # -> 1\n")
    with pytest.raises(NameError):
        run_block("alone", "undefined_in_a_fresh_namespace\n")
