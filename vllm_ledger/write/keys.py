"""Naming an API key without keeping it: an operator's name, or a short keyed hash.

A raw key is never stored, logged or shown. The attribution middleware names the bearer key of
each request as:

* the operator's name for it, from the names file ``VLLM_LEDGER_KEY_NAMES`` (JSON: name ->
  ``"sha256:<64 hex>"``, the SHA-256 of the key; ``vllm-ledger keys hash`` prints that line),
* else ``key:`` + the first 8 hex digits of HMAC-SHA256(the root's secret, key): the same key
  gives the same name on every restart and in every API process of the root, and the name
  says nothing of the key to someone without the secret.

The secret is 32 random bytes in ``ROOT/.vllm-ledger-key-secret`` (mode 0600), made by the
first process that needs it: written to a temporary file, then linked into place, so two
processes starting at once agree on one. Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import stat
from collections.abc import Mapping
from pathlib import Path

from vllm_ledger.errors import KeyNamesError as KeyNamesError  # raised by names_file
from vllm_ledger.units import KEY_NAMES_ENV

NAMES_ENV = KEY_NAMES_ENV  # the names file's variable (``units.py`` spells every one)

SECRET_FILE = ".vllm-ledger-key-secret"
MAX_NAMES_FILE_BYTES = 1 << 20
MAX_NAME_CHARS = 64
KEY_LABEL_PREFIX = "key:"
MAX_MEMO = 4096  # key names remembered in a process (cleared when full)
FOLDED = "other"  # the label of values folded past the per-hour bound (write/recorder.py)
_HASH = re.compile(r"sha256:([0-9a-f]{64})")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,63}")
_SECRET = re.compile(rb"[0-9a-f]{64}\n?")


def key_hash(raw_key: bytes) -> str:
    """``sha256:<hex>`` of a key: what the names file holds for it."""
    return "sha256:" + hashlib.sha256(raw_key).hexdigest()


def parse_names(text: str) -> dict[str, str]:
    """The names file's mapping, as hash hex -> name; ``KeyNamesError`` saying what is wrong."""
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise KeyNamesError(f"not JSON ({exc})") from None
    if not isinstance(doc, dict):
        raise KeyNamesError('not a JSON object of name -> "sha256:<64 hex>"')
    out: dict[str, str] = {}
    for name, value in doc.items():
        if not _NAME.fullmatch(name):
            raise KeyNamesError(
                f"name {name[:40]!r} is not 1-64 letters, digits or ._@+- (starting with a "
                "letter or digit)"
            )
        if name == FOLDED:
            raise KeyNamesError(f"{name!r} names the keys folded past the bound: pick another")
        m = _HASH.fullmatch(value) if isinstance(value, str) else None
        if m is None:
            raise KeyNamesError(
                f'{name}: {str(value)[:40]!r} is not "sha256:<64 lowercase hex>" '
                "(vllm-ledger keys hash prints it)"
            )
        if m.group(1) in out:
            raise KeyNamesError(f"{name}: the same key is named {out[m.group(1)]!r} too")
        out[m.group(1)] = name
    return out


def read_names(path: Path) -> dict[str, str]:
    """Read the names file: a regular file, at most 1 MiB; ``KeyNamesError`` otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise KeyNamesError(f"cannot open {path}: {exc.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise KeyNamesError(f"{path} is not a regular file")
        data = f.read(MAX_NAMES_FILE_BYTES + 1)
    if len(data) > MAX_NAMES_FILE_BYTES:
        raise KeyNamesError(f"{path} is over 1 MiB")
    try:
        return parse_names(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise KeyNamesError(f"{path} is not UTF-8") from None


def root_secret(root: Path) -> bytes:
    """The root's secret for key labels, made once (``OSError`` when it can be neither read
    nor made: the caller names no key then)."""
    path = root / SECRET_FILE
    for _attempt in range(3):
        got = _read_secret(path)
        if got is not None:
            return got
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f"{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            os.write(fd, secrets.token_hex(32).encode() + b"\n")
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # fails where another process made it first: theirs is kept
        except FileExistsError:
            pass
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    raise OSError(f"{path} holds no secret (64 hex digits)")


def read_secret(root: Path) -> bytes | None:
    """The root's secret where one was made, else None (never makes one: for a reader)."""
    return _read_secret(root / SECRET_FILE)


def _read_secret(path: Path) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise OSError(f"{path} is not a regular file")
        data = f.read(128)
    if not _SECRET.fullmatch(data):
        raise OSError(f"{path} holds no secret (64 hex digits)")
    return bytes.fromhex(data[:64].decode())


class KeyLabels:
    """Names a key: the operator's name where the names file has its hash, else ``key:`` and
    8 hex digits of its HMAC under the root's secret."""

    __slots__ = ("_memo", "_names", "_secret")

    def __init__(self, secret: bytes, names: Mapping[str, str] | None = None) -> None:
        self._secret = secret
        self._names = dict(names or {})
        # Names already worked out, by Python's keyed hash of the key (SipHash under this
        # process's random seed: nobody can make two keys meet), in memory only and bounded:
        # an HMAC per request costs more than the rest of the middleware's work on a small body.
        self._memo: dict[int, str] = {}

    def label(self, raw_key: bytes) -> str:
        memo = self._memo
        h = hash(raw_key)
        got = memo.get(h)
        if got is None:
            if len(memo) >= MAX_MEMO:
                memo.clear()
            got = memo[h] = self._label(raw_key)
        return got

    def _label(self, raw_key: bytes) -> str:
        if self._names:
            name = self._names.get(hashlib.sha256(raw_key).hexdigest())
            if name is not None:
                return name
        digest = hmac.new(self._secret, raw_key, hashlib.sha256).hexdigest()
        return KEY_LABEL_PREFIX + digest[:8]
