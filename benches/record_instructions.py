"""`bench_graph.py`'s finished call, counted in instructions (benches/README.md "Call graph").

    .venv/bin/python benches/record_instructions.py            # every form under callgrind, then the ratios
    valgrind --tool=callgrind .venv/bin/python benches/record_instructions.py FORM N   # one form, one length

Each form runs its loop (the same calls as `bench_graph.py`'s `test_finished_call`); its cost per call is
its count per iteration (`callgrind.py`) less the empty loop's (`rows` less building the rows, `rows-built`).
FORM: record, three, rows, rows-built, veronica, empty.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from bench_graph import dict_rows, lifecycle_loop, record_loop
from callgrind import per_iteration
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


def per_call(form: str) -> float:
    return per_iteration(__file__, form, LENGTHS.get(form, DEFAULT_LENGTHS))


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
