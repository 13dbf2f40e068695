"""Large metadata: linear-time round trip and merges, and the GIL released around the long native part."""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from chainwarden.dag import Graph


def keys(n: int, prefix: str = "k") -> dict[str, int]:
    return {f"{prefix}{i}": i for i in range(n)}


def running_task(metadata: dict[str, int] | None = None) -> Graph:
    g = Graph()
    with g.mutate() as m:
        m.create_node("task", node_id="t", metadata=metadata)
    assert g.claim(1) == ["t"]
    return g


def test_80k_key_metadata_round_trips() -> None:
    g = running_task(keys(80_000))
    assert g.mark_finished("t", output={"result": keys(1_000, "r")}, metadata={"k5": "replaced", "extra": 1})
    data = g.to_json()
    back = Graph.from_json(data)
    assert back.to_json() == data
    node = back.node("t")
    assert node == g.node("t")
    assert len(node["metadata"]) == 80_001
    assert node["metadata"]["k5"] == "replaced" and node["metadata"]["k79999"] == 79_999
    assert list(node["metadata"])[-1] == "extra"  # new keys after existing ones, like dict.update


def test_duplicate_keys_in_a_document_collapse_like_json_loads() -> None:
    g = running_task({"a": 1})
    doc = g.to_json().decode()
    dup = doc.replace('"metadata":{"a":1}', '"metadata":{"a":1,"b":2,"a":3}', 1)
    assert dup != doc
    meta = Graph.from_json(dup).node("t")["metadata"]
    assert meta == json.loads('{"a":1,"b":2,"a":3}') and list(meta) == ["a", "b"]


RUNS = 5


def best_of(runs: int, fn: Callable[[], object]) -> float:
    """CPU time of this thread: time lost to other processes on a loaded machine is not counted. The first
    run only warms up (allocator pages, caches), so both sizes are measured in the same steady state."""
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.thread_time()
        fn()
        best = min(best, time.thread_time() - start)
    return best


def from_json_time(n: int) -> float:
    data = running_task(keys(n)).to_json()
    return best_of(RUNS, lambda: Graph.from_json(data))


def merge_time(n: int, deep: bool, base: int | None = None) -> float:
    """Merging n keys into a node that already holds `base` keys (n when None)."""
    patch = keys(n, "m")
    start = {"seed": 1} if base == 0 else keys(n if base is None else base)
    graphs: Iterator[Graph] = iter([running_task(start) for _ in range(RUNS + 1)])

    def once() -> None:
        g = next(graphs)
        if deep:
            g.mark_finished("t", output={"nested": patch})
        else:
            g.mark_finished("t", metadata=patch)

    return best_of(RUNS, once)


@pytest.mark.parametrize(
    "measure",
    [
        from_json_time,
        lambda n: merge_time(n, deep=False),
        lambda n: merge_time(n, deep=False, base=0),
        lambda n: merge_time(n, deep=True),
    ],
    ids=["from_json", "mark_finished-metadata", "mark_finished-into-small", "mark_finished-output"],
)
def test_cost_grows_linearly_with_the_number_of_keys(measure: Callable[[int], float]) -> None:
    # 16x the keys: linear work takes ~16x as long (up to ~32x once the large size leaves the CPU caches),
    # quadratic work ~256x. 64 sits halfway between the two in log scale, so each side has a 2-4x margin.
    # Both sizes are beyond the allocator's small-block pools (10k keys still fit, which alone made linear
    # code look superlinear), and the best of five CPU-time runs ignores time lost to other processes. A
    # loaded CI machine still once pushed an 8x ratio past its limit (cache and memory-bandwidth contention
    # count as this thread's time), so an attempt may be repeated: quadratic code fails every attempt,
    # noise does not repeat. docs/testing.md, "Scaling tests".
    ratios = []
    for _ in range(3):
        small, large = measure(20_000), measure(320_000)
        ratios.append(large / small)
        if ratios[-1] < 64:
            return
    pytest.fail(f"16x the keys took {[round(r, 1) for r in ratios]}x the time: superlinear")


def test_other_threads_run_while_a_large_mark_finished_merges() -> None:
    """Deterministic: with a 10 s switch interval the other thread can only run if the call drops the GIL."""
    g = running_task(keys(200_000))
    patch = keys(200_000, "m")
    go = threading.Event()
    returned = [False]
    ran_inside: list[bool] = []

    def observer() -> None:
        go.wait(10)
        ran_inside.append(not returned[0])

    previous = sys.getswitchinterval()
    sys.setswitchinterval(10.0)
    try:
        thread = threading.Thread(target=observer)
        thread.start()
        time.sleep(0.05)  # the observer is parked in go.wait(), the GIL released
        go.set()
        assert g.mark_finished("t", metadata=patch)
        returned[0] = True
        thread.join(10)
    finally:
        sys.setswitchinterval(previous)
    assert ran_inside == [True]
    assert len(g.node("t")["metadata"]) == 400_000
