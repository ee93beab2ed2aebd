"""The one time-zone rule every reader uses to cut "today" (and days, months, local times).

    --tz ZONE  >  $VLLM_LEDGER_TZ  >  ROOT/zone  >  Asia/Shanghai (the default)

The first level that is set decides; the levels below it are not even read. ``ROOT/zone`` is
written by the plugin when the ledger is switched on with a zone (``render --usage --tz``,
``bundle --tz``, or ``VLLM_LEDGER_TZ`` in vLLM's environment; see ``write/plugin.py``): one
IANA name and a newline. It is read as the store reads every small file (a regular file, at
most ``MAX_ZONE_FILE_BYTES``, never a FIFO that would block); a zone file that cannot be read
or does not hold a known zone is ignored with one warning (``ZoneChoice.warnings``) and the
rule falls through to the default. Roots without a zone file abstain; roots whose files name
different zones are refused with one line asking for ``--tz``.

Only IANA region zones (``Region/City``: ``Asia/Shanghai``, ``America/New_York``,
``Etc/UTC``) and ``UTC`` are zones here (``is_zone_name``): ``localtime``, ``posixrules``,
``Factory`` and the ``right/`` and ``posix/`` copies of the database are files of the zone
database, not zones a person names. A flag or environment value that is not one is refused
(``BadArgument``, saying what to give): the user set it on purpose.

A command that reads no ledger root shows its times in ``machine_zone``: ``$TZ`` when it names
a zone, else the zone ``/etc/localtime`` links to, else UTC.

``resolve_zone`` writes nothing and prints nothing; the command prints the warnings and every
output names the zone and, unless it came from ``--tz``, where from.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from zoneinfo import ZoneInfo

from vllm_ledger.errors import BadArgument, NotARegularFile
from vllm_ledger.format.zonefile import (
    MAX_ZONE_CHARS,
    MAX_ZONE_FILE_BYTES,
    ROOT_ZONE_FILE,
    UTC,
    ZONE_ENV,
    ZONE_NAME_RE,
    read_zone_text,
    zone_problem,
)
from vllm_ledger.read.windows import DEFAULT_TZ

ZONE_FILE = ROOT_ZONE_FILE  # ROOT/zone, written by the plugin (format/zonefile.py)

ZoneSource = Literal["--tz", "VLLM_LEDGER_TZ", "root", "default"]
ZONE_SOURCES: tuple[ZoneSource, ...] = ("--tz", "VLLM_LEDGER_TZ", "root", "default")


@dataclass(frozen=True)
class ZoneChoice:
    """The zone a reader uses, the level of the rule that gave it, and what it skipped."""

    name: str
    source: ZoneSource
    path: Path | None = None  # the zone file, when ``source == "root"``
    warnings: tuple[str, ...] = ()  # one line per zone file ignored on the way

    @property
    def origin(self) -> str:
        """Where the zone came from, as outputs say it."""
        if self.source == "root":
            return f"from {self.path}"
        if self.source == "default":
            return "the default"
        return f"from {self.source}"

    @property
    def label(self) -> str:
        """``Europe/London, from VLLM_LEDGER_TZ``; only the name when the user passed --tz."""
        return self.name if self.source == "--tz" else f"{self.name}, {self.origin}"


ZONE_GIVE = "use an IANA Region/City name or UTC"  # what a refusal asks for


def is_zone_name(value: str) -> bool:
    """An IANA region zone that this machine's zone database knows, or ``UTC``
    (``zone_problem``)."""
    return zone_problem(value) is None


def zone_hint(value: str) -> str:
    """What a refusal of ``value`` asks for."""
    if zone_problem(value) == "is not a Region/City zone":
        return ZONE_GIVE
    return "use an IANA name"


def zone_info(name: str) -> ZoneInfo:
    """The ``ZoneInfo`` of a zone name (``is_zone_name``), or one line saying what to give."""
    problem = zone_problem(name)
    if problem is not None:
        raise BadArgument(
            f"time zone {name[:70]!r} {problem}",
            hint=f"{ZONE_GIVE} such as Asia/Shanghai",
            value=name,
        )
    return ZoneInfo(name)


LOCALTIME = Path("/etc/localtime")


def machine_zone(
    env: Mapping[str, str] | None = None, localtime: Path = LOCALTIME
) -> tuple[ZoneInfo, str]:
    """This machine's zone and its name, for a command that reads no ledger root: ``$TZ``
    when it names a zone (``Asia/Shanghai`` or ``:Asia/Shanghai``), else the zone
    ``/etc/localtime`` links to (the part after a ``zoneinfo`` folder; a ``posix/`` copy is
    taken as its zone), else UTC. Reads nothing but that link."""
    env = os.environ if env is None else env
    name = env.get("TZ", "").strip().removeprefix(":")
    if is_zone_name(name):
        return ZoneInfo(name), name
    try:
        target = os.readlink(localtime)
    except (OSError, ValueError):
        target = ""
    parts = Path(target).parts
    if "zoneinfo" in parts:
        rest = list(parts[len(parts) - parts[::-1].index("zoneinfo") :])
        if rest[:1] == ["posix"]:
            rest = rest[1:]
        name = "/".join(rest)
        if is_zone_name(name):
            return ZoneInfo(name), name
    return ZoneInfo(UTC), UTC


def _refuse(where: str, value: str, example: str) -> BadArgument:
    return BadArgument(
        f"{where} {value[:70]!r} {zone_problem(value) or 'is not a known time zone'}",
        hint=zone_hint(value),
        argument=where,
        value=value,
        example=example,
    )


def read_root_zone(root: Path) -> tuple[str | None, str | None]:
    """``(zone, None)`` from ``root/zone``; ``(None, None)`` when there is none; ``(None,
    warning)`` when there is one that cannot be used."""
    path = Path(root) / ZONE_FILE
    try:
        text = read_zone_text(path)
    except FileNotFoundError:
        return None, None
    except NotARegularFile:
        return None, f"ignoring the zone file {path}: not a regular file"
    except OSError as exc:
        return None, f"ignoring the zone file {path}: {exc.strerror or exc}"
    except ValueError as exc:
        return None, f"ignoring the zone file {path}: {exc}"
    if not text:
        return None, f"ignoring the zone file {path}: it is empty"
    if not is_zone_name(text):  # repr escapes control characters: the line stays printable
        problem = zone_problem(text)
        return None, f"ignoring the zone file {path}: {text[:40]!r} {problem}"
    return text, None


def resolve_zone(flag: str | None, env: Mapping[str, str], roots: Sequence[Path]) -> ZoneChoice:
    """The zone for ``flag`` (the command's ``--tz``; ``None``: not given), the environment and
    the roots. A refusal names ``tz`` (a bad zone given) or ``roots`` (the roots disagree)."""
    if flag is not None:
        if not is_zone_name(flag):
            raise _refuse("tz", flag, "Asia/Shanghai")
        return ZoneChoice(flag, "--tz")
    value = env.get(ZONE_ENV, "").strip()
    if value:
        if not is_zone_name(value):
            raise _refuse(ZONE_ENV, value, f"{ZONE_ENV}=Asia/Shanghai (or unset it)")
        return ZoneChoice(value, "VLLM_LEDGER_TZ")
    found: list[tuple[str, Path]] = []
    warnings: list[str] = []
    for root in dict.fromkeys(Path(r) for r in roots):  # each root once, in order
        name, warning = read_root_zone(root)
        if warning:
            warnings.append(warning)
        if name is not None:
            found.append((name, Path(root) / ZONE_FILE))
    names = sorted({n for n, _ in found})
    if len(names) > 1:
        seen = ", ".join(f"{n} in {p}" for n, p in found[:4])
        raise BadArgument(
            f"the roots record different time zones ({seen})",
            hint=f"give a zone (or set {ZONE_ENV}) to choose one",
            argument="roots",
            value=tuple(names),
        )
    if found:
        return ZoneChoice(found[0][0], "root", found[0][1], tuple(warnings))
    return ZoneChoice(DEFAULT_TZ, "default", None, tuple(warnings))


__all__ = [
    "MAX_ZONE_CHARS",
    "MAX_ZONE_FILE_BYTES",
    "ZONE_ENV",
    "ZONE_FILE",
    "ZONE_GIVE",
    "ZONE_NAME_RE",
    "ZONE_SOURCES",
    "ZoneChoice",
    "ZoneSource",
    "is_zone_name",
    "machine_zone",
    "read_root_zone",
    "resolve_zone",
    "zone_hint",
    "zone_info",
    "zone_problem",
]
