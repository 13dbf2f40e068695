"""``--call package.module:function``: the user's own callable, bare vs contained (docs/bench.md)."""

from __future__ import annotations

import asyncio
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from chainwarden.cli.bench.sampling import Batch, timed_loop
from chainwarden.cli.bench.workloads import Workload, async_batch, cw_context
from chainwarden.errors import ChainwardenError

__all__ = ["CallSpecError", "call_workload", "resolve"]


class CallSpecError(ChainwardenError, ValueError):
    """A ``--call`` value that does not name an importable callable taking no arguments."""


def resolve(spec: str) -> Callable[..., Any]:
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise CallSpecError(f"--call: expected 'package.module:function', got {spec!r}")
    # As `python -m` does: modules in the current directory are importable.
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        raise CallSpecError(f"--call: cannot import module {module_name!r}: {exc}") from None
    except Exception as exc:  # the user's module failed while importing
        raise CallSpecError(f"--call: importing {module_name!r} raised {type(exc).__name__}: {exc}") from None
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise CallSpecError(f"--call: module {module_name!r} has no attribute {attr!r}") from None
    if not callable(obj):
        raise CallSpecError(f"--call: {spec!r} is a {type(obj).__name__}, not a callable")
    return obj  # type: ignore[no-any-return]


def call_workload(spec: str, is_async: bool) -> Workload:
    fn = resolve(spec)
    if is_async != inspect.iscoroutinefunction(fn):
        hint = "an async function needs --async" if not is_async else "--async needs an async function"
        raise CallSpecError(f"--call: {spec!r}: {hint}")
    try:  # once, so a function that needs arguments or always fails is reported before any timing
        if is_async:
            asyncio.run(fn())
        else:
            fn()
    except Exception as exc:  # the user's function
        raise CallSpecError(f"--call: {spec}() raised {type(exc).__name__}: {exc}") from None
    if is_async:

        def cw_async() -> Batch:
            wrap = cw_context().wrap_llm_call_async
            return async_batch(lambda: lambda: wrap(fn))

        return Workload(
            f"call:{spec}",
            f"await ctx.wrap_llm_call_async({spec})",
            lambda: async_batch(lambda: fn),
            {"chainwarden": cw_async},
        )

    def cw_sync() -> Batch:
        wrap = cw_context().wrap_llm_call
        return timed_loop(lambda: wrap(fn))

    return Workload(
        f"call:{spec}", f"ctx.wrap_llm_call({spec})", lambda: timed_loop(fn), {"chainwarden": cw_sync}
    )
