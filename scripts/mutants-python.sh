#!/usr/bin/env bash
# Mutation testing of the Python billing and containment packages with mutmut (docs/testing.md "Mutation
# testing"). Not part of `make test`: `make mutants` runs it.
#
# mutmut puts `mutants/` and `mutants/src/` first on sys.path, so the package is staged in a scratch
# directory as `src/chainwarden` (the built extension included) beside a copy of the tests; the editable
# install's path to python/ comes after it, so the tests import the mutated copy.
#
# Usage: scripts/mutants-python.sh [glob ...]   (default: every module of billing/ and containment/)
# Environment: MUTANTS_DIR (scratch + results, default .mutants/python), MUTANTS_TESTS (the tests that may
# kill a mutant, default tests/billing tests/containment). PostgreSQL tests are skipped
# (CHAINWARDEN_NO_POSTGRES=1): the SQLite runs of the same tests cover the store-independent code.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
venv="${VIRTUAL_ENV:-$root/.venv}"
dir="${MUTANTS_DIR:-$root/.mutants/python}"
read -r -a tests <<<"${MUTANTS_TESTS:-tests/billing tests/containment}"
globs=("$@")
if ((${#globs[@]} == 0)); then
    globs=("src/chainwarden/billing/*.py" "src/chainwarden/containment/*.py")
fi

"$venv/bin/python" -c 'import mutmut' 2>/dev/null || "$venv/bin/pip" install -q "mutmut>=3.8,<4"

rm -rf "$dir"
mkdir -p "$dir/src"
cp -r python/chainwarden "$dir/src/chainwarden"
find "$dir/src" -name __pycache__ -prune -exec rm -rf {} +
cp -r tests "$dir/tests"
# The project's pytest settings (timeouts, markers, asyncio mode), plus mutmut's own.
{
    cat pyproject.toml
    printf '\n[tool.mutmut]\nsource_paths = ["src"]\n'
    printf 'only_mutate = [%s]\n' "$(printf '"%s", ' "${globs[@]}" | sed 's/, $//')"
    printf 'pytest_add_cli_args_test_selection = [%s]\n' "$(printf '"%s", ' "${tests[@]}" | sed 's/, $//')"
    # The one test that parses the source tree (mutmut rewrites it) has nothing to say about a mutant.
    printf 'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "--deselect", "tests/billing/test_one_ledger_writer.py"]\n'
} >"$dir/pyproject.toml"

cd "$dir"
start=$(date +%s)
CHAINWARDEN_NO_POSTGRES=1 nice -n 19 "$venv/bin/mutmut" run --max-children 1 || true
echo "mutmut: $(($(date +%s) - start)) s, load $(cut -d' ' -f1-3 /proc/loadavg)"
"$venv/bin/mutmut" results --all true >results.txt || "$venv/bin/mutmut" results >results.txt
grep -c ': survived' results.txt | sed 's/^/survived: /' || true
echo "results: $dir/results.txt"
