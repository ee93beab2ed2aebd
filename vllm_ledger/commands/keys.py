"""vllm-ledger keys: a key names file's line for an API key, and the label a key gets."""

from __future__ import annotations

import argparse
import getpass
import os
import sys
from pathlib import Path

from vllm_ledger.commands._files import input_file
from vllm_ledger.deploy.keynames import (
    MAX_KEY_BYTES,
    key_label,
    names_entry,
    parse_key,
    read_names_file,
)
from vllm_ledger.errors import BadArgument, KeyNamesError
from vllm_ledger.format.identity import default_root
from vllm_ledger.write.keys import MAX_NAMES_FILE_BYTES, NAMES_ENV, key_hash

NAME = "keys"
HELP = "name API keys for attribution: a key names file's line, or the label a key gets"
EPILOG = f"""examples:
  vllm-ledger keys hash --name alice < alice.key >> key-names.lines
  vllm-ledger keys hash < alice.key
  vllm-ledger keys label --root /srv/artifacts/usage < alice.key
  vllm-ledger keys label --root /srv/artifacts/usage --key-names /etc/vllm-ledger/key-names.json

The key is read from stdin (typed at a terminal, it is not shown), never from the command
line, and never printed. hash prints "NAME": "sha256:<64 hex>", a line of the key names file
(a JSON object; {NAMES_ENV} or the host file's attribution.key_names names it), or the bare
hash without --name. label prints what the ledger under --root shows for the key: the
operator's name from the names file (--key-names, else ${NAMES_ENV}), or key: and 8 hex digits
of a keyed hash under the root's secret, which vLLM makes on its first start with the
middleware; a root without one says so. See docs/attribution.md.
exit status: 0 printed, 2 a bad flag, no key on stdin, a bad name or names file, or a root
without a key secret
"""

ACTIONS = ("hash", "label")


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "action",
        choices=ACTIONS,
        help="hash: the names file's line for the key on stdin; label: the ledger's label for it",
    )
    p.add_argument(
        "--name",
        metavar="NAME",
        help="with hash: the operator's name for the key (1-64 letters, digits or ._@+-); "
        "without it, the bare hash is printed",
    )
    p.add_argument(
        "--root",
        type=Path,
        metavar="DIR",
        help="with label: the ledger root whose secret labels keys (default: $VLLM_LEDGER_DIR "
        "or ~/.local/share/vllm-ledger)",
    )
    p.add_argument(
        "--key-names",
        type=input_file(
            "--key-names", "/etc/vllm-ledger/key-names.json", max_bytes=MAX_NAMES_FILE_BYTES
        ),
        metavar="FILE",
        help=f"with label: the key names file vLLM is given (default: ${NAMES_ENV}, if set)",
    )


def run(args: argparse.Namespace) -> int:
    if args.action == "hash":
        for flag, value in (("--root", args.root), ("--key-names", args.key_names)):
            if value is not None:
                raise BadArgument(f"{flag} is for keys label: hash needs only the key")
        key = _read_key()
        if args.name is None:
            print(key_hash(key))
            return 0
        try:
            print(names_entry(args.name, key))
        except KeyNamesError as exc:  # "name 'x' is not ...": said of the flag
            what = str(exc)
            raise BadArgument(
                "--" + what if what.startswith("name ") else f"--name: {what}"
            ) from None
        return 0
    if args.name is not None:
        raise BadArgument("--name is for keys hash: label reads the names from --key-names")
    names_path = args.key_names
    if names_path is None and os.environ.get(NAMES_ENV, "").strip():
        names_path = input_file(f"${NAMES_ENV}", "FILE", max_bytes=MAX_NAMES_FILE_BYTES)(
            os.environ[NAMES_ENV].strip()
        )
    names = read_names_file(names_path) if names_path is not None else {}
    root = args.root or default_root(os.environ)
    print(key_label(_read_key(), root, names))
    return 0


def _read_key() -> bytes:
    """The key from stdin: asked for without echo at a terminal, else read (bounded)."""
    if sys.stdin is not None and sys.stdin.isatty():
        return parse_key(getpass.getpass("API key (not shown): ").encode("utf-8"))
    stream = sys.stdin.buffer if sys.stdin is not None else None
    data = stream.read(MAX_KEY_BYTES + 1) if stream is not None else b""
    return parse_key(data)
