"""The benchmark history under benches/results/ is data: every file is strict JSON, a list of runs' figures
with the keys benches/README.md promises, named for the day it holds."""

from __future__ import annotations

import json
import re
from numbers import Real
from pathlib import Path

import pytest

RESULTS = Path(__file__).resolve().parents[1] / "benches" / "results"
REQUIRED = ("goal", "figure", "unit", "peer", "ratio", "command", "load", "notes")
FILES = sorted(RESULTS.glob("*.json"))


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _problems(path: Path) -> list[str]:
    """What is wrong with one results file (empty when nothing is)."""
    if not re.fullmatch(r"\d{4}-\d{2}-\d{2}\.json", path.name):
        return [f"{path.name}: not named <YYYY-MM-DD>.json"]
    try:
        rows = json.loads(path.read_text(encoding="utf-8"), parse_constant=_no_constant)
    except ValueError as error:
        return [f"{path.name}: not strict JSON: {error}"]
    if not isinstance(rows, list) or not rows:
        return [f"{path.name}: not a non-empty list"]
    problems = []
    for i, row in enumerate(rows):
        where = f"{path.name}[{i}]"
        if not isinstance(row, dict):
            problems.append(f"{where}: not an object")
            continue
        missing = [key for key in REQUIRED if key not in row]
        if missing:
            problems.append(f"{where}: missing {missing}")
            continue
        for key in ("goal", "unit", "command", "load"):
            if not isinstance(row[key], str) or not row[key]:
                problems.append(f"{where}: {key} is not a non-empty string")
        if not isinstance(row["notes"], str):
            problems.append(f"{where}: notes is not a string")
        if row["peer"] is not None and not isinstance(row["peer"], str):
            problems.append(f"{where}: peer is neither a string nor null")
        for key in ("figure", "ratio"):
            value = row[key]
            if value is not None and (isinstance(value, bool) or not isinstance(value, Real)):
                problems.append(f"{where}: {key} is neither a number nor null")
        if row["figure"] is None:
            problems.append(f"{where}: figure is null")
        if row["ratio"] is not None and not isinstance(row.get("ratio_of"), str):
            problems.append(f"{where}: a ratio without ratio_of (which way it divides)")
        if "met" in row and not isinstance(row["met"], bool):
            problems.append(f"{where}: met is not a bool")
        if "time" in row and not re.fullmatch(r"\d{2}:\d{2}", str(row["time"])):
            problems.append(f"{where}: time is not HH:MM (UTC)")
    return problems


def test_there_is_a_history() -> None:
    assert len(FILES) >= 2, f"expected the dated benchmark history under {RESULTS}"


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_results_file_is_strict_json_with_the_promised_keys(path: Path) -> None:
    assert _problems(path) == []


def test_the_checker_refuses_what_is_not_a_result(tmp_path: Path) -> None:
    good = {key: "x" for key in REQUIRED} | {"figure": 1.5, "ratio": None, "peer": None}
    cases = {
        "2026-01-01.json": json.dumps([good]),
        "2026-01-02.json": '[{"goal": "g", "figure": NaN}]',
        "2026-01-03.json": json.dumps([{k: v for k, v in good.items() if k != "command"}]),
        "2026-01-04.json": json.dumps([good | {"ratio": 2.0}]),
        "2026-01-05.json": json.dumps([good | {"figure": "fast"}]),
        "2026-01-06.json": "[]",
        "latest.json": json.dumps([good]),
    }
    for name, text in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    found = {name: _problems(tmp_path / name) for name in cases}
    assert found["2026-01-01.json"] == []
    assert "not strict JSON" in found["2026-01-02.json"][0]
    assert found["2026-01-03.json"] == ["2026-01-03.json[0]: missing ['command']"]
    assert found["2026-01-04.json"] == ["2026-01-04.json[0]: a ratio without ratio_of (which way it divides)"]
    assert found["2026-01-05.json"] == ["2026-01-05.json[0]: figure is neither a number nor null"]
    assert found["2026-01-06.json"] == ["2026-01-06.json: not a non-empty list"]
    assert found["latest.json"] == ["latest.json: not named <YYYY-MM-DD>.json"]
