"""Write docs/cli.md from the commands' own --help (tests/test_cli.py checks it is current)."""

from __future__ import annotations

import argparse
import io
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllm_ledger.cli import build_parser, command_modules  # noqa: E402


def render() -> str:
    os.environ["COLUMNS"] = "100"
    parser = build_parser()
    parts = ["# Command reference", "", "Generated from `--help` by `scripts/gen_cli_docs.py`.", ""]
    buf = io.StringIO()
    with redirect_stdout(buf):
        parser.print_help()
    parts += ["```", buf.getvalue().rstrip(), "```", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for mod in command_modules():
        p = sub.choices[mod.NAME]
        buf = io.StringIO()
        with redirect_stdout(buf):
            p.print_help()
        parts += [f"## {mod.NAME}", "", "```", buf.getvalue().rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    (REPO / "docs" / "cli.md").write_text(render())
    print("wrote docs/cli.md")
