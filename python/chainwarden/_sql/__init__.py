"""The one SQL layer of chainwarden's stores — the DAG store, the billing ledger, the outbox and the
PostgreSQL budget backend (docs/design.md §36): connections (a `psycopg_pool` pool for PostgreSQL, one opening
for SQLite files), one parameter style (`%s`), schema versions in one table, and errors classified as
transient, ambiguous or permanent; what it shows of a server goes through `chainwarden._secrets`.
Internal: the stores' public errors stay their own."""

from chainwarden._sql.faults import Fault, Unreachable, classify
from chainwarden._sql.params import qmark
from chainwarden._sql.schema import Schema, columns, ensure, table_exists

__all__ = [
    "Fault",
    "Schema",
    "Unreachable",
    "classify",
    "columns",
    "ensure",
    "qmark",
    "table_exists",
]
