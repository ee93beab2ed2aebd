"""The flags of every command that reads ledgers: ``--root``, ``--instance`` and ``--model``,
``--zeros``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from vllm_ledger.commands._values import instance, text
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.identity import default_root


def add_filters(p: argparse.ArgumentParser, what: str = "") -> None:
    """``--instance`` and ``--model``, as every read command takes them."""
    p.add_argument(
        "--instance",
        type=instance(),
        metavar="HOST:PORT",
        help=f"only this instance{what}, as `--by instance` prints it (gpu1:8000); a bare "
        "port (8000) takes that port's instances on every host",
    )
    p.add_argument(
        "--model",
        type=text("--model", "qwen3-8b"),
        metavar="NAME",
        help=f"only runs serving this model name{what}",
    )


# ---- ledger roots and unknown figures ------------------------------------------------------------


def add_roots(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--root",
        action="append",
        type=Path,
        metavar="DIR",
        help="ledger root (repeatable); default: $VLLM_LEDGER_DIR or ~/.local/share/vllm-ledger",
    )


def roots_of(args: argparse.Namespace) -> list[Path]:
    roots = args.root or [default_root(os.environ)]
    for r in roots:
        if not r.is_dir():
            raise BadArgument(
                f"ledger root {r} is not a directory: pass --root DIR where the ledgers are"
            )
    return roots


def add_zeros(p: argparse.ArgumentParser) -> None:
    """``--zeros``: print 0 where a figure is unknown (``read/known.py``), as every form of
    ``report``, ``export`` and ``timeline`` does when asked."""
    p.add_argument(
        "--zeros",
        action="store_true",
        help="print 0 where a figure is unknown (no second of its window vouched for, nothing "
        "counted) instead of ? (text), an empty cell (CSV) or null (JSON); see docs/ledger.md",
    )
