"""`bench_context.py`'s containment forms, counted in instructions (benches/README.md "The `with` block and
the decorators").

    .venv/bin/python benches/form_instructions.py            # every form under callgrind, then the ratios
    valgrind --tool=callgrind .venv/bin/python benches/form_instructions.py FORM N   # one form, one length

Each form runs the call `bench_context.py` times, first past the context's node cap (`max_nodes`, 100,000 by
default: from then on every call also evicts one, as in the timed rounds), then N times; its overhead is its
count per iteration (`callgrind.py`) less its bare twin's.
FORM: wrap, bare, with, with-bare, llm-decorator, contained, decorator-bare.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from typing import Any

from bench_context import bare_block, chainwarden_ctx, noop
from callgrind import per_iteration

from chainwarden.containment import contained
from chainwarden.containment.context import DEFAULT_MAX_NODES

LENGTHS = (1_000, 21_000)


def loop(form: str) -> Callable[[int], None]:
    ctx = chainwarden_ctx()
    wrap, llm_call = ctx.wrap_llm_call, ctx.llm_call

    def with_block() -> None:
        with llm_call("step"):
            noop()

    calls: dict[str, Callable[[], object]] = {
        "wrap": lambda: wrap(noop),
        "bare": noop,
        "with": with_block,
        "with-bare": bare_block,
        "llm-decorator": ctx.llm_call(noop),
        "contained": contained(noop),
        "decorator-bare": noop,
    }
    call = calls[form]
    # The decorated calls run inside `with ctx:` (what `@contained` finds), as in `bench_context.py`.
    decorated = form in ("llm-decorator", "contained", "decorator-bare")
    scope: AbstractContextManager[Any] = ctx if decorated else nullcontext()

    def run(n: int) -> None:
        with scope:
            for _ in range(DEFAULT_MAX_NODES + 1_000):
                call()
            for _ in range(n):
                call()

    return run


# Each form, its bare twin, the title it is printed under.
ROWS = [
    ("wrap", "bare", "ctx.wrap_llm_call(noop)"),
    ("with", "with-bare", "with ctx.llm_call():"),
    ("llm-decorator", "decorator-bare", "@ctx.llm_call"),
    ("contained", "decorator-bare", "@contained"),
]


def main() -> None:
    counted: dict[str, float] = {}

    def per_call(form: str) -> float:
        if form not in counted:
            counted[form] = per_iteration(__file__, form, LENGTHS)
        return counted[form]

    overhead = {form: per_call(form) - per_call(bare) for form, bare, _ in ROWS}
    print("instructions per call over its bare twin (callgrind, PYTHONHASHSEED=0, past the node cap)")
    for form, bare, title in ROWS:
        print(
            f"  {title:<26} {overhead[form]:>7,.0f}",
            f" (form {per_call(form):,.0f}, bare {per_call(bare):,.0f})",
            f"  x wrap_llm_call's: {overhead[form] / overhead['wrap']:.2f}",
        )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        loop(sys.argv[1])(int(sys.argv[2]))
    else:
        main()
