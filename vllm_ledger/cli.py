"""The command line: argument parsing only. Each command calls one library function.

Commands live in ``vllm_ledger/commands/<name>.py``, one per module, each with ``NAME``,
``HELP``, ``configure(parser)`` and ``run(args) -> int``, and are registered in
``commands.COMMANDS``. Only the module of the command that runs is imported: every other
command appears in ``--help`` from the registry, without its module.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

from vllm_ledger import __version__
from vllm_ledger.commands import COMMANDS
from vllm_ledger.errors import LedgerError

PROG = "vllm-ledger"


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
    parser = argparse.ArgumentParser(
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
    parser = build_parser(args_in)
    args = parser.parse_args(args_in)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except LedgerError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
