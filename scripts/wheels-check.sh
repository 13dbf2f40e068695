#!/usr/bin/env bash
# `make wheels-check`: every wheel in DIST is installed alone into a fresh venv of its own Python and tested
# from outside the source tree.
#
# - Each venv gets the wheel with its extras (the CLI, PostgreSQL, the integrations' frameworks), plus
#   requirements-wheels-check.txt (pytest and its plugins, hypothesis, and veronica-core, the reference the
#   differential tests compare against). No Rust, no maturin, no dev toolchain; the venv is created from the
#   interpreter itself, not from a dev venv.
# - The tests run from a temporary copy of tests/ (with README.md, docs/ and the pytest settings of
#   pyproject.toml, so the documentation examples run too), with the working directory in that copy: the
#   package can only come from site-packages, and the test asserts that it does.
# - The subset: everything that needs no PostgreSQL and no source tree. Not run here (they run in `make test`):
#   the PostgreSQL ledger tests (CHAINWARDEN_NO_POSTGRES=1 skips them), the browser tests
#   (tests/cli/test_report_browser.py, test_report_scale_browser.py, tests/ui/test_dashboard_browser.py: they
#   need chromium and Playwright), tests/billing/test_one_ledger_writer.py (scans python/ in the tree),
#   tests/cli/test_bench_agrees_with_benches.py (runs benches/ with pytest-benchmark), tests/test_architecture.py
#   (reads ARCHITECTURE.md and the source tree it names), tests/test_bench_results.py (reads benches/results/)
#   and tests/test_source_hygiene.py (reads the comments of the source tree).
# - musllinux wheels cannot be installed by a glibc CPython; they are listed as not installable here (their
#   tag is confirmed by scripts/check-dist.py).
set -euo pipefail
cd "$(dirname "$0")/.."
dist="$(realpath "${1:-dist}")"
root="$(pwd)"
shopt -s nullglob
wheels=("$dist"/*.whl)
[[ ${#wheels[@]} -gt 0 ]] || { echo "wheels-check: no wheel in $dist (run make wheels)" >&2; exit 1; }
mapfile -t interpreters < <(scripts/find-pythons.sh)

work="$(mktemp -d /tmp/chainwarden-wheels-check.XXXXXX)"
# Debian's redis-server (as in `make test`): the shared-budget tests start their own with it, and the docs'
# example uses this one, on a unix socket in a temp dir. PostgreSQL is not started: those tests skip here.
CHAINWARDEN_REDIS_SERVER="$(scripts/redis-path.sh)"
export CHAINWARDEN_REDIS_SERVER
redisdir="$(scripts/redis-up.sh)"
export CHAINWARDEN_REDIS_URL="unix://$redisdir/redis.sock"
trap 'scripts/redis-down.sh "$redisdir"; rm -rf "$work"' EXIT
tests="$work/src"
mkdir -p "$tests"
cp -r tests README.md docs "$tests/"
cp pyproject.toml "$tests/"  # for [tool.pytest.ini_options] only: nothing in it is importable
find "$tests" -name __pycache__ -prune -exec rm -rf {} +
cat > "$tests/tests/test_installed_wheel.py" <<'EOF'
"""Added by scripts/wheels-check.sh: the package under test is the installed wheel, not a source tree."""

import sysconfig
from pathlib import Path

import chainwarden
import chainwarden._core


def test_package_comes_from_site_packages() -> None:
    site = Path(sysconfig.get_paths()["platlib"]).resolve()
    assert Path(chainwarden.__file__).resolve().is_relative_to(site)
    assert Path(chainwarden._core.__file__).resolve().is_relative_to(site)
EOF

# What a Python's wheels are tagged for: 3.12, or 3.14t for a free-threaded build.
abi_of_python='import sys, sysconfig; print("%d.%d%s" % (*sys.version_info[:2], "t" * bool(sysconfig.get_config_var("Py_GIL_DISABLED"))))'
gil_stays_off='import sys, chainwarden, chainwarden._core; sys.exit("importing chainwarden turned the GIL on" if sys._is_gil_enabled() else 0)'

status=0
checked=0
for whl in "${wheels[@]}"; do
    name="$(basename "$whl")"
    if [[ "$name" == *musllinux* ]]; then
        echo "wheels-check: $name: not installable on this glibc machine (tag checked by scripts/check-dist.py)"
        continue
    fi
    # The wheel's ABI tag: cp312-cp312 -> 3.12, cp314-cp314t -> 3.14t (free-threaded).
    tag="$(sed -E 's/^[^-]+-[^-]+-cp[0-9]+-cp([0-9])([0-9]+)(t?)-.*/\1.\2\3/' <<<"$name")"
    py=""
    for candidate in "${interpreters[@]}"; do
        if [[ "$("$candidate" -c "$abi_of_python")" == "$tag" ]]; then
            py="$candidate"
        fi
    done
    if [[ -z "$py" ]]; then
        echo "wheels-check: $name: no CPython $tag on this machine" >&2
        status=1
        continue
    fi
    venv="$work/venv-$tag"
    echo "wheels-check: $name: fresh venv of $py"
    "$py" -m venv "$venv"
    if [[ "$tag" == *t ]]; then
        # A free-threaded wheel: the package alone (with its command) and the test runner. The extras' compiled
        # dependencies do not all publish free-threaded wheels, so what runs is what this build is for: the
        # thread-stress test, with the GIL off (importing the native module must not turn it back on).
        "$venv/bin/python" -m pip install -q --disable-pip-version-check "$whl[cli]" \
            "pytest>=8" "pytest-asyncio>=0.24" "pytest-timeout>=2.3" "hypothesis>=6.100"
        if ! (cd "$tests" && "$venv/bin/python" -c "$gil_stays_off" && PYTHONDONTWRITEBYTECODE=1 \
            "$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="-ra --strict-markers" \
            tests/test_thread_stress.py tests/test_installed_wheel.py); then
            echo "wheels-check: $name: tests FAILED" >&2
            status=1
        fi
        (cd "$work" && "$venv/bin/chainwarden" --version && "$venv/bin/chainwarden" demo --only graph >/dev/null) \
            || { echo "wheels-check: $name: the chainwarden command failed" >&2; status=1; }
        rm -rf "$venv"
        checked=$((checked + 1))
        continue
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check \
        "$whl[cli,postgres,otel,prices,openai,anthropic,claude-agent,langchain,langgraph,redis,ui]" -r "$root/requirements-wheels-check.txt"
    if "$venv/bin/python" -c "import maturin" 2>/dev/null; then
        echo "wheels-check: maturin leaked into the test venv" >&2
        status=1
    fi
    # From inside the copy: rootdir and sys.path hold only tests; the package comes from site-packages.
    if ! (cd "$tests" && CHAINWARDEN_NO_POSTGRES=1 PYTHONDONTWRITEBYTECODE=1 "$venv/bin/python" -m pytest -q \
        -p no:cacheprovider -p no:randomly \
        --ignore=tests/cli/test_report_browser.py --ignore=tests/cli/test_report_scale_browser.py \
        --ignore=tests/ui/test_dashboard_browser.py --ignore=tests/billing/test_one_ledger_writer.py \
        --ignore=tests/cli/test_bench_agrees_with_benches.py --ignore=tests/test_architecture.py \
        --ignore=tests/test_bench_results.py --ignore=tests/test_source_hygiene.py \
        --deselect=tests/test_errors.py::test_the_bindings_raise_no_bare_builtin_error \
        -o addopts="-ra --strict-markers" tests); then
        echo "wheels-check: $name: tests FAILED" >&2
        status=1
    fi
    # The installed command, from a directory with nothing of the project in it.
    (cd "$work" && "$venv/bin/chainwarden" --version && "$venv/bin/chainwarden" demo --only graph >/dev/null \
        && "$venv/bin/chainwarden" bench --quick --json >/dev/null) \
        || { echo "wheels-check: $name: the chainwarden command failed" >&2; status=1; }
    rm -rf "$venv"
    checked=$((checked + 1))
done
[[ $checked -gt 0 ]] || { echo "wheels-check: no wheel could be checked" >&2; exit 1; }
echo "wheels-check: $checked wheel(s) installed and tested"
exit $status
