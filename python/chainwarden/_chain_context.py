"""The context a run carries: who it is for and how to find it again (user, session, tags, attributes).

One convention for every place that keeps, shows or exports a run (docs/containment.md, "Context that
travels"): the run's root node keeps the context in its metadata under ``user_id``, ``session_id``,
``tags`` and ``attributes``. An ``ExecutionContext`` writes them there from its ``ChainMetadata``; an
``ExecutionGraph`` user may do the same with ``create_root(name, metadata={...})``. Snapshots carry the
root's metadata as it is (so both snapshot formats keep the context exactly), and the readers here are
what ``inspect``, the reports, the dashboard and the OpenTelemetry export use.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, Protocol

from chainwarden._args import MAX_INT64
from chainwarden.errors import InvalidArgument, InvalidArgumentType

__all__ = [
    "CONTEXT_KEYS",
    "RunLabels",
    "Tags",
    "checked_attributes",
    "checked_tags",
    "context_of",
    "otel_attributes",
    "read_labels",
    "root_metadata",
    "tag_texts",
]

#: The keys of a root node's metadata that are the run's context.
CONTEXT_KEYS: Final = ("user_id", "session_id", "tags", "attributes")

#: Tags as given: a tuple of labels, or a mapping of key to value.
Tags = tuple[str, ...] | Mapping[str, str]


def checked_tags(tags: object) -> Tags:
    """``tags`` copied and frozen: a list or tuple of str becomes a tuple, a dict of str to str a read-only
    mapping; anything else is a ``TypeError`` naming the argument."""
    if isinstance(tags, Mapping):
        for key, value in tags.items():
            if not isinstance(key, str) or not isinstance(value, str):
                raise InvalidArgumentType(
                    f"tags must map str to str, got {type(key).__name__} -> {type(value).__name__}",
                    argument="tags",
                )
        return MappingProxyType(dict(tags))
    if isinstance(tags, list | tuple):
        for index, tag in enumerate(tags):
            if not isinstance(tag, str):
                raise InvalidArgumentType(
                    f"tags[{index}] must be a str, got {type(tag).__name__}", argument="tags"
                )
        return tuple(tags)
    raise InvalidArgumentType(
        f"tags must be a list or tuple of str, or a dict of str to str, got {type(tags).__name__}",
        argument="tags",
    )


def _json_copy(value: object, where: str, depth: int = 0) -> Any:
    """A copy of ``value`` made of JSON types only (tuples become lists); ``TypeError`` / ``ValueError``
    name the path of the first value that is not strict JSON (docs/design.md §23)."""
    if depth > 64:
        raise InvalidArgument(f"{where} is nested too deeply", argument=where)
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        if not -MAX_INT64 - 1 <= value <= MAX_INT64:
            raise InvalidArgument(f"{where}: integer out of the 64-bit range", argument=where)
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidArgument(f"{where} must be a finite number, got {value!r}", argument=where)
        return value
    if isinstance(value, Mapping):
        copied = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidArgumentType(
                    f"{where}: dict keys must be str, not {type(key).__name__}", argument=where
                )
            copied[key] = _json_copy(item, f"{where}[{key!r}]", depth + 1)
        return copied
    if isinstance(value, list | tuple):
        return [_json_copy(item, f"{where}[{i}]", depth + 1) for i, item in enumerate(value)]
    raise InvalidArgumentType(f"{where}: {type(value).__name__} is not JSON data", argument=where)


def checked_attributes(attributes: object) -> Mapping[str, Any]:
    """``attributes`` (a dict of str to JSON values) copied and frozen; ``TypeError`` / ``ValueError``
    name the offending entry."""
    if not isinstance(attributes, Mapping):
        raise InvalidArgumentType(
            f"attributes must be a dict or None, got {type(attributes).__name__}", argument="attributes"
        )
    copied: dict[str, Any] = _json_copy(attributes, "attributes")
    return MappingProxyType(copied)


class ChainOwner(Protocol):
    """What `root_metadata` reads of a chain's ``ChainMetadata`` (named here, not imported: the module every
    layer imports imports none of them)."""

    @property
    def request_id(self) -> str: ...
    @property
    def org_id(self) -> str: ...
    @property
    def team(self) -> str: ...
    @property
    def service(self) -> str: ...
    @property
    def user_id(self) -> str | None: ...
    @property
    def session_id(self) -> str | None: ...
    @property
    def tags(self) -> Tags: ...
    @property
    def attributes(self) -> Mapping[str, Any] | None: ...


def root_metadata(meta: ChainOwner) -> dict[str, Any]:
    """What a chain's root node keeps of its ``ChainMetadata``: the request id, the non-empty owner fields
    and the context (only what was set)."""
    out: dict[str, Any] = {"request_id": meta.request_id}
    for name in ("org_id", "team", "service"):
        value = getattr(meta, name)
        if value:
            out[name] = value
    out.update(context_of(meta.user_id, meta.session_id, meta.tags, meta.attributes))
    return out


def context_of(
    user_id: str | None, session_id: str | None, tags: Tags, attributes: Mapping[str, Any] | None
) -> dict[str, Any]:
    """A run's context (``CONTEXT_KEYS``) as plain JSON values, only what was set: what a chain's root
    node and a run's record keep."""
    out: dict[str, Any] = {}
    if user_id is not None:
        out["user_id"] = user_id
    if session_id is not None:
        out["session_id"] = session_id
    if tags:
        out["tags"] = dict(tags) if isinstance(tags, Mapping) else list(tags)
    if attributes:
        out["attributes"] = dict(attributes)  # already a JSON copy (checked_attributes)
    return out


@dataclass(frozen=True, slots=True)
class RunLabels:
    """A run's context as read back from a saved root (anything malformed is left out, never guessed)."""

    user_id: str | None = None
    session_id: str | None = None
    tags: tuple[str, ...] | dict[str, str] = ()
    attributes: dict[str, Any] = field(default_factory=dict)

    def is_empty(self) -> bool:
        return self.user_id is None and self.session_id is None and not self.tags and not self.attributes

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values, ``tags`` as saved (a list, or a dict)."""
        return {
            "user_id": self.user_id,
            "session_id": self.session_id,
            "tags": dict(self.tags) if isinstance(self.tags, dict) else list(self.tags),
            "attributes": dict(self.attributes),
        }


def read_labels(metadata: object) -> RunLabels:
    """The context kept in a root node's metadata (``CONTEXT_KEYS``); tolerant of files written by hand."""
    if not isinstance(metadata, Mapping):
        return RunLabels()
    user, session = metadata.get("user_id"), metadata.get("session_id")
    raw_tags = metadata.get("tags")
    tags: tuple[str, ...] | dict[str, str] = ()
    if isinstance(raw_tags, Mapping):
        tags = {k: v for k, v in raw_tags.items() if isinstance(k, str) and isinstance(v, str)}
    elif isinstance(raw_tags, Sequence) and not isinstance(raw_tags, str | bytes):
        tags = tuple(t for t in raw_tags if isinstance(t, str))
    attributes = metadata.get("attributes")
    return RunLabels(
        user_id=user if isinstance(user, str) else None,
        session_id=session if isinstance(session, str) else None,
        tags=tags,
        attributes=dict(attributes) if isinstance(attributes, Mapping) else {},
    )


def tag_texts(tags: tuple[str, ...] | Mapping[str, str]) -> list[str]:
    """Tags as labels: a mapping's entries as ``key=value``."""
    if isinstance(tags, Mapping):
        return [f"{key}={value}" for key, value in tags.items()]
    return list(tags)


def otel_attributes(labels: RunLabels) -> dict[str, Any]:
    """The context as span attributes: ``user.id``, ``session.id`` (the OpenTelemetry conventions'
    names), ``chainwarden.tags`` and ``chainwarden.attribute.<key>`` (non-scalar values as JSON text)."""
    out: dict[str, Any] = {}
    if labels.user_id is not None:
        out["user.id"] = labels.user_id
    if labels.session_id is not None:
        out["session.id"] = labels.session_id
    if labels.tags:
        out["chainwarden.tags"] = tag_texts(labels.tags)
    for key, value in labels.attributes.items():
        scalar = isinstance(value, bool | str | int) or (isinstance(value, float) and math.isfinite(value))
        out[f"chainwarden.attribute.{key}"] = value if scalar else json.dumps(value, sort_keys=True)
    return out
