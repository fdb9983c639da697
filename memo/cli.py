"""memo's command line: ``python -m memo COMMAND ...``.

Every error memo raises on purpose (:class:`memo.errors.MemoError`) is printed as one line on stderr
with exit status 2; nothing already found is lost, because findings are written as they happen.
"""
from __future__ import annotations

import argparse
import sys

from memo import __version__
from memo.commands import command_modules
from memo.errors import MemoError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, status 2 (argparse's default prints usage too)
        self.exit(2, f"memo: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="memo", description="Coverage-guided model-mutation fuzzer for DL libraries.")
    parser.add_argument("--version", action="version", version=f"memo {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for module in command_modules():
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except MemoError as exc:
        print(f"memo: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("memo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
