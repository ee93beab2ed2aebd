"""The ledger root's time zone, ``ROOT/zone``: recorded once, when the ledger is switched on.

The file holds one IANA zone name and a newline. The plugin writes it on its first start
(writer rank 0 of a run) from ``$VLLM_LEDGER_TZ`` in vLLM's environment (``render --usage
--tz`` puts it there), else from the bundle's ``VLLM_LEDGER_TZ`` file (``bundle --tz``). It is
created whole and never replaced: written to a temporary name and hard-linked into place
(``link`` fails where the name exists), so a reader never sees half a name and two API
processes starting at once cannot both win. A root that already names another zone keeps it
(the plugin logs that once); remove the file to record a new one. Readers resolve the zone
with ``read/zone.py``: ``--tz`` and their own ``$VLLM_LEDGER_TZ`` beat this file.

Standard library only: this runs inside vLLM. ``record_zone`` raises ``OSError`` or
``ValueError``; the plugin catches, counts and logs them, never raising into vLLM.
"""

from __future__ import annotations

import contextlib
import os
import re
import zoneinfo
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

from vllm_ledger.infile import read_regular_file
from vllm_ledger.units import ZONE_ENV

ROOT_ZONE_FILE = "zone"  # ROOT/zone
BUNDLE_ZONE_FILE = ZONE_ENV  # DIR/VLLM_LEDGER_TZ in a bundle folder (deploy/bundle.py)
BUNDLE_MARKER = "VLLM_LEDGER_BUNDLE"
MAX_ZONE_CHARS = 64
MAX_ZONE_FILE_BYTES = 256
ZONE_NAME_RE = re.compile(r"[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*")

Recorded = Literal["written", "same", "kept"]


UTC = "UTC"
_NOT_ZONES = ("right", "posix")  # trees of the zone database that copy the zones


def zone_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a zone (``is not a known time zone``, ``is not a
    Region/City zone``), or None: an IANA region zone this machine's database knows
    (``Asia/Shanghai``, ``America/New_York``, ``Etc/UTC``), or ``UTC``. The one rule for the
    plugin, the launch files and every command."""
    if len(name) > MAX_ZONE_CHARS or not ZONE_NAME_RE.fullmatch(name):
        return "is not a known time zone"
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):  # "America" is a directory
        return "is not a known time zone"
    if name != UTC and ("/" not in name or name.split("/", 1)[0] in _NOT_ZONES):
        return "is not a Region/City zone"  # localtime, posixrules, Factory, right/UTC, ...
    return None


def check_zone(name: str) -> str:
    """``name`` if it is a zone by ``zone_problem``'s rule, else ``ValueError`` saying why."""
    problem = zone_problem(name)
    if problem is not None:
        raise ValueError(f"{name[:70]!r} {problem}")
    return name


def read_zone_text(path: Path) -> str:
    """The stripped text of a small zone file (``OSError`` if it is missing, not a regular
    file, too large or unreadable; ``ValueError`` if it is not ASCII)."""
    try:
        return read_regular_file(path, MAX_ZONE_FILE_BYTES).decode("ascii").strip()
    except UnicodeDecodeError:
        raise ValueError("it is not ASCII text") from None


def zone_to_record(env: Mapping[str, str], bundle_dir: Path | None = None) -> str | None:
    """The zone to record: ``$VLLM_LEDGER_TZ``, else the bundle's file, else None.

    ``bundle_dir`` defaults to the folder this package was loaded from, which is a bundle only
    when it holds the bundle marker (a checkout or site-packages never does)."""
    name = str(env.get(ZONE_ENV, "") or "").strip()
    if name:
        return name
    folder = bundle_dir if bundle_dir is not None else Path(__file__).resolve().parents[2]
    if not (folder / BUNDLE_MARKER).is_file():
        return None
    try:
        return read_zone_text(folder / BUNDLE_ZONE_FILE) or None
    except FileNotFoundError:
        return None


def record_zone(root: Path, name: str, *, pid: int | None = None) -> tuple[Recorded, str]:
    """Create ``root/zone`` holding ``name`` unless it exists. Returns ``("written", name)``,
    ``("same", name)`` (already there) or ``("kept", other)`` (another zone is recorded)."""
    check_zone(name)
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    path = root / ROOT_ZONE_FILE
    tmp = root / f".{ROOT_ZONE_FILE}.{os.getpid() if pid is None else pid}.tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()  # a leftover of a process that had this pid
    data = f"{name}\n".encode("ascii")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        try:
            os.link(tmp, path)  # atomic, and never replaces an existing name
        except FileExistsError:
            raise
        except OSError:  # a file system without hard links: create it exclusively instead
            fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644
            )
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
    except FileExistsError:
        existing = read_zone_text(path)
        return ("same", name) if existing == name else ("kept", existing)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return "written", name


__all__ = [
    "BUNDLE_ZONE_FILE",
    "MAX_ZONE_CHARS",
    "MAX_ZONE_FILE_BYTES",
    "ROOT_ZONE_FILE",
    "ZONE_ENV",
    "ZONE_NAME_RE",
    "check_zone",
    "read_zone_text",
    "record_zone",
    "zone_to_record",
]
