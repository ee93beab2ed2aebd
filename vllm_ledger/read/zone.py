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

A flag or environment value that is not a known zone is refused (``BadArgument``): the user
set it on purpose. ``resolve_zone`` writes nothing and prints nothing; the command prints the
warnings and every output names the zone and, unless it came from ``--tz``, where from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from vllm_ledger.errors import BadArgument, NotARegularFile
from vllm_ledger.format.zonefile import (
    MAX_ZONE_CHARS,
    MAX_ZONE_FILE_BYTES,
    ROOT_ZONE_FILE,
    ZONE_ENV,
    ZONE_NAME_RE,
    check_zone,
    read_zone_text,
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


def is_zone_name(value: str) -> bool:
    """An IANA zone name that this machine's zone database knows (``UTC``, ``Asia/Shanghai``)."""
    try:
        check_zone(value)
    except ValueError:
        return False
    return True


def _refuse(where: str, value: str, example: str) -> BadArgument:
    return BadArgument(
        f"{where} {value[:70]!r} is not a known time zone",
        hint="use an IANA name",
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
        return None, f"ignoring the zone file {path}: {text[:40]!r} is not a known time zone"
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
    "ZONE_NAME_RE",
    "ZONE_SOURCES",
    "ZoneChoice",
    "ZoneSource",
    "is_zone_name",
    "read_root_zone",
    "resolve_zone",
]
