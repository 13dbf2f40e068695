"""abi3 or per-version wheels? Measures both builds on the same machine, in interleaved rounds.

    python benches/abi3_vs_version.py --rounds 7 dist/chainwarden-*-cp311-cp311-manylinux*.whl \
        /tmp/abi3/chainwarden-*-cp311-abi3-manylinux*.whl

Each wheel is installed alone into its own venv (of the interpreter running this script); every round runs
benches/abi3_probe.py once per wheel, alternating the order, so drifting machine load hits both alike.
Prints the median of each figure per wheel and the abi3 cost in percent. Never run by the tests."""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import tempfile
import venv
from pathlib import Path

PROBE = Path(__file__).with_name("abi3_probe.py")
FIGURES = ("recorder_ns", "wrap_ns", "bare_ns", "overhead_ns")


def install(wheel: Path, root: Path) -> Path:
    venv.create(root, with_pip=True)
    python = root / "bin" / "python"
    subprocess.run([python, "-m", "pip", "install", "-q", "--no-deps", str(wheel)], check=True)
    return python


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("wheels", nargs=2, type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        pythons = [install(w, Path(tmp) / f"v{i}") for i, w in enumerate(args.wheels)]
        results: list[list[dict[str, float]]] = [[], []]
        for r in range(args.rounds):
            order = (0, 1) if r % 2 == 0 else (1, 0)
            for i in order:
                out = subprocess.run(
                    [pythons[i], str(PROBE)], check=True, capture_output=True, text=True, cwd=tmp
                )
                results[i].append(json.loads(out.stdout))
    medians = [{f: statistics.median(r[f] for r in res) for f in FIGURES} for res in results]
    for wheel, med in zip(args.wheels, medians, strict=True):
        print(wheel.name)
        for f in FIGURES:
            print(f"  {f:12} {med[f]:8.1f}")
    base, other = medians
    for f in ("recorder_ns", "overhead_ns"):
        # Paired: each round's two runs were back to back, so their ratio cancels most of the load drift.
        paired = statistics.median(b[f] / a[f] for a, b in zip(results[0], results[1], strict=True))
        print(
            f"{f}: second / first = {other[f] / base[f]:.3f} from the medians, "
            f"{paired:.3f} median of the per-round ratios ({(paired - 1) * 100:+.1f}%)"
        )


if __name__ == "__main__":
    main()
