"""The DAG's native API is written in three places that must agree: `DagEngine`, the `Mutation` handle a
`mutate()` block receives (the engine's building operations), and their stubs in `chainwarden/_core.pyi`.
Each is read here as it is (the native classes' signatures, the stubs parsed with `ast`) and compared:
method lists, parameter names, kinds and defaults."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path
from typing import Any

import pytest

import chainwarden
from chainwarden._core import DagEngine, Mutation

STUBS = Path(chainwarden.__file__).with_name("_core.pyi")

#: (kind, name, default); `inspect.Parameter.empty` when there is none.
Params = tuple[tuple[str, str, Any], ...]

#: Where `Mutation` and `DagEngine` may disagree, (method, parameter) -> (handle's default, engine's):
#: nowhere. Both show the default the engine applies (`state='pending'`, their `text_signature`s), and
#: the stubs say the same (`state: str | None = "pending"`: None also means the default).
MUTATION_DIFFERS: dict[tuple[str, str], tuple[Any, Any]] = {}

_KIND = {
    inspect.Parameter.POSITIONAL_ONLY: "positional",
    inspect.Parameter.POSITIONAL_OR_KEYWORD: "positional",  # stubs do not spell out `/`
    inspect.Parameter.VAR_POSITIONAL: "*args",
    inspect.Parameter.KEYWORD_ONLY: "keyword",
    inspect.Parameter.VAR_KEYWORD: "**kwargs",
}


def native(cls: type) -> dict[str, Params]:
    """Every method the class defines (its constructor as `__new__`), without `self`."""
    methods: dict[str, Params] = {}
    for name, member in vars(cls).items():
        if name == "__new__":
            sig = inspect.signature(cls)
        elif name.startswith("__") and name != "__len__":
            continue
        elif isinstance(member, staticmethod) or callable(member):
            sig = inspect.signature(getattr(cls, name))
            if not isinstance(member, staticmethod):
                sig = sig.replace(parameters=list(sig.parameters.values())[1:])
        else:
            continue
        methods[name] = tuple((_KIND[p.kind], p.name, p.default) for p in sig.parameters.values())
    return methods


def native_properties(cls: type) -> set[str]:
    return {n for n, v in vars(cls).items() if inspect.isgetsetdescriptor(v) and not n.startswith("__")}


def _stub_class(name: str) -> ast.ClassDef:
    tree = ast.parse(STUBS.read_text(encoding="utf-8"))
    found = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name]
    assert len(found) == 1, f"{name} is stubbed {len(found)} times in {STUBS.name}"
    return found[0]


def _default(node: ast.expr | None) -> Any:
    return inspect.Parameter.empty if node is None else ast.literal_eval(node)


def stubbed(name: str) -> tuple[dict[str, Params], set[str]]:
    """The stub's methods (as `native` reads them) and its properties."""
    methods: dict[str, Params] = {}
    properties: set[str] = set()
    for node in _stub_class(name).body:
        if not isinstance(node, ast.FunctionDef):
            continue
        decorators = {d.id for d in node.decorator_list if isinstance(d, ast.Name)}
        if "property" in decorators:
            properties.add(node.name)
            continue
        a = node.args
        positional = [*a.posonlyargs, *a.args]
        if "staticmethod" not in decorators:
            positional = positional[1:]  # self / cls
        defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
        params: list[tuple[str, str, Any]] = [
            ("positional", p.arg, _default(d)) for p, d in zip(positional, defaults, strict=True)
        ]
        if a.vararg:
            params.append(("*args", a.vararg.arg, inspect.Parameter.empty))
        params += [("keyword", p.arg, _default(d)) for p, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)]
        if a.kwarg:
            params.append(("**kwargs", a.kwarg.arg, inspect.Parameter.empty))
        methods[node.name] = tuple(params)
    return methods, properties


@pytest.mark.parametrize("cls", [DagEngine, Mutation], ids=lambda c: c.__name__)
def test_stubs_list_the_native_methods_with_their_signatures(cls: type) -> None:
    methods, properties = stubbed(cls.__name__)
    actual = native(cls)
    assert sorted(methods) == sorted(actual), (
        f"{cls.__name__}: the stubs and the native class list other methods"
    )
    for name, params in actual.items():
        assert methods[name] == params, f"{cls.__name__}.{name}: stub {methods[name]} != native {params}"
    assert properties == native_properties(cls)


def _differences(
    engine: dict[str, Params], handle: dict[str, Params]
) -> dict[tuple[str, str], tuple[Any, Any]]:
    """Where the handle's operations differ from the engine's; fails on anything but a default."""
    found: dict[tuple[str, str], tuple[Any, Any]] = {}
    for name, params in handle.items():
        assert name in engine, f"Mutation.{name} is not an operation of DagEngine"
        theirs = engine[name]
        assert [p[:2] for p in params] == [p[:2] for p in theirs], f"{name}: {params} != DagEngine's {theirs}"
        for (_, param, mine), (_, _, its) in zip(params, theirs, strict=True):
            if mine != its:
                found[(name, param)] = (mine, its)
    return found


def _operations(methods: dict[str, Params]) -> dict[str, Params]:
    return {n: p for n, p in methods.items() if n not in {"__new__", "_end"}}


def test_the_mutation_handle_repeats_the_engines_building_operations() -> None:
    handle, engine = _operations(native(Mutation)), native(DagEngine)
    assert sorted(handle) == ["create_edge", "create_node", "edit", "fork", "regenerate", "retry"]
    assert _differences(engine, handle) == MUTATION_DIFFERS


def test_the_stubbed_mutation_handle_repeats_the_stubbed_engine() -> None:
    handle, engine = _operations(stubbed("Mutation")[0]), stubbed("DagEngine")[0]
    assert _differences(engine, handle) == MUTATION_DIFFERS


def _annotations(name: str) -> dict[str, dict[str, str]]:
    return {
        f.name: {
            p.arg: ast.unparse(p.annotation)
            for p in [*f.args.posonlyargs, *f.args.args, *f.args.kwonlyargs]
            if p.annotation is not None
        }
        | {"return": ast.unparse(f.returns) if f.returns else ""}
        for f in _stub_class(name).body
        if isinstance(f, ast.FunctionDef)
    }


def test_the_stubbed_mutation_handle_has_the_engines_types() -> None:
    handle, engine = _annotations("Mutation"), _annotations("DagEngine")
    differ = {
        (name, param)
        for name in _operations(stubbed("Mutation")[0])
        for param, annotation in handle[name].items()
        if engine[name].get(param) != annotation
    }
    assert differ == set(MUTATION_DIFFERS)


def test_a_changed_signature_is_seen() -> None:
    """The comparison itself can fail: a stub with a renamed keyword or another default differs."""
    methods, _ = stubbed("DagEngine")
    retry = methods["retry"]
    assert retry == (("positional", "node_id", inspect.Parameter.empty), ("keyword", "new_node_id", None))
    renamed = {**methods, "retry": (retry[0], ("keyword", "new_id", None))}
    with pytest.raises(AssertionError):
        _differences(renamed, {"retry": native(Mutation)["retry"]})
    defaulted = {"retry": (retry[0], ("keyword", "new_node_id", "x"))}
    assert _differences(methods, defaulted) == {("retry", "new_node_id"): ("x", None)}
