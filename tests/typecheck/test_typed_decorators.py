"""The typing check file also runs (its functions are real, not only annotations)."""

from __future__ import annotations

from .typed_decorators import check


def test_the_typing_check_file_runs() -> None:
    assert check() == ["q", [3], 1.5, {"a": 1}]
