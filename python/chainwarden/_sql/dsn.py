"""Connection strings shown without their secret (docs/design.md §31): a password becomes `***` wherever a
URL or a libpq DSN is printed — reprs, errors, logs."""

from __future__ import annotations

import re

MASK = "***"

# `scheme://user:password@host`: the password is everything between the first `:` of the user part and `@`.
_URL_PASSWORD = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^:/?#@]*:)(?P<secret>[^@/?#]*)(?=@)")
# `password=...` in a URL's query or a key=value DSN: a quoted value (with \' and \\ escapes) or a bare word.
_PARAM_PASSWORD = re.compile(
    r"(?P<head>(?:^|[?&\s])password\s*=\s*)(?P<secret>'(?:[^'\\]|\\.)*'|[^&\s]*)", re.IGNORECASE
)


def masked(target: str) -> str:
    """`target` (a URL or a libpq key=value DSN) with every password replaced by `***`."""
    text = _URL_PASSWORD.sub(lambda m: m.group("head") + MASK, target, count=1)
    return _PARAM_PASSWORD.sub(lambda m: m.group("head") + MASK, text)
