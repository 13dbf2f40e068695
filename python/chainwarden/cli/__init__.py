"""The ``chainwarden`` command: ``demo``, ``inspect``, ``render``, ``worker`` and ``--version``.

The command line needs ``click`` and ``rich``, installed by the ``cli`` extra
(``pip install 'chainwarden[cli]'``); the library itself needs neither, so without them the command says what
to install instead of failing with a traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

__all__ = ["EXIT_BROKEN_PIPE", "main"]

# What a Unix tool killed by SIGPIPE reports (128 + 13): `chainwarden demo | head -3` ends like `cat` would.
EXIT_BROKEN_PIPE = 141

_MISSING_EXTRA = (
    "chainwarden: the command line needs the 'cli' extra ({name} is not installed).\n"
    "Install it with:  pip install 'chainwarden[cli]'\n"
)


def _silence_stdout() -> None:
    """The reader went away: point stdout at /dev/null so the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout without a file descriptor (embedded, captured): nothing to flush
        pass


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the command with ``argv`` (default: ``sys.argv[1:]``) and returns its exit status."""
    try:
        import click  # noqa: PLC0415 - optional: the `cli` extra

        from chainwarden.cli.app import cli  # noqa: PLC0415 - imports click and rich
    except ImportError as exc:
        if exc.name in ("click", "rich") or (exc.name or "").startswith(("click.", "rich.")):
            sys.stderr.write(_MISSING_EXTRA.format(name=exc.name))
            return 1
        raise
    args = list(sys.argv[1:] if argv is None else argv)
    # Parsing and invoking directly (not click's `main`), so a closed pipe ends with EXIT_BROKEN_PIPE and
    # every other outcome maps to one exit status here.
    try:
        with cli.make_context("chainwarden", args) as ctx:
            code = cli.invoke(ctx)
        sys.stdout.flush()
    except BrokenPipeError:
        _silence_stdout()
        return EXIT_BROKEN_PIPE
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.Abort:
        sys.stderr.write("Aborted.\n")
        return 1
    return code if isinstance(code, int) else 0
