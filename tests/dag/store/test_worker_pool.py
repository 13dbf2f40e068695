"""WorkerPool on both stores: work shared across pools and graphs, free slots only, long-running wake-up,
leases by the database clock, reclaim without a restart, graceful stop, stats, typed errors; and the
`chainwarden worker` command."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chainwarden.dag import (
    DagInvalidArgumentError,
    ExecutionResult,
    Store,
    StoredGraph,
    WorkerPool,
)

HERE = Path(__file__).parent


def tasks(graph: StoredGraph, count: int, *, width: int = 10) -> None:
    """`count` tasks; each depends on the task `width` before it."""
    with graph.mutate() as m:
        for i in range(count):
            m.create_node("task", node_id=f"t{i:04d}", input={"n": i, "graph": graph.graph_id})
            if i >= width:
                m.create_edge(f"t{i - width:04d}", f"t{i:04d}", "dependency")


class Recorder:
    """Executors that record who ran what, and how many ran at once."""

    def __init__(self, sleep_s: float = 0.0) -> None:
        self.sleep_s = sleep_s
        self.lock = threading.Lock()
        self.ran: Counter[tuple[str, str]] = Counter()
        self.by_pool: Counter[str] = Counter()
        self.now = 0
        self.most = 0

    def executor(self, pool_name: str) -> Any:
        def run(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
            with self.lock:
                self.ran[(node["input"]["graph"], node["node_id"])] += 1
                self.by_pool[pool_name] += 1
                self.now += 1
                self.most = max(self.most, self.now)
            try:
                time.sleep(self.sleep_s)
            finally:
                with self.lock:
                    self.now -= 1
            return ExecutionResult.finished(output={"result": node["input"]["n"] ** 2})

        return run


def run_pools(url: str, recorder: Recorder, count: int, **options: Any) -> list[Any]:
    stats: list[Any] = [None] * count

    def serve(i: int) -> None:
        with Store.open(url) as store:
            pool = WorkerPool(store, {"task": recorder.executor(f"p{i}")}, worker_id=f"p{i}", **options)
            stats[i] = pool.run(until_idle=True)

    threads = [threading.Thread(target=serve, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return stats


@pytest.mark.slow
def test_three_pools_share_three_graphs_and_run_every_task_once(store_url: str) -> None:
    with Store.open(store_url) as store:
        for gid in ("a", "b", "c"):
            tasks(store.create_graph(gid, leaf_repair=False), 60)
        recorder = Recorder(sleep_s=0.005)
        stats = run_pools(store_url, recorder, 3, concurrency=3, lease_s=10, poll_s=0.1)
        assert set(recorder.ran.values()) == {1} and len(recorder.ran) == 180
        assert sum(s.executed for s in stats) == 180
        assert all(s.executed > 0 for s in stats), [s.executed for s in stats]  # each did a share
        assert sum(s.by_graph.get("b", 0) for s in stats) == 60
        for gid in ("a", "b", "c"):
            g = store.load(gid)
            assert [n["state"] for n in g.nodes()] == ["finished"] * 60  # no agent_message leaves
            assert g.leaf_repair is False
            assert g.check_invariants() is None
        assert store._work(None, 10).graphs == [] and not store._work(None, 10).leased


def test_a_pool_claims_only_what_it_has_free_slots_for(store_url: str) -> None:
    gate = threading.Event()
    seen: list[list[str]] = []
    with Store.open(store_url) as store:
        g = store.create_graph("g", leaf_repair=False)
        tasks(g, 8, width=8)

        def blocked(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
            gate.wait(10)
            return ExecutionResult.finished()

        pool = WorkerPool(store, {"task": blocked}, worker_id="w", concurrency=2, lease_s=30, poll_s=0.05)
        runner = threading.Thread(target=pool.run, kwargs={"until_idle": True})
        runner.start()
        deadline = time.monotonic() + 10
        while pool.stats.running < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.2)  # it would claim more now if it did
        with Store.open(store_url) as other:
            seen.append([n["node_id"] for n in other.load("g").nodes() if n["state"] == "running"])
        gate.set()
        runner.join(timeout=20)
    assert len(seen[0]) == 2
    assert pool.stats.executed == 8


def test_a_running_pool_notices_new_graphs_and_stops_gracefully(store_url: str) -> None:
    recorder = Recorder()
    with Store.open(store_url) as store:
        pool = WorkerPool(store, {"task": recorder.executor("p")}, worker_id="p", lease_s=10, poll_s=0.2)
        runner = threading.Thread(target=pool.run)
        runner.start()
        time.sleep(0.3)  # idle, waiting
        with Store.open(store_url) as other:
            tasks(other.create_graph("late", leaf_repair=False), 5)
        deadline = time.monotonic() + 10
        while pool.stats.executed < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert pool.stats.executed == 5 and runner.is_alive()
        pool.stop()
        runner.join(timeout=10)
        assert not runner.is_alive()
    assert pool.stats.by_graph == {"late": 5}


def test_stop_gives_back_what_could_not_finish_without_counting_an_attempt(store_url: str) -> None:
    started = threading.Event()

    def stuck(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
        started.set()
        time.sleep(5)
        return ExecutionResult.finished()

    with Store.open(store_url) as store:
        g = store.create_graph("g", leaf_repair=False)
        tasks(g, 1)
        pool = WorkerPool(store, {"task": stuck}, worker_id="w", lease_s=0.5, poll_s=0.05)
        runner = threading.Thread(target=pool.run)
        runner.start()
        assert started.wait(10)
        pool.stop()
        runner.join(timeout=10)
        node = store.load("g").node("t0000")
    assert node["state"] == "pending"
    assert "attempt" not in node["metadata"] and "claimed_by" not in node["metadata"]
    assert pool.stats.released == 1 and pool.stats.executed == 0
    assert [e["event_type"] for e in store_events(store_url, "g")][-2:] == [
        "node_lease_released",
        "node_state_changed",
    ]


def store_events(url: str, graph_id: str) -> list[dict[str, Any]]:
    with Store.open(url) as store:
        return store.load(graph_id).events()


def test_a_dead_workers_lease_is_reclaimed_by_a_running_pool(store_url: str) -> None:
    with Store.open(store_url) as store:
        g = store.create_graph("g", leaf_repair=False)
        tasks(g, 3)
        assert g.claim(1, worker_id="ghost", lease_s=0.3) == ["t0000"]  # then the ghost "dies"
        recorder = Recorder()
        pool = WorkerPool(store, {"task": recorder.executor("p")}, worker_id="p", lease_s=10, poll_s=0.05)
        stats = pool.run(until_idle=True)  # waits for the ghost's lease, then reclaims and runs it
        node = store.load("g").node("t0000")
    assert stats.reclaimed == 1 and stats.executed == 3
    assert node["state"] == "finished" and node["metadata"]["attempt"] == 1


def test_leases_follow_the_database_clock_not_the_workers(
    store_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose clock is an hour ahead: its lease ends lease_s after the database's now, and it does
    not take a lease another worker holds."""
    with Store.open(store_url) as store:
        g = store.create_graph("g", leaf_repair=False)
        tasks(g, 2, width=2)
        assert g.claim(1, worker_id="honest", lease_s=30) == ["t0000"]
        real = time.time
        monkeypatch.setattr(time, "time", lambda: real() + 3600)
        assert g.reclaim_expired() == []  # 30 s are not over for the database
        assert g.claim(1, worker_id="fast-clock", lease_s=30) == ["t0001"]
        until = g.node("t0001")["metadata"]["lease_expires_at"]
        assert real() + 25 < until < real() + 35
        fresh = store.load("g")
        assert fresh._claim_leased(5, "fast-clock", 30)[0] == []  # nothing reclaimed
        monkeypatch.setattr(time, "time", real)


def test_async_executors_run_as_tasks_on_one_loop(store_url: str) -> None:
    threads: set[int] = set()
    running = [0, 0]

    async def wait(node: dict[str, Any], context: list[dict[str, Any]]) -> ExecutionResult:
        threads.add(threading.get_ident())
        running[0] += 1
        running[1] = max(running)
        await asyncio.sleep(0.1)
        running[0] -= 1
        return ExecutionResult.finished(content="done")

    with Store.open(store_url) as store:
        tasks(store.create_graph("g", leaf_repair=False), 8, width=8)
        stats = WorkerPool(store, {"task": wait}, concurrency=4, lease_s=10, poll_s=0.05).run(until_idle=True)
    assert stats.executed == 8 and len(threads) == 1 and running[1] == 4


def test_stats_are_a_frozen_snapshot_and_the_pool_logs_its_life(caplog: pytest.LogCaptureFixture) -> None:
    with Store.open(":memory:") as store, caplog.at_level(logging.INFO, logger="chainwarden.dag"):
        g = store.create_graph("g", leaf_repair=False)
        tasks(g, 2)
        pool = WorkerPool(store, {"task": lambda n, c: ExecutionResult.errored("boom")}, poll_s=0.01)
        stats = pool.run(until_idle=True)
    started, stopped = (f"worker pool {pool.worker_id} {what}" for what in ("started", "stopped"))
    assert started in caplog.text and f"{stopped}: executed=2" in caplog.text
    assert stats.executed == 2 and dict(stats.outcomes) == {"errored": 2}
    with pytest.raises(dataclasses.FrozenInstanceError):
        stats.executed = 0  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.outcomes["errored"] = 0  # type: ignore[index]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"concurrency": 0}, "concurrency must be an int"),
        ({"concurrency": True}, "concurrency must be an int"),
        ({"lease_s": 0}, "lease_s must be a number"),
        ({"lease_s": float("nan")}, "lease_s must be a number"),
        ({"poll_s": -1}, "poll_s must be a number"),
        ({"graph_ids": "g"}, "graph_ids must be"),
        ({"graph_ids": []}, "graph_ids must be"),
        ({"worker_id": ""}, "worker_id must be"),
        ({"executors": {"tool": print}}, "executors key 'tool'"),
    ],
)
def test_bad_arguments_are_typed_errors_naming_them(options: dict[str, Any], message: str) -> None:
    executors = options.pop("executors", {"task": lambda n, c: ExecutionResult.finished()})
    with Store.open(":memory:") as store, pytest.raises(DagInvalidArgumentError, match=message):
        WorkerPool(store, executors, **options)
    with pytest.raises(TypeError, match="store must be"):
        WorkerPool("sqlite:///x.db", executors)  # type: ignore[arg-type]


def test_create_graph_refuses_a_non_bool_leaf_repair() -> None:
    with Store.open(":memory:") as store, pytest.raises(DagInvalidArgumentError, match="leaf_repair"):
        store.create_graph("g", leaf_repair=1)  # type: ignore[arg-type]


def worker_env(log: Path, sleep_s: float = 0.0) -> dict[str, str]:
    env = dict(os.environ)
    env["CHAINWARDEN_TEST_EXEC_LOG"] = str(log)
    env["CHAINWARDEN_TEST_EXEC_SLEEP"] = str(sleep_s)
    env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
    return env


def test_the_worker_command_serves_a_store_until_idle(store_url: str, tmp_path: Path) -> None:
    with Store.open(store_url) as store:
        tasks(store.create_graph("g", leaf_repair=False), 12, width=4)
    log = tmp_path / "exec.log"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chainwarden",
            "worker",
            store_url,
            "--executors",
            "pool_executors:EXECUTORS",
            "--concurrency",
            "3",
            "--lease-s",
            "10",
            "--poll-s",
            "0.1",
            "--until-idle",
        ],
        env=worker_env(log),
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "executed 12" in done.stderr and "worker pool" in done.stderr
    assert sorted(line.split()[1] for line in log.read_text().splitlines()) == [
        f"t{i:04d}" for i in range(12)
    ]
    with Store.open(store_url) as store:
        assert store.load("g").node("t0011")["output"]["result"] == 121


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("pool_executors", "expected package.module:NAME"),
        ("no_such_module:X", "cannot import 'no_such_module'"),
        ("pool_executors:NOPE", "has no 'NOPE'"),
        ("pool_executors:square", "not a mapping"),
    ],
)
def test_the_worker_command_names_a_bad_executors_option(spec: str, message: str, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "chainwarden", "worker", ":memory:", "--executors", spec],
        env=worker_env(tmp_path / "log"),
        capture_output=True,
        check=False,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2 and message in done.stderr and "--executors" in done.stderr


# The store waits its whole connect timeout (10 s) for a server that refuses, as it would for one starting up;
# with the interpreter's start on a loaded machine that is close to the default 15 s test timeout.
@pytest.mark.timeout(60)
def test_the_worker_command_masks_a_password_it_cannot_connect_with() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chainwarden",
            "worker",
            "postgresql://app:s3cret-pw@127.0.0.1:9/db",
            "--executors",
            "pool_executors:EXECUTORS",
        ],
        env=worker_env(Path(os.devnull)),
        capture_output=True,
        check=False,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert "postgresql://app:***@127.0.0.1:9/db" in done.stderr and "s3cret" not in done.stderr


def start_worker(
    url: str, log: Path, *, sleep_s: float, lease_s: float, concurrency: int
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "chainwarden",
            "worker",
            url,
            "--executors",
            "pool_executors:EXECUTORS",
            "--concurrency",
            str(concurrency),
            "--lease-s",
            str(lease_s),
            "--poll-s",
            "0.1",
        ],
        env=worker_env(log, sleep_s),
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_lines(log: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not (log.exists() and len(log.read_text().splitlines()) >= count):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.slow
def test_sigterm_lets_short_executions_finish_and_exits_0(store_url: str, tmp_path: Path) -> None:
    with Store.open(store_url) as store:
        tasks(store.create_graph("g", leaf_repair=False), 3, width=3)
    log = tmp_path / "exec.log"
    proc = start_worker(store_url, log, sleep_s=1.0, lease_s=10, concurrency=3)
    wait_for_lines(log, 3, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=15)
    assert proc.returncode == 0, err
    assert "executed 3" in err and "given back 0" in err
    with Store.open(store_url) as store:
        assert [n["state"] for n in store.load("g").nodes()] == ["finished"] * 3


@pytest.mark.slow
def test_sigterm_of_a_busy_worker_exits_0_and_its_unfinished_nodes_are_pending_again(
    store_url: str, tmp_path: Path
) -> None:
    lease = 1.5
    with Store.open(store_url) as store:
        tasks(store.create_graph("g", leaf_repair=False), 6, width=6)
    log = tmp_path / "exec.log"
    proc = start_worker(store_url, log, sleep_s=60, lease_s=lease, concurrency=3)
    wait_for_lines(log, 3, proc)
    sent = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert time.monotonic() - sent < lease + 10  # it waited about one lease, not for the executors
    assert "given back 3" in err and "executed 0" in err
    with Store.open(store_url) as store:
        nodes = store.load("g").nodes()
    assert Counter(n["state"] for n in nodes) == {"pending": 6}
    assert all("attempt" not in n["metadata"] and "claimed_by" not in n["metadata"] for n in nodes)
    # Nothing lost: another worker runs all six.
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "chainwarden",
            "worker",
            store_url,
            "--executors",
            "pool_executors:EXECUTORS",
            "--concurrency",
            "6",
            "--lease-s",
            "10",
            "--poll-s",
            "0.1",
            "--until-idle",
        ],
        env=worker_env(log),
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    with Store.open(store_url) as store:
        assert [n["state"] for n in store.load("g").nodes()] == ["finished"] * 6


def test_a_pool_on_postgres_wakes_on_notify_not_on_its_poll() -> None:
    """A commit that makes work claimable notifies: a pool polling every 60 s runs it within seconds."""
    from store_urls import postgres_url  # noqa: PLC0415 - PostgreSQL only

    url = postgres_url(f"notify_{uuid.uuid4().hex[:10]}")
    recorder = Recorder()
    with Store.open(url) as store:
        pool = WorkerPool(store, {"task": recorder.executor("p")}, worker_id="p", lease_s=10, poll_s=60)
        runner = threading.Thread(target=pool.run)
        runner.start()
        time.sleep(0.5)  # the pool has looked once and now waits
        with Store.open(url) as other:
            tasks(other.create_graph("late", leaf_repair=False), 3)
        deadline = time.monotonic() + 8
        while pool.stats.executed < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        executed = pool.stats.executed
        pool.stop()
        runner.join(timeout=10)
    assert executed == 3


def test_a_pool_serves_only_the_graphs_it_is_given(store_url: str) -> None:
    with Store.open(store_url) as store:
        for gid in ("mine", "theirs"):
            tasks(store.create_graph(gid, leaf_repair=False), 4)
        recorder = Recorder()
        stats = WorkerPool(
            store, {"task": recorder.executor("p")}, graph_ids=["mine"], lease_s=10, poll_s=0.05
        ).run(until_idle=True)
        assert stats.by_graph == {"mine": 4}
        assert {n["state"] for n in store.load("theirs").nodes()} == {"pending"}


def test_executions_run_under_the_execution_context(store_url: str) -> None:
    from chainwarden.containment import ExecutionConfig, ExecutionContext  # noqa: PLC0415

    ctx = ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=2, max_retries_total=0))
    with Store.open(store_url) as store:
        tasks(store.create_graph("g", leaf_repair=False), 3, width=3)
        stats = WorkerPool(
            store,
            {"task": lambda n, c: ExecutionResult.finished()},
            concurrency=1,
            lease_s=10,
            poll_s=0.05,
            execution_context=ctx,
        ).run(until_idle=True)
        states = sorted(n["state"] for n in store.load("g").nodes())
    # Two steps allowed: the third call is refused by the context and its node errors with the reason.
    assert states == ["errored", "finished", "finished"] and stats.outcomes == {"finished": 2, "errored": 1}
