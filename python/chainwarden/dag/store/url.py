"""Store URLs: `sqlite:///relative.db`, `sqlite:////absolute.db`, `:memory:`, `postgresql://…`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from chainwarden._secrets import mask_secrets
from chainwarden.dag.store.errors import StoreUrlError

MEMORY = ":memory:"


@dataclass(frozen=True, slots=True)
class StoreUrl:
    kind: Literal["sqlite", "postgresql"]
    target: str  # a SQLite path (or ":memory:"), or the libpq connection URI


def parse(url: object) -> StoreUrl:
    if not isinstance(url, str):
        raise StoreUrlError(f"url must be a str, not {type(url).__name__}")
    if url in (MEMORY, "sqlite://", "sqlite:///:memory:", "sqlite://:memory:"):
        return StoreUrl("sqlite", MEMORY)
    if url.startswith("sqlite:///"):
        path = url[len("sqlite:///") :]
        if not path or path.endswith("/"):
            raise StoreUrlError(f"url {mask_secrets(url)!r} names no SQLite file")
        return StoreUrl("sqlite", path)
    if url.startswith(("postgresql://", "postgres://")):
        return StoreUrl("postgresql", url)
    raise StoreUrlError(
        f"url {mask_secrets(url)!r} is not a store URL "
        "(expected 'sqlite:///path.db', ':memory:' or 'postgresql://...')"
    )
