"""The ``chemmy`` console command: argument parsing and dispatch, nothing else.

Every subcommand lives in its own module under ``client_cli/``. A module that adds
subcommands defines ``register(subparsers)``, which adds its parsers and sets
``run=<handler>`` on each with ``set_defaults``; a handler takes the parsed
``argparse.Namespace`` and returns the exit status. To add a module, write it and add
its name to :data:`COMMAND_MODULES` (one line). Modules are imported when the parser is
built, so they should import heavy dependencies inside their handlers.

Errors the user can fix (a bad argument, an unreadable file) are raised as
:class:`CliError` and printed as one line, ``chemmy: error: ...``, exit status 2 — never
a traceback. Argument parsing errors take the same path.

This module must never hold a subcommand's logic.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

__all__ = ["COMMAND_MODULES", "EXIT_USAGE", "CliError", "build_parser", "main"]

#: Modules that register subcommands, in the order they appear in ``chemmy --help``.
COMMAND_MODULES: tuple[str, ...] = (
    "client_cli.offline",  # coup, odds, simulate, verify
    "client_cli.play",  # play (the full-screen table)
    "client_cli.scripts",  # tables, balance, deposit, history
    "client_cli.responsible",  # break (a time-out or a self-exclusion)
    "client_cli.bot",  # bot
    "client_cli.operator",  # transactions, void, table (operators)
)

EXIT_USAGE = 2  # bad arguments or unusable input (as argparse)
EXIT_INTERRUPTED = 130

Handler = Callable[[argparse.Namespace], int]


class CliError(Exception):
    """A mistake in what the user asked for; printed as one line, exit status 2."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse, but a parse error raises :class:`CliError` instead of printing usage."""

    def error(self, message: str) -> NoReturn:
        command = self.prog.partition(" ")[2]
        if "://" in message:  # a server URL given where the command takes something else
            message += " (give the server as --url URL, or set $CHEMMY_URL)"
        raise CliError(f"{command}: {message}" if command else message)


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(
        prog="chemmy",
        description="Chemmy baccarat: table tools, odds and shoe verification.",
    )
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=ArgumentParser
    )
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``chemmy`` with ``argv`` (default: the command line) and return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv) if argv is not None else None)
        run: Handler = args.run
        return run(args)
    except CliError as exc:
        print(f"chemmy: error: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    except SystemExit as exc:  # --help, --version: argparse exits on its own
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    except KeyboardInterrupt:
        print("chemmy: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `chemmy odds | head -1`
        return 0


if __name__ == "__main__":
    sys.exit(main())
