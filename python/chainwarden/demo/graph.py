"""Demo section: an agent loop recorded by ExecutionGraph."""

from __future__ import annotations

from typing import TextIO


def run(out: TextIO) -> None:
    out.write("== call graph ==\n(coming with the recorder)\n")
