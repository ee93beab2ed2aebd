"""Declared stops: an operator's record that an instance was stopped on purpose.

``ROOT/declared-stops.jsonl``, append-only, one JSON object per line::

    {"instance": "gpu1:8000", "from": 1796000000, "until": 1796003600,
     "reason": "upgrade to 0.33", "declared_at": 1796010000.0, "by": "ops"}

A report counts a declared stretch as *declared idle* for that instance: neither covered nor
uncovered, shown apart (``--strict`` ignores declarations). Only whole seconds count; the file
is read with the same distrust as a ledger: a regular file, at most ``MAX_FILE_BYTES``, every
line's types and ranges checked; a line that fails is refused and named, never half-used.

Standard library only (the write side); the read side parses with ``parse``.
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.errors import BadDeclaration
from vllm_ledger.strictjson import whole_in
from vllm_ledger.units import EARLIEST_AT, LATEST_AT

DECLARATIONS_NAME = "declared-stops.jsonl"
MAX_FILE_BYTES = 1 << 20  # about 5000 declarations
MAX_REASON_CHARS = 200
MAX_STOP_S = 366 * 86400  # one declaration covers at most a year


@dataclass(frozen=True)
class Declaration:
    instance: str
    from_ts: int
    until_ts: int
    reason: str
    declared_ts: float
    by: str = ""


def path_in(root: Path) -> Path:
    return root / DECLARATIONS_NAME


def check(d: Declaration) -> Declaration:
    """The declaration if every field is of its type and in its range; else BadDeclaration."""
    if not isinstance(d.instance, str) or not 1 <= len(d.instance) <= 300 or ":" not in d.instance:
        raise BadDeclaration(
            f"instance {d.instance!r} is not HOST:PORT",
            hint="give it as a report names instances",
            argument="instance",
            value=d.instance,
            example="gpu1:8000",
        )
    for name, v in (("from", d.from_ts), ("until", d.until_ts)):
        if not whole_in(v, EARLIEST_AT, LATEST_AT):
            raise BadDeclaration(f"{name} {v!r} is not whole Unix seconds between 2000 and 2100")
    if d.until_ts <= d.from_ts:
        raise BadDeclaration(f"until {d.until_ts} is not after from {d.from_ts}")
    if d.until_ts - d.from_ts > MAX_STOP_S:
        raise BadDeclaration(f"{d.until_ts - d.from_ts} s is longer than a year: split it")
    if not isinstance(d.reason, str) or not 1 <= len(d.reason) <= MAX_REASON_CHARS:
        raise BadDeclaration(f"reason must be 1 to {MAX_REASON_CHARS} characters")
    if (
        isinstance(d.declared_ts, bool)
        or not isinstance(d.declared_ts, (int, float))
        or not math.isfinite(d.declared_ts)
    ):
        raise BadDeclaration(f"declared_at {d.declared_ts!r} is not a time")
    if not isinstance(d.by, str) or len(d.by) > 100:
        raise BadDeclaration("by must be at most 100 characters")
    return d


def to_line(d: Declaration) -> str:
    doc = {
        "instance": d.instance,
        "from": d.from_ts,
        "until": d.until_ts,
        "reason": d.reason,
        "declared_at": round(d.declared_ts, 3),
        "by": d.by,
    }
    return json.dumps(doc, ensure_ascii=True, sort_keys=True) + "\n"


def append(root: Path, d: Declaration) -> Path:
    """Append one checked declaration, whole (one ``write`` on an ``O_APPEND`` descriptor), and
    make it durable. Refuses anything but a regular file at the path."""
    check(d)
    path = path_in(root)
    line = to_line(d).encode("ascii")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    fd = os.open(path, flags, 0o644)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadDeclaration(f"{path} is not a regular file")
        if st.st_size + len(line) > MAX_FILE_BYTES:
            raise BadDeclaration(f"{path} holds {st.st_size} bytes: it is full")
        if os.write(fd, line) != len(line):
            raise OSError(f"short write to {path}")
        os.fsync(fd)
    finally:
        os.close(fd)
    return path


def parse(data: bytes) -> tuple[list[Declaration], list[str]]:
    """The declarations in a file's bytes, and one error per line that is refused."""
    found: list[Declaration] = []
    errors: list[str] = []
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            doc = json.loads(raw.decode("utf-8"), parse_constant=_no_constant)
            if not isinstance(doc, dict) or set(doc) != {
                "instance",
                "from",
                "until",
                "reason",
                "declared_at",
                "by",
            }:
                raise BadDeclaration("not a declaration object")
            found.append(
                check(
                    Declaration(
                        doc["instance"],
                        doc["from"],
                        doc["until"],
                        doc["reason"],
                        doc["declared_at"],
                        doc["by"],
                    )
                )
            )
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            errors.append(f"line {n}: {exc}")
    return found, errors


def _no_constant(name: str) -> float:
    raise BadDeclaration(f"{name} is not a number")
