"""`chainwarden demo --only billing` bills a simulated run into SQLite and shows receipts and balance."""

from __future__ import annotations

import io

import pytest

from chainwarden.cli import main
from chainwarden.demo import billing


def test_billing_section_prints_receipts_and_balance(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "--only", "billing"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("== billing ==\n")
    assert "replay of run-demo-1 billed 0 new receipts (idempotent)" in out
    # $0.0002555, $0.00031 and $0.00001 at 2.0x markup: 5110 + 6200 + 200 credits.
    assert "inproc run-demo-1/0/chatcmpl-001: 5110 credits, $0.000511" in out
    assert "inproc run-demo-1/0/chatcmpl-003: 200 credits, $0.00002" in out
    assert out.count(" credits, $") == 3
    assert out.rstrip().endswith("balance of acct-demo: 88490 credits")


def test_billing_section_is_deterministic() -> None:
    first, second = io.StringIO(), io.StringIO()
    billing.run(first)
    billing.run(second)
    assert first.getvalue() == second.getvalue()
