"""Every public name and parameter of ``veronica_core.containment`` 3.10.0 is in ``chainwarden.containment``.

Both packages are introspected (veronica-core is a test dependency): the package, its public submodules
(their ``__all__``, else what they define), every public member of every public class (dataclass fields
included) and every parameter of every public callable. A reference parameter must exist here under the
same name; one the reference takes by position must be taken at the same position; one the reference
makes optional must be optional here. The only exceptions are the differences docs/design.md §42 decides,
listed in ``DECIDED`` with their reason; each must still be a real difference, so the list cannot go stale.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import pkgutil
import types
from collections.abc import Iterator
from typing import Any

import pytest
import veronica_core
import veronica_core.containment as reference

import chainwarden.containment as ours

assert veronica_core.__version__ == "3.10.0", "the oracle is veronica-core 3.10.0 (requirements-dev.txt)"

# Reference name -> why chainwarden has no counterpart (docs/design.md §42).
DECIDED: dict[str, str] = {
    "timeout_pool": (
        "the reference's timer thread runs callers' callbacks; chainwarden's runs no user code "
        "(docs/design.md §32) and is not public"
    ),
}

_Ref = str  # a dotted path inside the package, e.g. "execution_context.ExecutionContext.wrap_memory_call"


def _public(name: str) -> bool:
    return not name.startswith("_")


def _modules() -> dict[str, types.ModuleType]:
    found = {"": reference}
    for info in pkgutil.iter_modules(reference.__path__):
        if _public(info.name):
            found[info.name] = importlib.import_module(f"{reference.__name__}.{info.name}")
    return found


def _exported(module: types.ModuleType) -> list[str]:
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        n
        for n in dir(module)
        if _public(n) and getattr(getattr(module, n), "__module__", None) == module.__name__
    ]


def _members(cls: type) -> list[str]:
    names = {n for n in dir(cls) if _public(n)}
    if dataclasses.is_dataclass(cls):
        names |= {f.name for f in dataclasses.fields(cls) if _public(f.name)}
    return sorted(names)


def reference_surface() -> Iterator[tuple[_Ref, Any]]:
    """(path, reference object) of every public name, submodules first."""
    modules = _modules()
    for name in modules:
        if name:
            yield name, modules[name]
    for prefix, module in modules.items():
        for name in _exported(module):
            path = f"{prefix}.{name}" if prefix else name
            obj = getattr(module, name)
            yield path, obj
            if inspect.isclass(obj):
                for member in _members(obj):
                    yield f"{path}.{member}", inspect.getattr_static(obj, member, None)


def resolve(path: _Ref) -> Any:
    """chainwarden's object at the reference's ``path`` (AttributeError / ImportError: what is missing)."""
    head, _, rest = path.partition(".")
    if head in _modules() and head:
        obj: Any = importlib.import_module(f"{ours.__name__}.{head}")
        parts = rest.split(".") if rest else []
    else:
        obj = ours
        parts = path.split(".")
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        is_data = inspect.isclass(obj) and dataclasses.is_dataclass(obj)
        if last and is_data and part in {f.name for f in dataclasses.fields(obj)}:
            return dataclasses.MISSING
        obj = getattr(obj, part)
    return obj


def _signature(obj: Any) -> inspect.Signature | None:
    target = obj.fget if isinstance(obj, property) else obj
    if isinstance(target, staticmethod | classmethod):
        target = target.__func__
    if not callable(target) or isinstance(obj, property):
        return None
    try:
        return inspect.signature(target)
    except (TypeError, ValueError):
        return None


_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def parameter_gaps(ref: Any, mine: Any) -> list[str]:
    """What a caller of ``ref`` could pass that ``mine`` would not accept the same way."""
    ref_sig, my_sig = _signature(ref), _signature(mine)
    if ref_sig is None:
        return []
    if my_sig is None:
        return ["not introspectable here"]
    gaps = []
    ref_params = [p for p in ref_sig.parameters.values() if p.name not in ("self", "cls")]
    my_params = [p for p in my_sig.parameters.values() if p.name not in ("self", "cls")]
    mine_by_name = {p.name: p for p in my_params}
    takes_kwargs = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in my_params)
    for index, param in enumerate(ref_params):
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        own = mine_by_name.get(param.name)
        if own is None:
            if not takes_kwargs:
                gaps.append(f"parameter {param.name!r} missing")
            continue
        moved = index >= len(my_params) or my_params[index].name != param.name
        if param.kind in _POSITIONAL and moved:
            gaps.append(f"parameter {param.name!r} not at position {index}")
        if param.default is not inspect.Parameter.empty and own.default is inspect.Parameter.empty:
            gaps.append(f"parameter {param.name!r} is optional in the reference, required here")
    return gaps


SURFACE = list(reference_surface())


def test_the_surface_is_large_enough_to_mean_something() -> None:
    assert len(SURFACE) > 150
    assert {"wrap_memory_call", "budget_allocator", "DynamicAllocator", "attach_partial_buffer"} <= {
        p.rsplit(".", 1)[-1] for p, _ in SURFACE
    }


@pytest.mark.parametrize(("path", "ref"), SURFACE, ids=[p for p, _ in SURFACE])
def test_every_public_name_and_parameter_exists(path: str, ref: Any) -> None:
    decided = DECIDED.get(path.split(".", 1)[0]) or DECIDED.get(path)
    try:
        mine = resolve(path)
    except (AttributeError, ImportError) as err:
        if decided is not None:
            return
        pytest.fail(f"{path} is missing from chainwarden.containment ({err})")
    assert decided is None, f"{path} exists after all: drop it from DECIDED ({decided})"
    if mine is dataclasses.MISSING:
        return  # a dataclass field: its parameter is checked on the class's constructor
    gaps = parameter_gaps(ref, mine)
    assert not gaps, f"{path}: {'; '.join(gaps)}"


def test_decided_differences_are_real() -> None:
    paths = {p for p, _ in SURFACE}
    for name in DECIDED:
        assert name in paths, f"{name} is not a public name of the reference: drop it from DECIDED"


def test_the_checker_finds_a_missing_parameter_and_a_moved_one() -> None:
    def ref(config: int, pipeline: int = 0, metadata: int = 0) -> None: ...
    def missing(config: int, pipeline: int = 0) -> None: ...
    def moved(config: int, metadata: int = 0, pipeline: int = 0) -> None: ...
    def required(config: int, pipeline: int, metadata: int = 0) -> None: ...
    def extended(config: int, pipeline: int = 0, metadata: int = 0, *, cost_of: int = 0) -> None: ...

    assert parameter_gaps(ref, missing) == ["parameter 'metadata' missing"]
    assert parameter_gaps(ref, moved) == [
        "parameter 'pipeline' not at position 1",
        "parameter 'metadata' not at position 2",
    ]
    assert parameter_gaps(ref, required) == [
        "parameter 'pipeline' is optional in the reference, required here"
    ]
    assert parameter_gaps(ref, extended) == []
