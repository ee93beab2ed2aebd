"""The operator's side of key names: a names file's line for a key, and the label a key gets.

The attribution middleware names each request's bearer key as the operator's name for it (the
names file, ``VLLM_LEDGER_KEY_NAMES``: name -> the key's SHA-256) or else ``key:`` and 8 hex
digits of an HMAC under the root's secret (``write/keys.py``). ``vllm-ledger keys`` answers the
two questions an operator has, from a key read on stdin (never from argv):

* ``names_entry``: the line to put in the names file, ``"NAME": "sha256:<64 hex>"``;
* ``key_label``: the label the ledger shows for the key under a root, with the same names and
  the root's secret, read and never made here (vLLM with the middleware makes it on its first
  start): a root without one says so instead.

A key is taken as the middleware takes a bearer token: surrounding white space dropped; it must
be one line. The key is never part of a message: errors say what is wrong with it, not what it
is.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from vllm_ledger.errors import BadArgument, KeyNamesError
from vllm_ledger.write import keys

MAX_KEY_BYTES = 16 * 1024  # more than any HTTP server takes in one header


def parse_key(data: bytes) -> bytes:
    """The key in ``data`` (what stdin held), as the middleware reads a bearer token."""
    if len(data) > MAX_KEY_BYTES:
        raise BadArgument(
            f"stdin holds more than {MAX_KEY_BYTES // 1024} KiB: give the key alone, on one line"
        )
    key = data.strip()
    if not key:
        raise BadArgument("no key on stdin: pipe it in (e.g. < alice.key) or type it when asked")
    if b"\n" in key or b"\r" in key:
        raise BadArgument("stdin holds more than one line: give one key, on one line")
    return key


def names_entry(name: str, raw_key: bytes) -> str:
    """``"NAME": "sha256:<hex>"``, the names file's line for the key; ``KeyNamesError`` for a
    name the file could not hold."""
    digest = keys.key_hash(raw_key)
    keys.parse_names(json.dumps({name: digest}))  # the file's own rules for a name
    return f"{json.dumps(name)}: {json.dumps(digest)}"


def key_label(raw_key: bytes, root: Path, names: Mapping[str, str]) -> str:
    """The label the ledger under ``root`` shows for the key: the operator's name where
    ``names`` (hash hex -> name) has it, else ``key:`` and 8 hex digits under the root's
    secret. ``BadArgument`` when the root has no secret yet, or one that cannot be read."""
    named = names.get(keys.key_hash(raw_key).removeprefix("sha256:"))
    if named is not None:
        return named
    if not root.is_dir():
        raise BadArgument(
            f"ledger root {root} is not a directory",
            hint="pass the folder where the ledgers are",
            argument="root",
            value=str(root),
        )
    path = root / keys.SECRET_FILE
    try:
        secret = keys.read_secret(root)  # read only: never made here
    except OSError as exc:
        why = exc.strerror or str(exc)
        raise BadArgument(f"the root's key secret {path} cannot be read: {why}") from None
    if secret is None:
        raise BadArgument(
            f"{root} has no key secret yet ({keys.SECRET_FILE}): vLLM with the ledger's "
            "middleware makes it on its first start, and no key has a label under this root "
            "until then (docs/attribution.md)"
        )
    return keys.KeyLabels(secret, names).label(raw_key)


def read_names_file(path: Path) -> dict[str, str]:
    """The names file as hash hex -> name; a file that cannot be used is one line naming it."""
    try:
        return keys.read_names(path)
    except KeyNamesError as exc:
        raise KeyNamesError(f"key names file {path}: {exc}") from None


__all__ = ["MAX_KEY_BYTES", "key_label", "names_entry", "parse_key", "read_names_file"]
