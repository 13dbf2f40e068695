"""ONE_LEDGER_WRITER, enforced on the source tree: only chainwarden/billing/ledger.py writes the ledger
tables, and only the runtime's billing subscriber commits usage facts. The history beside them has one writer
each too: run records and logs (`billing/run_store.py`, and `billing/ledger.py`'s `record_run`), credit holds
(`billing/holds.py`)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "chainwarden"
LEDGER_MODULE = "billing/ledger.py"
# Who may call commit_usage_fact: the billing delivery (commit-or-park and the outbox drainer, which the
# runtime's billing subscriber uses) and the ledger's own definition.
COMMITTERS = {"billing/delivery.py", LEDGER_MODULE}
COMMIT_NAMES = {"commit_usage_fact", "_commit_usage_fact", "commit_usage_facts", "_commit_usage_facts"}
RUN_STORE = "billing/run_store.py"
HOLDS = "billing/holds.py"
# Which modules may write each table.
WRITERS = {
    "charge_receipts": {LEDGER_MODULE},
    "credit_ledger": {LEDGER_MODULE},
    "billing_accounts": {LEDGER_MODULE},
    "runs": {LEDGER_MODULE, RUN_STORE},
    "run_events": {RUN_STORE},
    "run_calls": {RUN_STORE},
    "credit_holds": {HOLDS, RUN_STORE},
}
WRITE_SQL = re.compile(
    r"\b(INSERT\s+(OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM|REPLACE\s+INTO|TRUNCATE(\s+TABLE)?)\s+"
    r"(\w+\.)?(" + "|".join(WRITERS) + r")\b",
    re.IGNORECASE,
)


def _string_texts(tree: ast.AST) -> list[tuple[int, str]]:
    texts = []
    inside_fstrings = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inside_fstrings:
            texts.append((node.lineno, node.value))
        elif isinstance(node, ast.JoinedStr):
            # An f-string may split the statement around placeholders: check the text it is built from.
            text = "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values)
            texts.append((node.lineno, str(text)))
    return texts


def violations(relative: str, source: str) -> list[str]:
    tree = ast.parse(source, filename=relative)
    found = []
    for line, text in _string_texts(tree):
        for match in WRITE_SQL.finditer(text):
            table = match.group(5).lower()
            if relative not in WRITERS[table]:
                found.append(f"{relative}:{line}: writes {table} outside {sorted(WRITERS[table])}")
    if relative not in COMMITTERS:
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in COMMIT_NAMES:
                found.append(f"{relative}:{node.lineno}: commits usage outside {sorted(COMMITTERS)}")
            if isinstance(node, ast.Name) and node.id in COMMIT_NAMES:
                found.append(f"{relative}:{node.lineno}: commits usage outside {sorted(COMMITTERS)}")
    return found


def test_only_the_ledger_module_writes_the_ledger() -> None:
    files = sorted(PACKAGE.rglob("*.py"))
    assert any(f.as_posix().endswith(LEDGER_MODULE) for f in files)
    found = []
    for path in files:
        relative = path.relative_to(PACKAGE).as_posix()
        found += violations(relative, path.read_text(encoding="utf-8"))
    assert found == []


def test_the_ledger_module_is_where_the_writes_are() -> None:
    source = (PACKAGE / LEDGER_MODULE).read_text(encoding="utf-8")
    written = {m.group(5).lower() for _, t in _string_texts(ast.parse(source)) for m in WRITE_SQL.finditer(t)}
    assert written == {"charge_receipts", "credit_ledger", "billing_accounts", "runs"}
    source = (PACKAGE / RUN_STORE).read_text(encoding="utf-8")
    written = {m.group(5).lower() for _, t in _string_texts(ast.parse(source)) for m in WRITE_SQL.finditer(t)}
    assert written == {"runs", "run_events", "run_calls", "credit_holds"}


def test_the_check_catches_a_second_writer() -> None:
    rogue = (
        "def sneak(conn):\n"
        "    conn.execute('insert into charge_receipts (x) values (1)')\n"
        "    conn.execute(f'UPDATE billing_accounts SET balance_credits = {0}')\n"
        "    ledger.commit_usage_fact(fact, call_index=0, pricing=p)\n"
    )
    found = violations("dag/runner.py", rogue)
    assert len(found) == 3
    assert violations("billing/delivery.py", "ledger.commit_usage_fact(f)\n") == []
    assert len(violations("runtime/billing_sink.py", "ledger.commit_usage_fact(f)\n")) == 1
    # Schema statements are not writes.
    assert (
        violations("billing/sqlite_store.py", "S = 'CREATE TABLE IF NOT EXISTS charge_receipts (id int)'\n")
        == []
    )
