"""The `chainwarden` command."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from chainwarden import demo


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="chainwarden", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo_cmd = sub.add_parser("demo", help="simulate an agent run and show what chainwarden records")
    demo_cmd.add_argument("--only", choices=[name for name, _ in demo.SECTIONS], help="run one part")
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo.run(sys.stdout, only=args.only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
