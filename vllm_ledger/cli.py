"""The command line: argument parsing only. Each command calls one library function.

Commands live in ``vllm_ledger/commands/<name>.py``, one per module, each with ``NAME``,
``HELP``, ``configure(parser)`` and ``run(args) -> int``, and are registered in
``commands.COMMANDS``. Only the module of the command that runs is imported: every other
command appears in ``--help`` from the registry, without its module.

Whatever the input, what reaches the user on failure is one line on stderr, made safe for a
terminal, and an exit status: 2 for a usage error or a refused value (argparse's own errors
included: an unknown flag, a missing one, a bad choice), 1 for an error of the system (a full
disk) or one this code did not foresee (``VLLM_LEDGER_TRACEBACK=1`` shows its traceback).
An old flag spelling kept for one release adds one ``vllm-ledger: note:`` line on stderr
naming the new spelling, once the command line has parsed.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from vllm_ledger import __version__
from vllm_ledger.commands import COMMANDS
from vllm_ledger.errors import BadArgument, LedgerError
from vllm_ledger.formats.safe import printable

PROG = "vllm-ledger"


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors raised as one line instead of usage + error printed."""

    def error(self, message: str) -> NoReturn:
        raise BadArgument(message, hint=f"see {self.prog} --help")


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"vllm_ledger.commands.{COMMANDS[name][0]}")


def command_modules() -> list[ModuleType]:
    """Every command's module (for the docs and the tests; the CLI imports one)."""
    return [command_module(name) for name in sorted(COMMANDS)]


def _chosen(argv: Sequence[str]) -> str | None:
    """The command word: the first argument that is not an option."""
    for arg in argv:
        if arg == "--":
            return None
        if not arg.startswith("-"):
            return arg if arg in COMMANDS else None
    return None


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the command it names is configured (its module
    imported), and without, every command is."""
    chosen = _chosen(argv) if argv is not None else None
    parser = _Parser(
        prog=PROG,
        description="A restart-proof per-second token ledger for self-hosted vLLM.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in sorted(COMMANDS):
        if argv is not None and name != chosen:
            sub.add_parser(name, help=COMMANDS[name][1])
            continue
        mod = command_module(name)
        p = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=getattr(mod, "DESCRIPTION", mod.HELP),
            epilog=getattr(mod, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.configure(p)
        p.set_defaults(_run=mod.run)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args_in = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(args_in)
        args = _parse(parser, args_in)
        if not getattr(args, "_run", None):
            parser.print_help()
            return 2
        _notes(args)
        return int(args._run(args) or 0)
    except LedgerError as exc:
        return _fail(str(exc), 2)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:  # the system said no: a full disk, a denied folder
        where = f": {exc.filename}" if exc.filename else ""
        return _fail(f"{exc.strerror or exc}{where}", 1)
    except Exception as exc:  # a bug: still one line, with the way to see more
        from vllm_ledger.units import TRACEBACK_ENV

        if os.environ.get(TRACEBACK_ENV):
            raise
        return _fail(
            f"internal error ({type(exc).__name__}: {exc}): please report it; "
            f"{TRACEBACK_ENV}=1 shows the traceback",
            1,
        )


def _parse(parser: argparse.ArgumentParser, args_in: list[str]) -> argparse.Namespace:
    """``parser.parse_args``; an unknown argument names the command whose help lists the rest."""
    args, extra = parser.parse_known_args(args_in)
    if extra:
        chosen = _chosen(args_in)
        where = f"{PROG} {chosen}" if chosen else PROG
        raise BadArgument(f"unrecognized arguments: {' '.join(extra)}", hint=f"see {where} --help")
    return args


def _notes(args: argparse.Namespace) -> None:
    """One line on stderr per old flag spelling used (once each, however often it was given)."""
    from vllm_ledger.commands._renamed import deprecation_notes  # the command imported it

    for line in deprecation_notes(args):
        print(f"{PROG}: note: {printable(line)}", file=sys.stderr)


def _fail(message: str, code: int) -> int:
    """One line on stderr, whatever the message holds (a newline or escape is shown, not run)."""
    print(f"{PROG}: error: {printable(message)}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
