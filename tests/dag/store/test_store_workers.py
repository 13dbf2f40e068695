"""Many worker processes on one stored graph: exactly-once runs; a SIGKILLed worker's claims reclaimed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from layered import build_layers

from chainwarden.dag import ExecutionResult, Graph, Runner, Store

WORKER = Path(__file__).with_name("store_worker.py")


def spawn(
    url: str, graph_id: str, worker_id: str, *, lease_s: float, sleep_s: float, log: Path
) -> subprocess.Popen[bytes]:
    args = [sys.executable, str(WORKER), url, graph_id, worker_id, str(lease_s), str(sleep_s), str(log)]
    return subprocess.Popen(args)


def executions(logs: list[Path]) -> Counter[str]:
    return Counter(line for log in logs if log.exists() for line in log.read_text().split())


def shape(graph: Graph) -> Counter[tuple[str, str]]:
    """The graph up to ids and times: how many nodes of each type end in each state."""
    return Counter((n["node_type"], n["state"]) for n in graph.nodes(include_compressed=True))


@pytest.mark.slow
@pytest.mark.timeout(90)
def test_four_workers_run_1000_tasks_exactly_once(store_url: str, tmp_path: Path) -> None:
    with Store.open(store_url) as store:
        build_layers(store.create_graph("work"), 1000, 100)
        logs = [tmp_path / f"w{i}.log" for i in range(4)]
        procs = [spawn(store_url, "work", f"w{i}", lease_s=10.0, sleep_s=0.0, log=logs[i]) for i in range(4)]
        assert [p.wait(timeout=80) for p in procs] == [0, 0, 0, 0]
        done = store.load("work")
    ran = executions(logs)
    assert set(ran.values()) == {1}  # exactly once
    assert sum(1 for log in logs if log.read_text()) >= 2  # the work was shared
    assert done.check_invariants() is None
    assert set(ran) == {n["node_id"] for n in done.nodes() if n["node_type"] in ("task", "agent_message")}

    single = Graph(graph_id="work")
    build_layers(single, 1000, 100)
    Runner(
        single,
        {
            "task": lambda n, c: ExecutionResult.finished(),
            "agent_message": lambda n, c: ExecutionResult.finished(),
        },
    ).run_until_idle()
    assert shape(done) == shape(single)
    assert len(done.edges()) == len(single.edges())


@pytest.mark.slow
@pytest.mark.timeout(60)
def test_sigkilled_worker_loses_only_its_claims(store_url: str, tmp_path: Path) -> None:
    lease = 1.0
    with Store.open(store_url) as store:
        build_layers(store.create_graph("work"), 40, 10)
        victim_log, other_log = tmp_path / "victim.log", tmp_path / "other.log"
        victim = spawn(store_url, "work", "victim", lease_s=lease, sleep_s=0.05, log=victim_log)
        deadline = time.monotonic() + 20
        while len(executions([victim_log])) < 3:  # kill it while its executor runs
            assert time.monotonic() < deadline and victim.poll() is None
            time.sleep(0.01)
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(timeout=5)
        held = {
            n["node_id"]
            for n in store.load("work").nodes()
            if n["state"] == "running" and n["metadata"].get("claimed_by") == "victim"
        }
        assert held  # it died holding claims
        other = spawn(store_url, "work", "other", lease_s=lease, sleep_s=0.0, log=other_log)
        assert other.wait(timeout=40) == 0
        done = store.load("work")
    ran = executions([victim_log, other_log])
    twice = {node for node, count in ran.items() if count > 1}
    assert set(ran.values()) <= {1, 2} and twice <= held
    assert all(n["state"] == "finished" for n in done.nodes())
    for node_id in held:
        meta = done.node(node_id)["metadata"]
        assert meta["attempt"] == 1 and meta["claimed_by"] == "other"
    assert any(e["event_type"] == "node_lease_expired" for e in done.events())
    assert done.check_invariants() is None
