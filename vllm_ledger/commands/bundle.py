"""vllm-ledger bundle: a self-contained plugin folder for PYTHONPATH (no pip, no network)."""

from __future__ import annotations

import argparse
from pathlib import Path

from vllm_ledger.deploy.bundle import bundle

NAME = "bundle"
HELP = "write a plugin folder that PYTHONPATH=DIR vllm serve loads without pip"
EPILOG = """example:
  vllm-ledger bundle /srv/artifacts/usage/plugin
  PYTHONPATH=/srv/artifacts/usage/plugin VLLM_LEDGER_DIR=/srv/artifacts/usage vllm serve MODEL
"""


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("dir", type=Path, metavar="DIR", help="folder to write (replaced if a bundle)")


def run(args: argparse.Namespace) -> int:
    files = bundle(args.dir)
    print(f"wrote {len(files)} files to {args.dir}")
    print(f"enable with: PYTHONPATH={args.dir} VLLM_LEDGER_DIR=/path/to/ledgers vllm serve ...")
    return 0
