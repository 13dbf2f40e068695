"""Confirms what scripts/build-wheels.sh wrote: each wheel's platform tag is backed by auditwheel's reading of
the binary, and the sdist carries the licence, the README and the docs.

    .venv-build/bin/python scripts/check-dist.py dist

manylinux wheels: auditwheel's overall tag must be manylinux_2_17_x86_64 (glibc 2.17 symbols at most, no
external library). musllinux wheels: auditwheel run on a glibc machine cannot find a musl libc and so cannot
vouch for the soname; the check is that the symbols allow musllinux_1_2 (``sym_tag``), no versioned symbol is
used, and the only library needed is ``libc.so`` -- musl's own soname, which musl's loader resolves to itself.
maturin refuses to write a musllinux tag it cannot meet, so this is a second reading."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

SDIST_MUST_HAVE = (
    "LICENSE",
    "README.md",
    "docs/recorder.md",
    "pyproject.toml",
    "Cargo.lock",
    "rust/core/Cargo.toml",
)


def audit(wheel: Path) -> dict[str, object]:
    auditwheel = Path(sys.executable).with_name("auditwheel")
    out = subprocess.run(
        [auditwheel, "show", "--json", str(wheel)], check=True, capture_output=True, text=True
    )
    report: dict[str, object] = json.loads(out.stdout)
    return report


def check_wheel(wheel: Path) -> str | None:
    name = wheel.name
    report = audit(wheel)
    if "manylinux_2_17_x86_64" in name or "manylinux2014_x86_64" in name:
        if report["overall_tag"] != "manylinux_2_17_x86_64":
            return f"auditwheel reads {report['overall_tag']}, not manylinux_2_17_x86_64: {report}"
        return "manylinux_2_17_x86_64 (manylinux2014) confirmed by auditwheel"
    if "musllinux_1_2_x86_64" in name:
        libs = set(report["external_libs"])  # type: ignore[arg-type]
        if report["sym_tag"] != "musllinux_1_2_x86_64" or report["versioned_symbols"] or libs - {"libc.so"}:
            return f"not musllinux_1_2: {report}"
        return "musllinux_1_2_x86_64: symbols confirmed by auditwheel, needs only musl's libc.so"
    return f"not a portable Linux tag: {name}"


def main() -> int:
    dist = Path(sys.argv[1] if len(sys.argv) > 1 else "dist")
    failures = 0
    wheels = sorted(dist.glob("*.whl"))
    if not wheels:
        print(f"check-dist: no wheel in {dist}", file=sys.stderr)
        return 1
    for wheel in wheels:
        verdict = check_wheel(wheel)
        ok = verdict is not None and "confirmed" in verdict
        failures += not ok
        print(f"check-dist: {wheel.name}: {verdict}", file=sys.stdout if ok else sys.stderr)
    sdists = sorted(dist.glob("*.tar.gz"))
    if len(sdists) != 1:
        print(f"check-dist: expected one sdist in {dist}, found {len(sdists)}", file=sys.stderr)
        return 1
    with tarfile.open(sdists[0]) as tar:
        members = {m.split("/", 1)[1] for m in tar.getnames() if "/" in m}
    missing = [f for f in SDIST_MUST_HAVE if f not in members]
    if missing:
        print(f"check-dist: {sdists[0].name} lacks {missing}", file=sys.stderr)
        return 1
    print(f"check-dist: {sdists[0].name} has {', '.join(SDIST_MUST_HAVE)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
