"""Secrets never leave their object (docs/design.md §31): how a URL, a DSN or a message naming one is shown.

Every repr, error message, log line, safety event and span that may name a server goes through
``mask_secrets``: the password of any URL in the text (``redis://:s3cret@host`` → ``redis://:***@host``)
and any ``key=value`` parameter whose key names a secret (``password=``, ``sslpassword=``,
``token=``, ``api_key=`` …, in URL queries and in libpq DSNs) become ``***``. The rest of the text is
kept, so the operator still sees which server it was.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["MASK", "mask_secrets"]

MASK: Final = "***"

# The password of a URL's userinfo: `scheme://user:PASSWORD@host`. Greedy up to the last `@` before a
# space or `/`, so a password with an unencoded `@` is masked whole.
_USERINFO: Final = re.compile(r"(?P<pre>\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/@:]*:)(?P<pw>[^\s/]*)@")
# key=value pairs of a query string (`?password=x&...`) or of a libpq DSN (`password=x host=...`,
# `password='a b'`): the value runs to the next separator, or is a single-quoted string.
_SECRET_PARAM: Final = re.compile(
    r"(?P<key>\b[A-Za-z_]*(?:pass(?:word|wd)?|secret|token|api[_-]?key)[A-Za-z_]*)(?P<eq>\s*=\s*)"
    r"(?P<value>'(?:[^'\\]|\\.)*'|[^\s&;#,)]*)",
    re.IGNORECASE,
)


def mask_secrets(text: object) -> str:
    """``text`` (a URL, a DSN, a path, or a message naming them) as it may be shown, with passwords and
    secret parameters replaced by ``***``. Never raises; a value that is not a str shows its type only."""
    if not isinstance(text, str):
        return f"<{type(text).__name__}>"
    masked = _USERINFO.sub(lambda m: f"{m['pre']}{MASK}@", text)
    return _SECRET_PARAM.sub(lambda m: f"{m['key']}{m['eq']}{MASK}", masked)
