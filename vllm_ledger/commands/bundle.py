"""vllm-ledger bundle: a self-contained plugin folder for PYTHONPATH (no pip, no network)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

from vllm_ledger.commands._files import add_output_folder, output_folder, say_wrote
from vllm_ledger.commands._refusals import flag_names
from vllm_ledger.commands._values import tz_name
from vllm_ledger.deploy.bundle import bundle
from vllm_ledger.formats.safe import printable

NAME = "bundle"
HELP = "write a plugin folder that PYTHONPATH=DIR vllm serve loads without pip"
EPILOG = """example:
  vllm-ledger bundle --output /srv/artifacts/ledger-plugin
  PYTHONPATH=/srv/artifacts/ledger-plugin VLLM_LEDGER_DIR=/srv/artifacts/usage vllm serve MODEL
  vllm-ledger bundle --tz Europe/Berlin --output /srv/artifacts/ledger-plugin
Keep the bundle beside the ledger root, not inside it, as README.md does ("In a container"):
the bundle mounted read-only, the root read-write.
exit status: 0 written, 2 a bad flag or a folder that is not empty and not a bundle, 1 the
system refused a write (a full disk, a denied folder)
"""


def _folder(_flag: str) -> Callable[[str], Path]:
    return Path  # the bundle checks the folder itself (and replaces only a bundle)


def configure(p: argparse.ArgumentParser) -> None:
    add_output_folder(p, _folder, help="folder to write (replaced if a bundle)")
    p.add_argument(
        "--tz",
        type=tz_name(),
        metavar="ZONE",
        help="record this zone in the bundle: the plugin writes it to ROOT/zone on its first "
        "start, and readers then cut 'today' in it ($VLLM_LEDGER_TZ in vLLM's environment wins)",
    )


def run(args: argparse.Namespace) -> int:
    folder = output_folder(args)
    with flag_names(tz="--tz"):
        files = bundle(folder, tz=args.tz)
    shown = printable(os.path.abspath(folder))
    say_wrote(folder, f" (a plugin bundle of {len(files)} files)")
    if args.tz is not None:
        print(f"the plugin records the zone {args.tz} in the ledger root (ROOT/zone) at start")
    print(f"enable with: PYTHONPATH={shown} VLLM_LEDGER_DIR=/path/to/ledgers vllm serve ...")
    return 0
