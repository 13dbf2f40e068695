"""`bench_graph.py`'s finished call, counted in instructions (benches/README.md "Call graph").

    .venv/bin/python benches/record_instructions.py            # every form under callgrind, then the ratios
    valgrind --tool=callgrind .venv/bin/python benches/record_instructions.py FORM N   # one form, one length

A timed ratio on a shared machine moves with its load; an instruction count does not. Each form runs
its loop (the same calls as `bench_graph.py`'s `test_finished_call`) once at a short and once at a long
length; its cost per call is the difference of the two counts over the difference of the lengths, less
the same for the empty loop (`rows` less building the rows, `rows-built`).
FORM: record, three, rows, rows-built, veronica, empty.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from bench_graph import dict_rows, lifecycle_loop, record_loop
from veronica_core.containment import ExecutionGraph as VeronicaGraph

from chainwarden import ExecutionGraph

# veronica-core costs ~25x more a call: a shorter loop keeps its runs under valgrind to seconds.
LENGTHS = {"veronica": (500, 5_500)}
DEFAULT_LENGTHS = (1_000, 21_000)


def record(n: int) -> None:
    g = ExecutionGraph()
    record_loop(g, g.create_root("run"), n)


def three(g: Any, n: int) -> None:
    lifecycle_loop(g, g.create_root("run"), n)


def rows(n: int) -> None:
    g = ExecutionGraph()
    g.record_calls(dict_rows(g.create_root("run"), n))


def rows_built(n: int) -> None:
    g = ExecutionGraph()
    dict_rows(g.create_root("run"), n)


def veronica(n: int) -> None:
    three(VeronicaGraph(), n)


def empty(n: int) -> None:
    for _ in range(n):
        pass


FORMS: dict[str, Callable[[int], None]] = {
    "record": record,
    "three": lambda n: three(ExecutionGraph(), n),
    "rows": rows,
    "rows-built": rows_built,
    "veronica": veronica,
    "empty": empty,
}


def count(form: str, n: int) -> int:
    """Instructions of one run of `form` at length `n` under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                __file__,
                form,
                str(n),
            ],
            capture_output=True,
            text=True,
            check=True,
            env=os.environ | {"PYTHONHASHSEED": "0"},
        )
    match = re.search(r"refs:\s*([\d,]+)", out.stderr)
    if match is None:
        raise SystemExit(f"no instruction count from callgrind for {form} {n}:\n{out.stderr}")
    return int(match.group(1).replace(",", ""))


def per_call(form: str) -> float:
    short, long = LENGTHS.get(form, DEFAULT_LENGTHS)
    return (count(form, long) - count(form, short)) / (long - short)


def main() -> None:
    loop = per_call("empty")
    cost = {form: per_call(form) - loop for form in ("record", "three", "veronica")}
    cost["rows"] = per_call("rows") - per_call("rows-built")
    names = {
        "record": "record_call(...)",
        "rows": "record_calls(rows), a row",
        "three": "chainwarden begin+running+success",
        "veronica": "veronica-core begin+running+success",
    }
    print(
        "instructions per finished call (callgrind, PYTHONHASHSEED=0;"
        f" the empty loop's {loop:,.0f} subtracted)"
    )
    for form in ("record", "rows", "three", "veronica"):
        print(
            f"  {names[form]:<40} {cost[form]:>9,.0f}",
            f"  veronica-core / this: {cost['veronica'] / cost[form]:6.1f}x",
        )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        FORMS[sys.argv[1]](int(sys.argv[2]))
    else:
        main()
