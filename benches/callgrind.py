"""A loop's instructions per iteration under callgrind, for the `*_instructions.py` scripts
(benches/README.md).

A timed ratio on a shared machine moves with its load; an instruction count does not. A script runs one form
of its loop at a short and at a long length, each in its own process under callgrind (`PYTHONHASHSEED=0`);
the cost per iteration is the difference of the two counts over the difference of the lengths.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile


def count(script: str, form: str, n: int) -> int:
    """Instructions of one run of `python script form n` under callgrind."""
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [
                "valgrind",
                "--tool=callgrind",
                f"--callgrind-out-file={tmp}/out",
                sys.executable,
                script,
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


def per_iteration(script: str, form: str, lengths: tuple[int, int]) -> float:
    short, long = lengths
    return (count(script, form, long) - count(script, form, short)) / (long - short)
