"""One exception root (docs/errors.md): every exception class of the package derives from ChainwardenError and
keeps the built-in base callers caught before; no bare built-in error is raised; a bad argument is a typed
error that names it, is still caught by ``except ValueError`` / ``except TypeError``, and changes nothing."""

from __future__ import annotations

import ast
import json
import math
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

import chainwarden
from chainwarden import ExecutionConfig, ExecutionContext, ExecutionGraph, _core, errors
from chainwarden.billing import UsageFact
from chainwarden.containment.partial import PartialBufferOverflow
from chainwarden.dag import Graph, Store
from chainwarden.errors import (
    CallRefused,
    ChainwardenError,
    ClosedError,
    DagInvalidArgumentError,
    InvalidArgument,
    InvalidArgumentType,
    InvalidState,
    NotFound,
    StoreUrlError,
)
from chainwarden.integrations._usage import UsageError
from chainwarden.runtime.credits import InsufficientCredits
from chainwarden.runtime.testing import ContractViolation
from chainwarden.shield import Decision

PACKAGE = Path(chainwarden.__file__).parent


# Run in a child process: importing every module (every integration, the CLI) would change what later tests
# in this process see (which frameworks `instrument()` finds, for one).
_SCAN = """
import importlib, json, pkgutil, sys
from pathlib import Path
import chainwarden
from chainwarden.errors import ChainwardenError

names = {"chainwarden", "chainwarden._core"}
for info in pkgutil.walk_packages([str(Path(chainwarden.__file__).parent)], prefix="chainwarden."):
    if not info.name.endswith(".__main__"):  # running it is the CLI, not an import
        names.add(info.name)
found = {}
for name in sorted(names):
    for value in vars(importlib.import_module(name)).values():
        if isinstance(value, type) and issubclass(value, BaseException):
            if value.__module__.split(".")[0] == "chainwarden":
                found[f"{value.__module__}.{value.__qualname__}"] = issubclass(value, ChainwardenError)
json.dump(found, sys.stdout)
"""


def _exception_classes() -> dict[str, bool]:
    """Every exception class defined in the package's modules -> whether it derives from the root."""
    done = subprocess.run(
        [sys.executable, "-c", _SCAN], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    found: dict[str, bool] = json.loads(done.stdout)
    return found


def test_every_exception_class_of_the_package_derives_from_the_root() -> None:
    classes = _exception_classes()
    # The scan is not vacuous: it sees the native families and those of every layer.
    for expected in (
        "chainwarden._core.DagNotFoundError",
        "chainwarden._core.InvalidArgument",
        "chainwarden.errors.CallRefused",
        "chainwarden.errors.StoreCommitUnknownError",
        "chainwarden.errors.LedgerUnavailable",
        "chainwarden.runtime.run_context.LlmCallRefused",
        "chainwarden._sql.faults.Unreachable",
        "chainwarden.cli.runfile.RunFileError",
    ):
        assert expected in classes
    assert len(classes) >= 35
    outside = sorted(name for name, rooted in classes.items() if not rooted)
    assert outside == []


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.CallRefused, RuntimeError),
        (errors.ChainHalted, RuntimeError),
        (errors.DagNotFoundError, LookupError),
        (errors.DagInvalidArgumentError, ValueError),
        (errors.StoreUrlError, ValueError),
        (errors.StoreConnectionError, ConnectionError),
        (errors.StoreCommitUnknownError, ConnectionError),
        (errors.BudgetBackendUnavailable, ConnectionError),
        (errors.BudgetExceeded, OverflowError),
        (errors.ClosedError, ValueError),
        (errors.NotFound, KeyError),
        (errors.InvalidState, RuntimeError),
        (errors.InvalidArgument, ValueError),
        (errors.InvalidArgumentType, TypeError),
        (UsageError, ValueError),
        (PartialBufferOverflow, ValueError),
        (InsufficientCredits, OverflowError),
        (ContractViolation, AssertionError),
    ],
)
def test_each_class_keeps_the_builtin_base_callers_caught_before(
    cls: type[BaseException], builtin: type[BaseException]
) -> None:
    assert issubclass(cls, ChainwardenError)
    assert issubclass(cls, builtin)


def test_the_classes_stay_importable_where_they_were() -> None:
    from chainwarden.billing import BillingUnsettled, LedgerUnavailable  # noqa: PLC0415
    from chainwarden.containment import CallRefused as refused  # noqa: PLC0415
    from chainwarden.containment.budget import BudgetBackendUnavailable  # noqa: PLC0415
    from chainwarden.dag import DagError  # noqa: PLC0415
    from chainwarden.dag.store import StoreError  # noqa: PLC0415

    assert refused is CallRefused
    assert LedgerUnavailable is errors.LedgerUnavailable
    assert BillingUnsettled is errors.BillingUnsettled
    assert issubclass(LedgerUnavailable, errors.BillingError)
    assert BudgetBackendUnavailable is errors.BudgetBackendUnavailable
    assert DagError is _core.DagError
    assert StoreError is errors.StoreError


# --- no bare built-in error is raised -----------------------------------------------------------------

BANNED = frozenset({"ValueError", "TypeError", "RuntimeError", "Exception", "KeyError", "OverflowError"})
# A raise of a banned built-in that stays, with the reason. Empty: every one is typed.
ALLOWED: dict[tuple[str, int], str] = {}


def _bare_raises(source: str) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Raise) or node.exc is None:
            continue
        target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if isinstance(target, ast.Name) and target.id in BANNED:
            found.append((node.lineno, target.id))
    return sorted(found)


def test_the_scan_finds_a_bare_raise() -> None:
    source = "def f(x):\n    if x:\n        raise ValueError('x')\n    raise TypeError\n"
    assert _bare_raises(source) == [(3, "ValueError"), (4, "TypeError")]
    assert _bare_raises("raise InvalidArgument('x', argument='x')\n") == []


def test_the_package_raises_no_bare_builtin_error() -> None:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        for line, name in _bare_raises(path.read_text(encoding="utf-8")):
            if (rel, line) not in ALLOWED:
                found.append(f"{rel}:{line}: raise {name}")
    assert found == []


def test_the_bindings_raise_no_bare_builtin_error() -> None:
    # The native bindings raise through rust/py/src/exceptions.rs (or the DAG registry), never PyO3's
    # built-in exception types directly.
    bindings = Path(__file__).parent.parent / "rust" / "py" / "src"
    sources = sorted(bindings.rglob("*.rs"))
    # The scan reads the bindings: a source-tree test (wheels-check, outside the tree, deselects it).
    assert len(sources) > 10, bindings
    found = [
        f"{path.name}: {line.strip()}"
        for path in sources
        for line in path.read_text(encoding="utf-8").splitlines()
        if "Error::new_err(" in line and "Py" in line
    ]
    assert found == []


# --- bad input: typed, named, still a ValueError / TypeError, nothing changed -------------------------


def test_the_recorder_names_a_bad_argument() -> None:
    with pytest.raises(InvalidArgument) as err:
        ExecutionGraph(max_nodes=-1)
    assert err.value.argument == "max_nodes"
    with pytest.raises(TypeError) as type_err:
        ExecutionGraph(cost_rate_threshold_usd_per_sec="fast")  # type: ignore[arg-type]
    assert isinstance(type_err.value, InvalidArgumentType)
    assert type_err.value.argument == "cost_rate_threshold_usd_per_sec"


def test_a_bad_kind_or_number_changes_nothing_and_is_still_a_value_error() -> None:
    graph = ExecutionGraph(chain_id="c")
    root = graph.create_root("root")
    before = graph.snapshot()
    with pytest.raises(ValueError, match="kind must be one of") as err:
        graph.begin_node(root, "wizard", "x")  # type: ignore[arg-type]
    assert isinstance(err.value, InvalidArgument)
    assert err.value.argument == "kind"
    node = graph.begin_node(root, "llm", "x")
    graph.mark_running(node)
    with pytest.raises(ValueError) as cost:
        graph.mark_success(node, cost_usd=math.nan)
    assert isinstance(cost.value, InvalidArgument)
    assert cost.value.argument == "cost_usd"
    assert graph.node(node)["status"] == "running"
    assert len(graph.snapshot()["nodes"]) == len(before["nodes"]) + 1


def test_an_unknown_node_is_not_found_and_still_a_key_error() -> None:
    graph = ExecutionGraph(chain_id="c")
    with pytest.raises(KeyError) as err:
        graph.mark_running("no-such-node")
    assert isinstance(err.value, NotFound)
    assert isinstance(err.value, ChainwardenError)
    assert str(err.value) == "\"Node not found: 'no-such-node'\""  # as the built-in KeyError reads
    assert err.value.code == "recorder.node_not_found"  # the core's registry code


def test_a_second_root_is_an_invalid_state() -> None:
    graph = ExecutionGraph(chain_id="c")
    graph.create_root("root")
    with pytest.raises(RuntimeError) as err:
        graph.create_root("again")
    assert isinstance(err.value, InvalidState)


def test_the_context_names_a_bad_argument() -> None:
    with pytest.raises(ValueError) as err:
        ExecutionConfig(max_cost_usd=-1.0, max_steps=10, max_retries_total=3)
    assert isinstance(err.value, InvalidArgument)
    assert err.value.argument == "max_cost_usd"
    with ExecutionContext(ExecutionConfig(max_cost_usd=1.0, max_steps=10, max_retries_total=3)) as ctx:
        with pytest.raises(TypeError) as type_err:
            ctx.wrap_llm_call(fn=42)  # type: ignore[arg-type]
        assert isinstance(type_err.value, InvalidArgumentType)
        assert type_err.value.argument == "fn"
        assert ctx.get_snapshot().step_count == 0


def test_a_refusal_is_a_chainwarden_error_and_pickles() -> None:
    refused = CallRefused(Decision.HALT, "budget_exceeded", "spent $2 of $1")
    assert isinstance(refused, RuntimeError)
    again = pickle.loads(pickle.dumps(refused))
    assert type(again) is CallRefused
    assert (again.stop_reason, again.detail, str(again)) == (
        refused.stop_reason,
        refused.detail,
        str(refused),
    )


def test_a_typed_argument_error_pickles_with_its_argument() -> None:
    again = pickle.loads(pickle.dumps(InvalidArgument("limit must be >= 1", argument="limit")))
    assert (type(again), str(again), again.argument) == (InvalidArgument, "limit must be >= 1", "limit")


def test_the_dag_names_a_bad_argument_and_is_an_invalid_argument() -> None:
    graph = Graph()
    with pytest.raises(ValueError) as err:
        graph.claim(worker_id="", lease_s=10)
    assert isinstance(err.value, DagInvalidArgumentError)
    assert isinstance(err.value, InvalidArgument)
    assert err.value.argument == "worker_id"
    assert err.value.code == "dag.invalid_argument"
    with graph.mutate() as m, pytest.raises(InvalidArgument) as native:
        m.create_node("task", content="x", metadata={"k": math.inf})
    assert native.value.argument == "metadata"
    assert graph.nodes() == []


def test_a_bad_store_url_is_an_invalid_argument() -> None:
    with pytest.raises(ValueError) as err:
        Store.open("ftp://nowhere")
    assert isinstance(err.value, StoreUrlError)
    assert isinstance(err.value, InvalidArgument)


def test_a_bad_usage_fact_names_the_field() -> None:
    fact = {
        "run_id": "r",
        "attempt": 0,
        "source": "openai",
        "billing_account_id": "acct",
        "virtual_key_id": "vk",
    }
    with pytest.raises(ValueError) as err:
        UsageFact(**fact, input_tokens=-1)  # type: ignore[arg-type]
    assert isinstance(err.value, InvalidArgument)
    assert err.value.argument == "input_tokens"
    with pytest.raises(TypeError) as type_err:
        UsageFact(**fact, cost_usd="0.1")  # type: ignore[arg-type]
    assert isinstance(type_err.value, InvalidArgumentType)
    assert type_err.value.argument == "cost_usd"


def test_a_closed_ledger_is_a_closed_error(tmp_path: Path) -> None:
    from chainwarden.billing import SqliteLedger  # noqa: PLC0415

    ledger = SqliteLedger(tmp_path / "ledger.db")
    ledger.close()
    with pytest.raises(ValueError) as err:
        ledger.create_account("acct", balance_credits=10)
    assert isinstance(err.value, ClosedError)
    assert isinstance(err.value, InvalidState)


def test_the_documented_hierarchy_is_the_one_in_chainwarden_errors() -> None:
    # docs/errors.md draws the tree; every class it draws is in chainwarden.errors, with the parent drawn.
    doc = (Path(__file__).parent.parent / "docs" / "errors.md").read_text(encoding="utf-8")
    tree = doc.split("## The hierarchy", 1)[1].split("```", 2)[1]
    parents: list[str] = []
    drawn = 0
    for line in tree.splitlines():
        name_at = next((i for i, ch in enumerate(line) if ch.isalpha()), None)
        if name_at is None:
            continue
        name = line[name_at:].split()[0]
        depth = name_at // 4
        cls = getattr(errors, name)
        if depth:
            assert issubclass(cls, getattr(errors, parents[depth - 1])), name
        parents[depth:] = [name]
        drawn += 1
    assert drawn >= 25
    assert set(errors.__all__) <= set(tree.split())
