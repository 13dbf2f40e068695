"""The package's layering (ARCHITECTURE.md "Layering"): packages reach each other through public names only,
and the modules import each other without a cycle.

A package is `chainwarden.<first part>` (`dag.store` is part of `dag`); each top-level module is a package of
its own, and the top-level private ones (`_sql`, `_args`, `_secrets`, ...) are the shared internals every
package may import. Read from the source (AST) of the package as installed, none of its modules imported:

- no `from chainwarden.<other>... import _private` and no import of another package's private module;
- no `obj._private` where `_private` is defined in another package and nowhere in this one (a reach-in into
  another package's object: a test cannot know every type, so this reads names, which is what a reader sees);
- no import cycle among modules at import time (imports under `TYPE_CHECKING` and inside functions excluded),
  and none between packages except the lazy ones listed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import pytest

import chainwarden

# The package as imported: the source tree under `make test`, the installed wheel under `make wheels-check`.
PACKAGE = Path(chainwarden.__file__).resolve().parent

#: Known reach-ins, each with its reason; a new one fails the test, and one mended must leave the list.
ALLOWED: dict[tuple[str, str], str] = {}

#: Cycles between packages, none at import time: each is an import made when a function runs, or an
#: annotation. A new one fails the test; one mended must leave the list.
PACKAGE_CYCLES = {
    frozenset(
        {"cli", "ui"}
    ): "`chainwarden serve` loads the dashboard (lazy), which reads runs with the CLI's readers",
    frozenset({"containment", "integrations"}): "containment._rich prices a response hint with the "
    "integrations' dialects (lazy)",
    frozenset({"_args", "errors", "shield"}): "errors annotates ChainHalted.decision with shield's Decision "
    "(under TYPE_CHECKING) until the vocabularies come from the core as enums (the vocabulary work's)",
}


@dataclass(frozen=True)
class Module:
    name: str  # dotted, without the leading "chainwarden."
    path: Path
    tree: ast.Module

    @property
    def package(self) -> str:
        return self.name.split(".")[0]


@cache
def modules() -> dict[str, Module]:
    found: dict[str, Module] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        name = ".".join(parts) or "__init__"
        found[name] = Module(name, path, ast.parse(path.read_text(encoding="utf-8"), str(path)))
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _package_of(dotted: str) -> str:
    return dotted.removeprefix("chainwarden.").split(".")[0]


def _imports(module: Module) -> Iterator[ast.ImportFrom]:
    for node in ast.walk(module.tree):
        if (
            isinstance(node, ast.ImportFrom)
            and not node.level
            and (node.module or "").startswith("chainwarden.")
        ):
            yield node


def _defined(module: Module) -> tuple[set[str], set[str]]:
    """Private names a module defines: (functions and methods, every name: classes, attributes it assigns,
    slots, parameters too)."""
    functions: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(module.tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            functions.add(node.name)
            names.add(node.name)
        elif isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.isidentifier():
            names.add(node.value)  # __slots__ entries, getattr names
    return {n for n in functions if _private(n)}, {n for n in names if _private(n)}


def _native_names() -> set[str]:
    """Names of the native module's classes (`_core.pyi`): each is owned by the package that binds it."""
    stub = ast.parse((PACKAGE / "_core.pyi").read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(stub):
        if isinstance(node, ast.FunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@cache
def found_reach_ins() -> list[tuple[str, str, int, str]]:
    return reach_ins(modules())


def reach_ins(mods: dict[str, Module]) -> list[tuple[str, str, int, str]]:
    """(module, what it reaches, line, how) for every cross-package private reach-in among `mods`."""
    functions: dict[str, set[str]] = {}
    by_package: dict[str, set[str]] = {}
    for m in mods.values():
        defs, names = _defined(m)
        functions.setdefault(m.package, set()).update(defs)
        by_package.setdefault(m.package, set()).update(names)
    called = {id(node.func) for m in mods.values() for node in ast.walk(m.tree) if isinstance(node, ast.Call)}
    native = {n for n in _native_names() if _private(n)}
    found: list[tuple[str, str, int, str]] = []
    for m in mods.values():
        for node in _imports(m):
            target = (node.module or "").removeprefix("chainwarden.")
            other = _package_of(target)
            if other == m.package:
                continue
            if any(_private(part) for part in target.split(".")[1:]) and not _private(other):
                found.append((m.name, target, node.lineno, "imports a private module"))
            for alias in node.names:
                if _private(alias.name) and f"{target}.{alias.name}" not in mods:
                    found.append((m.name, f"{target}.{alias.name}", node.lineno, "imports a private name"))
        for attr in ast.walk(m.tree):
            if not (
                isinstance(attr, ast.Attribute) and isinstance(attr.ctx, ast.Load) and _private(attr.attr)
            ):
                continue
            if isinstance(attr.value, ast.Name) and attr.value.id in ("self", "cls"):
                continue
            if attr.attr in native:
                continue
            # A call `x._f()` is this package's only if it defines a function `_f`: an attribute of its own
            # named so does not make another package's method its own.
            table = functions if id(attr) in called else by_package
            if attr.attr in table.get(m.package, set()):
                continue
            owners = sorted(p for p, names in table.items() if p != m.package and attr.attr in names)
            if owners:
                found.append((m.name, f"{'/'.join(owners)}: {ast.unparse(attr)}", attr.lineno, "reaches in"))
    return found


def test_no_private_reach_ins_across_packages() -> None:
    found = found_reach_ins()
    unexpected = [f"{m}:{line} {how} {what}" for m, what, line, how in found if (m, what) not in ALLOWED]
    assert unexpected == [], "\n".join(unexpected)


def test_the_allow_list_holds_only_reach_ins_that_remain() -> None:
    remaining = {(m, what) for m, what, _, _ in found_reach_ins()}
    assert sorted(set(ALLOWED) - remaining) == []


def test_the_scan_sees_a_reach_in(tmp_path: Path) -> None:
    """The three forms the scan reads, in a module of another package, are each found."""
    sample = ast.parse(
        "from chainwarden.containment._held import open_call\n"
        "from chainwarden.pricing import _overrides\n"
        "def f(ctx):\n    return ctx._s.core\n"
    )
    mods = {**modules(), "integrations._sample": Module("integrations._sample", tmp_path / "s.py", sample)}
    hows = sorted({how for m, _, _, how in reach_ins(mods) if m == "integrations._sample"})
    assert hows == ["imports a private module", "imports a private name", "reaches in"]


def _import_time_edges(module: Module) -> set[str]:
    """Modules `module` imports when it is imported: module level, outside `if TYPE_CHECKING:`."""
    mods = modules()
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                visit(node.orelse)
            elif isinstance(node, ast.Try):
                for part in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                    visit(part)
            elif isinstance(node, ast.ImportFrom) and not node.level:
                target = (node.module or "").removeprefix("chainwarden.")
                if not (node.module or "").startswith("chainwarden."):
                    continue
                submodules = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in mods]
                out.update(submodules)
                if len(submodules) < len(node.names):  # names of the module itself, not only submodules
                    out.add(target)
            elif isinstance(node, ast.Import):
                out.update(
                    a.name.removeprefix("chainwarden.")
                    for a in node.names
                    if a.name.startswith("chainwarden.")
                )

    visit(module.tree.body)
    resolved = set()
    for imported in out:
        found = imported
        while found not in mods and "." in found:
            found = found.rsplit(".", 1)[0]
        parts = found.split(".")
        # Importing `a.b.c` runs `a` and `a.b` first (but a module's own packages are already running).
        for i in range(1, len(parts) + 1):
            step = ".".join(parts[:i])
            if step in mods and step != module.name and not module.name.startswith(step + "."):
                resolved.add(step)
    return resolved


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one node (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        top = stack.pop()
                        on_stack.discard(top)
                        component.append(top)
                        if top == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return found


def test_no_import_cycle_at_import_time() -> None:
    mods = modules()
    graph = {name: _import_time_edges(m) for name, m in mods.items()}
    assert _cycles(graph) == []


def test_packages_import_each_other_one_way() -> None:
    """Between packages every import (lazy ones, annotations) runs one way, but for the cycles listed."""
    graph: dict[str, set[str]] = {}
    for m in modules().values():
        graph.setdefault(m.package, set())
        for node in _imports(m):
            other = _package_of(node.module or "")
            if other != m.package:
                graph[m.package].add(other)
    found = {frozenset(cycle) for cycle in _cycles(graph)}
    assert found == set(PACKAGE_CYCLES), sorted(sorted(c) for c in found)


@pytest.mark.parametrize(
    ("name", "home"),
    [
        ("Listener", "_sql.pg"),  # the PostgreSQL LISTEN connection, for every store
        ("decision_name", "_contexts"),  # a context's decision read the same way by the DAG and the runtime
        ("CallGuard", "_contexts"),  # what the DAG and the runtime call on any context
    ],
)
def test_one_definition_per_job(name: str, home: str) -> None:
    """Each is defined once (under its name, with or without a leading `_`), where the others import it."""
    where = [
        m.name
        for m in modules().values()
        for node in ast.walk(m.tree)
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name.lstrip("_") == name
    ]
    assert where == [home]


def test_only_the_sql_layer_listens() -> None:
    listens = [m.name for m in modules().values() if "LISTEN {" in m.path.read_text() and m.name != "_sql.pg"]
    assert listens == []


def test_otel_listens_and_patches_nothing() -> None:
    """The OpenTelemetry export follows graphs and runners through their listener hooks: it assigns no
    attribute of an object that is not its own (no monkeypatching)."""
    patched = [
        f"{m.name}:{node.lineno} {ast.unparse(target)}"
        for m in modules().values()
        if m.package == "otel"
        for node in ast.walk(m.tree)
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for target in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(target, ast.Attribute)
        and not (isinstance(target.value, ast.Name) and target.value.id in ("self", "cls"))
    ]
    assert patched == []


def test_the_64_bit_bound_is_written_once() -> None:
    """Counts, tokens, credits and JSON integers are 64-bit in the core and every store (docs/design.md
    §23): the Python side writes the bound once (`_args.MAX_INT64`), named where it means credits or tokens.
    """
    written = [
        m.name
        for m in modules().values()
        for node in ast.walk(m.tree)
        if isinstance(node, ast.BinOp)
        and isinstance(node.op, ast.Pow)
        and ast.unparse(node.left) == "2"
        and ast.unparse(node.right) == "63"
    ]
    assert written == ["_args"]
