"""The command line: argument parsing only. Each command calls one library function.

Commands live in ``vllm_ledger/commands/<name>.py``, one per module, each with ``NAME``,
``HELP``, ``configure(parser)`` and ``run(args) -> int``; they are found by listing that
package, so adding a command never touches this file.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from collections.abc import Sequence
from types import ModuleType

from vllm_ledger import __version__, commands
from vllm_ledger.errors import LedgerError

PROG = "vllm-ledger"


def command_modules() -> list[ModuleType]:
    mods = []
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        mods.append(importlib.import_module(f"vllm_ledger.commands.{info.name}"))
    return mods


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="A restart-proof per-second token ledger for self-hosted vLLM.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for mod in command_modules():
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
    parser = build_parser()
    args = parser.parse_args(argv)
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
