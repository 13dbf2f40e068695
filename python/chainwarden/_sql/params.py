"""The one parameter style of chainwarden's SQL: `%s` markers (psycopg's), turned into sqlite3's `?` for
SQLite. Statements are constants, so the translation is cached."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=512)
def qmark(statement: str) -> str:
    """`statement` with its `%s` markers as sqlite3's `?` (no statement of ours has a literal `%`)."""
    return statement.replace("%s", "?")
