#!/usr/bin/env bash
# One run of every speed goal (benches/README.md "Goals at a glance"): one pytest-benchmark
# session side by side with the peers, then the memory, async-wrap and store-load scripts, with the machine's
# load before and after. Needs `make bench`'s build (release, `bench-floor`); `make bench-goals` does both.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=.venv/bin/python
echo "start: $(date -u +%FT%TZ) $(uptime)"
pg="$(scripts/postgres-up.sh)"
trap 'scripts/postgres-down.sh "$pg" >/dev/null 2>&1 || true' EXIT
export CHAINWARDEN_TEST_POSTGRES_DSN="host=$pg port=5432 user=postgres dbname=postgres"
mkdir -p .benchmarks
# The sub-microsecond forms run before the billing suites: PostgreSQL's background work after their commits
# (checkpoint, autovacuum) shares the two cores and slowed the forms measured after them by up to 1.6x.
.venv/bin/pytest benches/bench_dag_build.py benches/bench_json.py \
    "benches/bench_dag.py::test_context_for_dicts_chat" "benches/bench_dag.py::test_propagate_failures_fan_out" \
    "benches/bench_context.py::test_bare_call" "benches/bench_context.py::test_wrap_llm_call[chainwarden]" \
    "benches/bench_context.py::test_with_bare" "benches/bench_context.py::test_with_block" \
    "benches/bench_context.py::test_decorator_bare" "benches/bench_context.py::test_decorated_call" \
    "benches/bench_graph.py::test_finished_call" \
    "benches/bench_billing.py::test_single_writer_commits" "benches/bench_billing.py::test_batch_commits" \
    "benches/bench_billing.py::test_sqlite_per_fact_floor" \
    -q -p no:randomly -p no:cacheprovider --benchmark-only --benchmark-columns=min,median,rounds \
    --benchmark-json=.benchmarks/goals.json
echo "memory per node, 200,000-node chat (goal <= 800 B):"
(cd benches && for impl in chainwarden rustworkx networkx; do "../$PY" dag_memory_per_node.py "$impl" 200000; done)
echo "async wrap overhead (goal <= 3 µs):"
$PY -m chainwarden bench --only wrap_llm_call,wrap_llm_call_async --plain
echo "durable store (goal: load of the 40,000-node chat <= 300 ms, rates within 2x of raw SQL):"
$PY benches/dag_store.py
echo "workers and the round-trip floor (goals: committed change <= 1.5x raw, budget wrap <= 2x, 4 pools >= 3x):"
$PY benches/workers.py
$PY benches/goals.py .benchmarks/goals.json
echo "end: $(date -u +%FT%TZ) $(uptime)"
