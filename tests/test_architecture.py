"""ARCHITECTURE.md matches the code: every file or folder it names exists.

A name in a table is resolved the way a reader resolves it: from the repository root when it starts with a
top-level folder; else inside the folder its row names (`json/` holds `write.rs`), the folder the tree row
hangs from (`├ graph.rs` under `recorder/`), or the section's root (`## Core crate (`rust/core/src`)`);
"bindings `x.rs`" is in the binding crate."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "ARCHITECTURE.md"
BINDINGS = ROOT / "rust/py/src"  # "bindings `x.rs`" names a file of the binding crate
TOP = ("rust/", "python/", "docs/", "tests/", "scripts/", "benches/", ".github/", ".ci/")
PATH = re.compile(r"^[\w./-]+(\.(rs|py|pyi|md|sh|js|html|css|toml|yml)|/)$")
TICKED = re.compile(r"`([^`]+)`")
SECTION_ROOT = re.compile(r"^##+ .*\(`([^`]+/?[^`]*)`\)")


def _named_paths(text: str) -> list[tuple[int, str, list[Path]]]:
    """(line number, name, where it may be) for every path-like name in the document."""
    found: list[tuple[int, str, list[Path]]] = []
    base = ROOT
    parent: Path | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            match = SECTION_ROOT.match(line)
            base = ROOT / match.group(1) if match else ROOT
            parent = None
            continue
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        first = cells[0]
        in_tree = first.startswith(("├", "└"))
        row_dirs = [t for t in TICKED.findall(first) if t.endswith("/")]
        if row_dirs and not in_tree:
            parent = base / row_dirs[0]
        row_dir = (parent / row_dirs[0]) if (row_dirs and in_tree and parent) else None
        for cell in cells:
            names = TICKED.findall(cell)
            # A cell that names a full path names its neighbours by their place beside it (`json/pull.rs`
            # next to `rust/core/src/json/read.rs`).
            anchors = [a for n in names if n.startswith(TOP) for a in (ROOT / n).parents if a != ROOT]
            for name in names:
                if not PATH.match(name) or name.startswith(("http", "/")):
                    continue
                if name.startswith(TOP):
                    places = [ROOT / name]
                elif re.search(rf"bindings `{re.escape(name)}`", cell):
                    places = [BINDINGS / name]
                else:
                    places = [p / name for p in (row_dir, parent, base) if p is not None] + [
                        a / name for a in anchors
                    ]
                    if row_dirs and not in_tree:
                        places.insert(0, base / row_dirs[0] / name)
                found.append((number, name, places))
    return found


def _missing(text: str) -> list[str]:
    named = _named_paths(text)
    return [f"line {number}: {name}" for number, name, places in named if not any(p.exists() for p in places)]


def test_every_path_architecture_md_names_exists() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert len(_named_paths(text)) > 40, (
        "the checker found too few names: its parsing no longer fits the document"
    )
    missing = _missing(text)
    assert missing == [], "ARCHITECTURE.md names what does not exist:\n" + "\n".join(missing)


def test_the_checker_reports_a_stale_name_and_accepts_the_real_ones() -> None:
    doc = (
        "## Core crate (`rust/core/src`)\n\n| module | holds |\n|---|---|\n"
        "| `recorder/` | the call graph | bindings `recorder/hooks.rs` |\n"
        "| ├ `graph.rs` | `Graph` |\n| ├ `gone.rs` | removed long ago |\n"
        "| `json/` | `mod.rs`, `write.rs`, `nowhere.rs` |\n"
    )
    assert _missing(doc) == ["line 7: gone.rs", "line 8: nowhere.rs"]
