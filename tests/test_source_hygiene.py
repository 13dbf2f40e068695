"""Comments and docs cite this repository, not its history (the decisions live in docs/design.md): no issue
numbers, no dated runs, and every docs heading or § a comment points at exists.

- An issue reference is `issue 10`, `issues 10 and 11`, `issue #22`, `PR 3`, `(#12)`, `see #12` or a Markdown
  table cell `| #10 |`. Not one: CSS colours (`#fff`, `#333`), `#[derive]`, Markdown headings, `#!/`,
  `# noqa`, Mermaid entity codes (`#35;`).
- A dated run is an ISO date (`2026-11-25`, not `gpt-4o-2024-08-06` nor a timestamp `2026-11-25T08:00`) or a
  clock time of a run (`17:44 UTC`, `the 17:44 run`). History lives in `benches/results/<date>.json`, which
  may be named by its file name.
- A heading reference is `docs/<file>.md "Heading"` (also with a comma or an opening bracket between, and
  across a line break of a comment) or `benches/README.md "Heading"`: the file has a heading with that title
  (backticks dropped; a title may stop before the heading's `:` or ` (`), or a paragraph that opens with it in
  bold (`**Reading a file.**`). `docs/design.md §N` names a numbered decision of docs/design.md,
  `docs/dag-rules.md §N.M` a section of the rules; a bare `§N` one of either."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SELF = Path(__file__).resolve()
TREES = ("python", "rust", "benches", "scripts", "docs", ".ci", ".github")
FILES = ("README.md", "ARCHITECTURE.md", "CONTRIBUTING.md", "Makefile")
SUFFIXES = {".py", ".pyi", ".rs", ".sh", ".md", ".toml", ".yml", ".yaml", ".js", ".css", ".html", ".sql", ""}
SKIP_PARTS = {"target", "__pycache__", "results", "node_modules"}

ISSUE = re.compile(
    r"\bissues?\s+#?\d+"  # issue 10, Issues 10 and 11, issue #22
    r"|\b(?:PR|pull request|ticket)\s+#?\d+"
    r"|\(#\d+[,)]"  # (#12), (#12, #13)
    r"|\b(?:see|in|per|from|since|after|before|of|by)\s+#\d+\b"
    r"|^\s*\|\s*#\d+\s*\|",  # a table cell naming an issue
    re.IGNORECASE | re.MULTILINE,
)
DATED = re.compile(
    r"(?<![\w-])20\d\d-[01]\d-[0-3]\d(?![\w-]|\.json)"
    r"|\b\d{1,2}:\d{2}(?::\d{2})?\s*UTC\b"
    r"|\bthe \d{1,2}:\d{2} run\b",
)
HEADING_REF = re.compile(
    r"((?:docs/[\w-]+|benches/README)\.md)(?!\"),?[ \t]*(?:\n[ \t]*(?:#|//[/!]?|\*|--)?[ \t]*)?[(\[]?"
    r"\"([^\"\s,][^\"\n]*(?:\n[ \t]*(?:#|//[/!]?|\*)?[ \t]*[^\"\n]+)?)\""
)
CONTINUATION = re.compile(r"\s*\n[ \t]*(?:#|//[/!]?|\*)?[ \t]*")
SECTION_REF = re.compile(r"(?:(docs/[\w-]+\.md),?\s+)?§§?\s?(\d+(?:\.\d+)?)(?:\s?[\u2013-]\s?(\d+))?")


def _files(trees: tuple[str, ...] = TREES, files: tuple[str, ...] = FILES) -> Iterator[Path]:
    for tree in trees:
        for path in sorted((ROOT / tree).rglob("*")):
            rel = path.relative_to(ROOT).parts
            # This file names what it looks for.
            if (
                path.is_file()
                and path != SELF
                and path.suffix in SUFFIXES
                and not SKIP_PARTS.intersection(rel)
            ):
                yield path
    for name in files:
        yield ROOT / name


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return ""


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _issue_references(text: str) -> list[str]:
    return [m.group(0).strip() for m in ISSUE.finditer(text)]


def _dated_runs(text: str) -> list[str]:
    return [m.group(0) for m in DATED.finditer(text)]


def _titles(doc: Path) -> set[str]:
    """Every heading title of a Markdown file (outside code blocks), and every bold paragraph opener."""
    titles: set[str] = set()
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if heading:
            title = heading.group(1).replace("`", "")
            titles.add(title)
            titles.update(title[: m.start()] for m in re.finditer(r":\s| \(", title))
        bold = re.match(r"\s*(?:[-*]\s+)?\*\*(.+?)\.?\*\*", line)
        if bold:
            titles.add(bold.group(1).replace("`", ""))
    return titles


def _design_numbers() -> set[str]:
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    return set(re.findall(r"^(\d+)\. ", text, re.MULTILINE))


def _rules_numbers() -> set[str]:
    text = (ROOT / "docs" / "dag-rules.md").read_text(encoding="utf-8")
    return set(re.findall(r"^#+ §(\d+(?:\.\d+)?) ", text, re.MULTILINE))


def _broken_references(text: str) -> list[str]:
    broken = []
    titles: dict[str, set[str]] = {}
    for m in HEADING_REF.finditer(text):
        doc, title = m.group(1), CONTINUATION.sub(" ", m.group(2)).replace("`", "")
        path = ROOT / doc
        if doc not in titles:
            titles[doc] = _titles(path) if path.is_file() else set()
        if title not in titles[doc]:
            broken.append(f'line {_line(text, m.start())}: {doc} "{title}"')
    design, rules = _design_numbers(), _rules_numbers()
    known = {"docs/design.md": design, "docs/dag-rules.md": rules}
    for m in SECTION_REF.finditer(text):
        doc, first, last = m.group(1), m.group(2), m.group(3)
        if doc is not None and doc not in known:
            broken.append(f"line {_line(text, m.start())}: {doc} has no numbered sections")
            continue
        where = known[doc] if doc else design | rules
        for number in (first, last):
            if number is not None and number not in where:
                broken.append(f"line {_line(text, m.start())}: {doc or 'docs/design.md'} §{number}")
    return broken


def _scan(check: Callable[[str], list[str]]) -> list[str]:
    found = []
    for path in _files():
        for hit in check(_text(path)):
            found.append(f"{path.relative_to(ROOT)}: {hit}")
    return found


def test_no_issue_numbers_in_code_comments_or_docs() -> None:
    found = _scan(_issue_references) + [
        f"{p.relative_to(ROOT)}: {hit}" for p in _files(("tests",), ()) for hit in _issue_references(_text(p))
    ]
    assert found == [], 'cite docs/design.md §N or docs/<file>.md "Heading" instead:\n' + "\n".join(found)


def test_no_dated_runs_in_code_comments_or_docs() -> None:
    found = _scan(_dated_runs)
    assert found == [], "dated runs belong in benches/results/<date>.json:\n" + "\n".join(found)


def test_every_docs_heading_and_section_a_comment_names_exists() -> None:
    texts = [(p, _text(p)) for p in _files((*TREES, "tests"), FILES)]
    # The patterns still fit how the tree cites its docs (hundreds of each today).
    assert sum(len(HEADING_REF.findall(text)) for _, text in texts) > 100
    assert sum(len(SECTION_REF.findall(text)) for _, text in texts) > 100
    found = [f"{p.relative_to(ROOT)}: {hit}" for p, text in texts for hit in _broken_references(text)]
    assert found == [], "references to headings or sections that do not exist:\n" + "\n".join(found)


def test_the_issue_pattern_finds_issues_and_nothing_else() -> None:
    issues = [
        "(issue 10)",
        "the speed goals of issues 10 and 11",
        "Workers (issue #22), side by side",
        'benches/README.md "Issues 10 and 11"',
        "fixed in (#12)",
        "see #4 for why",
        "| #10 | fan-out within 2x | 7.7x |",
        "landed with PR 7",
    ]
    for text in issues:
        assert _issue_references(text), text
    clean = [
        "color: #fff; border: 1px solid #333;",
        "background: #1a1a1a",
        "#[derive(Debug, Clone)]",
        "#![allow(clippy::needless_pass_by_value)]",
        "## 3. Leaves\n### §1.2 Structural rule",
        "#!/usr/bin/env bash",
        "import x  # noqa: F401",
        '"#35;1 #91;x#93;#124;#123;y#125;#40;z#41;"',
        'm.create_node("agent_message", content="<b>5 #1</b>")',
        "docs/design.md §20, the issue of cost",
        "a tissue 3 layers thick",
    ]
    for text in clean:
        assert _issue_references(text) == [], text


def test_the_dated_run_pattern_finds_dates_and_times_of_runs_only() -> None:
    for text in ("the 2026-11-25 run", "2026-11-24 01:48 UTC", "at 19:16 UTC", "since the 17:44 run"):
        assert _dated_runs(text), text
    for text in (
        'model="gpt-4o-2024-08-06"',
        '"started_at": "2026-11-18T08:00:00+00:00"',
        "benches/results/2026-11-25.json",
        "datetime(2026, 11, 18, 8, 0, tzinfo=UTC)",
        "a 10:1 ratio",
    ):
        assert _dated_runs(text) == [], text


def test_the_reference_check_reports_missing_headings_and_sections() -> None:
    text = (
        '# docs/dag.md "Leases" and docs/dag.md "Mutations are atomic"\n'
        '# docs/dag.md "Reading a file" (a bold paragraph opener)\n'
        '# docs/integrations.md, "One line: chainwarden.instrument()"\n'
        '# docs/billing.md, "Money follows what\n# happened" across a line break\n'
        '# docs/dag.md "No such heading"\n'
        "# docs/design.md §20 and §29\u201333, docs/dag-rules.md §5.2\n"
        "# docs/design.md §999, docs/dag-rules.md §99.1\n"
        'SDIST = ("docs/recorder.md",\n    "pyproject.toml")\n'
    )
    assert _broken_references(text) == [
        'line 6: docs/dag.md "No such heading"',
        "line 8: docs/design.md §999",
        "line 8: docs/dag-rules.md §99.1",
    ]
