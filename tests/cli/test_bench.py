"""`chainwarden bench` as a user runs it: real processes, real timings (never asserted), real files.

Figures are only checked for shape and consistency: timings belong in benches/ (docs/bench.md)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainwarden.cli import main
from chainwarden.cli.bench.sampling import interleave, stats

CMD = [sys.executable, "-m", "chainwarden", "bench"]
WORKLOADS = {"recorder_lifecycle", "wrap_llm_call", "wrap_llm_call_async", "decorator", "with_block"}
# Peers made unimportable in the child, as on a machine where they were never installed.
NO_PEERS = "import sys; sys.modules['veronica_core'] = None; sys.modules['opentelemetry'] = None; "


def _strict(text: str) -> Any:
    def refuse(constant: str) -> None:
        raise ValueError(f"not strict JSON: {constant}")

    return json.loads(text, parse_constant=refuse)


def bench(*args: str, cwd: Path | None = None, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}from chainwarden.cli import main; sys.exit(main(sys.argv[1:]))"
    argv = [sys.executable, "-c", "import sys; " + code, "bench", *args] if prelude else [*CMD, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False, cwd=cwd)


@pytest.mark.slow
def test_quick_json_has_every_workload_and_the_documented_shape() -> None:
    done = bench("--quick", "--json")
    assert done.returncode == 0, done.stderr
    doc = _strict(done.stdout)
    assert {"machine", "results", "ratios"} <= set(doc)
    assert doc["machine"]["python"] == ".".join(map(str, sys.version_info[:3]))
    ours = {r["name"]: r for r in doc["results"] if r["impl"] == "chainwarden"}
    assert set(ours) == WORKLOADS | {"snapshot_json_10k"}
    for r in doc["results"]:
        assert set(r) == {"name", "impl", "p50_ns", "p99_ns", "min_ns", "samples"}
        assert all(isinstance(r[k], int) for k in ("p50_ns", "p99_ns", "min_ns", "samples"))
        assert r["min_ns"] <= r["p50_ns"] <= r["p99_ns"]
    assert {ours[name]["samples"] for name in WORKLOADS} == {40}  # --quick rounds
    assert ours["snapshot_json_10k"]["p50_ns"] > 0  # a 10k-node encoding is never free
    assert next(m["impl"] for m in doc["memory"]) == "chainwarden"
    names = {(r["name"], r["impl"]) for r in doc["results"]}
    for ratio in doc["ratios"]:
        assert (ratio["name"], ratio["against"]) in names or ratio["name"] == "memory_per_node"
        assert ratio["ratio"] > 0


@pytest.mark.slow
def test_missing_peers_are_rows_not_failures() -> None:
    done = bench(
        "--quick", "--only", "wrap_llm_call", "--against", "veronica-core,otel", "--json", prelude=NO_PEERS
    )
    assert done.returncode == 0, done.stderr
    doc = _strict(done.stdout)
    assert [r["impl"] for r in doc["results"]] == ["chainwarden"]
    assert doc["ratios"] == []
    assert doc["missing"] == [
        {"impl": "veronica-core", "reason": "not installed (pip install veronica-core)"},
        {"impl": "otel", "reason": "not installed (pip install opentelemetry-sdk)"},
    ]
    assert doc["machine"]["peers"] == {"veronica-core": None, "otel": None}
    table = bench("--quick", "--only", "wrap_llm_call", "--against", "otel", "--plain", prelude=NO_PEERS)
    assert table.returncode == 0, table.stderr
    assert "otel" in table.stdout and "not installed (pip install opentelemetry-sdk)" in table.stdout
    # Nothing asked for, nothing importable: chainwarden alone, and no row about peers.
    alone = bench("--quick", "--only", "wrap_llm_call", "--json", prelude=NO_PEERS)
    assert _strict(alone.stdout)["missing"] == []


@pytest.mark.slow
def test_call_measures_the_users_function_bare_and_contained(tmp_path: Path) -> None:
    (tmp_path / "myagent.py").write_text(
        "import asyncio\n"
        "calls = []\n"
        "def step():\n    return sum(range(50))\n"
        "async def astep():\n    await asyncio.sleep(0)\n",
        encoding="utf-8",
    )
    for args in (("myagent:step",), ("myagent:astep", "--async")):
        done = bench("--call", *args, "--rounds", "5", "--json", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        doc = _strict(done.stdout)
        assert [(r["name"], r["impl"], r["samples"]) for r in doc["results"]] == [
            (f"call:{args[0]}", "chainwarden", 5)
        ]
        assert doc["ratios"] == [] and doc["memory"] == []


@pytest.mark.parametrize(
    ("spec", "extra", "message"),
    [
        ("no_colon", (), "expected 'package.module:function', got 'no_colon'"),
        ("chainwarden_no_such_module:f", (), "cannot import module 'chainwarden_no_such_module'"),
        ("json:no_such_function", (), "module 'json' has no attribute 'no_such_function'"),
        ("json.decoder:JSONArray.nope", (), "has no attribute 'JSONArray.nope'"),
        ("sys:maxsize", (), "'sys:maxsize' is a int, not a callable"),
        ("json:dumps", (), "json:dumps() raised TypeError"),
        ("asyncio:sleep", (), "an async function needs --async"),
        ("os:getpid", ("--async",), "--async needs an async function"),
    ],
)
def test_a_bad_call_spec_is_a_usage_error_naming_it(
    spec: str, extra: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", "--call", spec, *extra, "--rounds", "3"]) == 2
    err = capsys.readouterr().err
    assert "--call" in err and message in " ".join(err.split())
    assert "Traceback" not in err


def test_compare_exits_1_when_a_figure_got_worse(tmp_path: Path) -> None:
    saved = tmp_path / "before.json"
    base = ("--only", "wrap_llm_call,decorator", "--against", "none", "--rounds", "10", "--quick")
    first = bench(*base, "--save", str(saved), "--plain")
    assert first.returncode == 0, first.stderr
    doc = _strict(saved.read_text(encoding="utf-8"))
    # Doctored: the saved run was a thousand times faster, so today's run is a regression...
    for r in doc["results"]:
        r["p50_ns"] = max(1, r["p50_ns"] // 1000)
    saved.write_text(json.dumps(doc), encoding="utf-8")
    worse = bench(*base, "--compare", str(saved), "--json")
    assert worse.returncode == 1
    assert "2 of 2 figures got worse" in worse.stderr
    assert "wrap_llm_call [chainwarden]" in worse.stderr and "decorator [chainwarden]" in worse.stderr
    _strict(worse.stdout)  # the figures are still printed
    # ... and a thousand times slower: no regression.
    for r in doc["results"]:
        r["p50_ns"] = r["p50_ns"] * 1_000_000
    saved.write_text(json.dumps(doc), encoding="utf-8")
    better = bench(*base, "--compare", str(saved), "--threshold", "5")
    assert better.returncode == 0, better.stderr
    assert "no figure worse than" in better.stderr and "(2 compared)" in better.stderr


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "cannot read"),
        ("{not json", "is not JSON"),
        ('{"results": [{"name": 1}]}', "is not a `chainwarden bench"),
    ],
)
def test_a_bad_compare_file_is_refused_before_any_timing(
    tmp_path: Path, content: str | None, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "old.json"
    if content is not None:
        path.write_text(content, encoding="utf-8")
    assert main(["bench", "--compare", str(path)]) == 1
    err = capsys.readouterr().err
    assert message in err and str(path) in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--against", "langsmith"), "'langsmith' is not one of veronica-core, otel"),
        (("--only", "everything"), "'everything' is not one of recorder_lifecycle"),
        (("--async",), "--async goes with --call"),
        (("--rounds", "1"), "1 is not in the range x>=3"),
    ],
)
def test_bad_options_name_themselves(
    args: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["bench", *args]) == 2
    assert message in capsys.readouterr().err


def test_percentiles_are_measured_values_and_ordered() -> None:
    s = stats([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.p50_ns, s.p99_ns, s.min_ns, s.samples) == (3, 5, 1, 5)
    assert stats([1.0, 2.0]).p50_ns == 2  # 1.5 rounds to even
    assert stats(list(map(float, range(1, 201)))).p99_ns == 198
    with pytest.raises(ValueError, match="samples must not be empty"):
        stats([])


def test_interleave_subtracts_the_bare_batch_of_the_same_size_every_round() -> None:
    sizes: list[tuple[str, int]] = []

    def fixed(name: str, per_op: int) -> Any:
        def batch(k: int) -> int:
            sizes.append((name, k))
            return per_op * k

        return batch

    out = interleave(fixed("bare", 10), {"a": (fixed("a", 110), 4), "b": (fixed("b", 30), 2)}, rounds=3)
    assert out == {"a": [100.0] * 3, "b": [20.0] * 3}
    # Rotated order, each implementation right after a bare batch of its own size.
    assert sizes[:4] == [("bare", 4), ("a", 4), ("bare", 2), ("b", 2)]
    assert sizes[4:8] == [("bare", 2), ("b", 2), ("bare", 4), ("a", 4)]


def test_bench_has_real_help(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["bench", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "Measure what containment and recording cost on this machine" in out
    assert "--call MODULE:FUNCTION" in out and "--threshold" in out


def test_a_call_that_fails_while_timed_ends_with_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "flaky.py").write_text(
        "calls = 0\n"
        "def step():\n"
        "    global calls\n"
        "    calls += 1\n"
        "    if calls > 3:\n"
        "        raise RuntimeError('the backend went away')\n",
        encoding="utf-8",
    )
    done = bench("--call", "flaky:step", "--rounds", "3", cwd=tmp_path)
    assert done.returncode == 1
    assert "--call: flaky:step raised RuntimeError: the backend went away" in done.stderr
    assert "Traceback" not in done.stderr
