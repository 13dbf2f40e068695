"""Every ```python block in README.md and docs/*.md runs on its own, and its output comments are true.

The rule (also in CONTRIBUTING.md, for doc writers):

1. Each block runs alone, in a fresh namespace, as if pasted into a new interpreter: it makes its own imports
   and defines everything it uses. Blocks never depend on each other.
2. A top-level simple statement (not ``for``/``with``/``def``…) whose last line ends with ``# -> EXPECTED``
   is checked, REPL-style:
   - a bare expression (not a ``print(...)`` call): ``repr()`` of its value must equal ``EXPECTED``;
   - any other statement (``print(...)`` typically): what it wrote to stdout, without the final newline, must
     equal ``EXPECTED``.
   ``EXPECTED`` is the rest of the line after ``# -> ``, compared exactly (no trimming inside).
3. ``# ->`` anywhere else (inside a multi-line statement, in a nested block) is an error: it would silently
   check nothing.

Each block is one test, named ``<document>#<index>`` (counting from 0), so a failure says which block."""

from __future__ import annotations

import ast
import contextlib
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


def _expected(lines: list[str], lineno: int) -> str | None:
    match = ARROW.search(lines[lineno - 1])
    return None if match is None else match.group(1)


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
    # Only simple statements: the last line of a `for`/`with`/`def` block is inside the block.
    checked_lines = {stmt.end_lineno for stmt in tree.body if not hasattr(stmt, "body")}
    for number, line in enumerate(lines, start=1):
        if ARROW.search(line) and number not in checked_lines:
            raise AssertionError(f"{name} line {number}: '# ->' must end a top-level statement: {line!r}")
    namespace: dict[str, object] = {"__name__": "__doc_example__"}
    checked = 0
    for stmt in tree.body:
        assert stmt.end_lineno is not None
        expected = _expected(lines, stmt.end_lineno)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if isinstance(stmt, ast.Expr) and not _is_print(stmt):
                value = eval(compile(ast.Expression(stmt.value), name, "eval"), namespace)
                shown = repr(value)
            else:
                exec(compile(ast.Module([stmt], type_ignores=[]), name, "exec"), namespace)
                shown = out.getvalue().removesuffix("\n")
        if expected is not None:
            assert shown == expected, (
                f"{name} line {stmt.end_lineno}: shows {shown!r}, the comment says {expected!r}"
            )
            checked += 1
    return checked


@pytest.mark.parametrize(("name", "code"), BLOCKS, ids=[name for name, _ in BLOCKS])
def test_doc_block_runs_alone_and_its_output_comments_hold(name: str, code: str) -> None:
    run_block(name, code)


def test_every_user_doc_has_examples() -> None:
    for doc in DOCS:
        if doc.name in {"design.md", "dag-rules.md"}:  # rules and decisions: prose, no API to show
            continue
        assert BLOCK.search(doc.read_text(encoding="utf-8")), f"{doc.name} has no runnable example"


def test_the_checker_catches_wrong_output_and_misplaced_comments() -> None:
    """The rule is enforced, not just documented: a wrong claim fails, a right one passes."""
    assert run_block("ok", "x = [1, 2]\nx  # -> [1, 2]\nprint(len(x))  # -> 2\n") == 2
    with pytest.raises(AssertionError, match="shows '3'"):
        run_block("wrong", "print(1 + 2)  # -> 4\n")
    with pytest.raises(AssertionError, match="must end a top-level statement"):
        run_block("nested", "for i in range(2):\n    print(i)  # -> 0\n")
    with pytest.raises(NameError):
        run_block("alone", "undefined_in_a_fresh_namespace\n")
