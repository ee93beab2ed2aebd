"""Flags shared by several commands, and the checks every flag's value passes at parse time.

Each ``type=`` function here refuses a bad value with one line that names the flag and gives
an example of a good value (``--deadline 'nan' is not finite: give a duration above 0s to
1h (30s, 10m, 7d, 1h30m or plain seconds), e.g. --deadline 20s``). They raise
``BadArgument``, which argparse does not catch (it catches only ``ArgumentTypeError``,
``TypeError`` and ``ValueError``), so it reaches ``cli.main`` and is printed as every other
error is: one line, exit 2. Values are checked before any ledger, config or URL is touched,
so a bad flag costs nothing and can make nothing hang.

Rules shared by every number: NaN and infinities are refused; so is a value outside the flag's
range, and a seconds flag given what looks like milliseconds (above its range, and in range
once divided by 1000) is refused with the seconds it probably meant.

One vocabulary for every command (docs/cli.md, "Vocabulary"): every span of time is a
``duration`` (``30s``, ``10m``, ``7d``, ``1h30m`` or plain seconds); a listen address is
``listen`` (``HOST:PORT``); a folder written is ``--output DIR`` (``add_output_folder``); an old
spelling is kept for one release by ``Renamed``/``deprecate``, which ``cli.main`` turns into
one ``note:`` line each.
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import re
import stat
import sys
import urllib.parse
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument
from vllm_ledger.format.identity import default_root
from vllm_ledger.formats.safe import printable
from vllm_ledger.outfile import check_target, kind_of
from vllm_ledger.read.windows import DEFAULT_TZ
from vllm_ledger.read.zone import ZONE_ENV, ZONE_FILE, ZoneChoice, is_zone_name, resolve_zone

MAX_TEXT = 256  # a model name, run id, label, host: longer is a mistake


# ---- numbers ---------------------------------------------------------------------------------


def _fmt(x: float) -> str:
    return f"{x:,.0f}".replace(",", "") if x == int(x) and abs(x) >= 1e6 else f"{x:g}"


def number(
    flag: str,
    lo: float,
    hi: float,
    example: str,
    *,
    unit: str = "a number",
    lo_open: bool = False,
    integer: bool = False,
    fraction: bool = False,
) -> Callable[[str], float]:
    """An argparse ``type`` for a finite number in ``[lo, hi]`` (``(lo, hi]`` with ``lo_open``).

    ``fraction``: a value in (1, 100] is refused as a percentage (durations are ``Duration``,
    which refuses milliseconds).
    ``integer``: whole numbers only (returned as ``int``).
    """
    low = f"above {_fmt(lo)}" if lo_open else f"from {_fmt(lo)}"
    wanted = f"{unit} {low} to {_fmt(hi)}"

    def parse(text: str) -> float:
        shown = f"{flag} {text!r}"
        try:
            x = float(text)
        except (TypeError, ValueError):
            raise BadArgument(
                f"{shown} is not a number: give {wanted}, e.g. {flag} {example}"
            ) from None
        if not math.isfinite(x):
            raise BadArgument(f"{shown} is not finite: give {wanted}, e.g. {flag} {example}")
        if fraction and 1 < x <= 100 and lo < x / 100 <= hi:
            raise BadArgument(
                f"{shown} looks like a percentage: give a fraction, e.g. {flag} {x / 100:g}"
            )
        if x < lo or (lo_open and x == lo) or x > hi:
            raise BadArgument(f"{shown} is out of range: give {wanted}, e.g. {flag} {example}")
        if integer:
            if x != int(x) or not re.fullmatch(r"\s*[+-]?\d+\s*", text):
                raise BadArgument(
                    f"{shown} is not a whole number: give {wanted}, e.g. {flag} {example}"
                )
            return int(x)
        return x

    return parse


def port(flag: str, example: str = "8000", *, zero: bool = False) -> Callable[[str], float]:
    """A TCP port, 1-65535 (0 too with ``zero``: the system picks one)."""
    return number(flag, 0 if zero else 1, 65535, example, unit="a port", integer=True)


# ---- durations -------------------------------------------------------------------------------

DURATION_FORMS = "30s, 10m, 7d, 1h30m or plain seconds"
_DURATION_UNITS: dict[str, float] = {
    "w": 604800,
    "d": 86400,
    "h": 3600,
    "m": 60,
    "s": 1,
    "ms": 0.001,
}
_DURATION_TEXT = re.compile(r"(?:[0-9]{1,12}(?:\.[0-9]{1,9})?(?:ms|[wdhms]))+")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(ms|[wdhms])")


def duration_seconds(text: str) -> float | None:
    """``30s``, ``10m``, ``7d``, ``1h30m``, ``1.5h``, ``500ms`` -> seconds; None if it is not one
    (units w, d, h, m, s, ms, each at most once, largest first; plain numbers are not taken
    here: the caller reads those as seconds)."""
    if len(text) > 40 or not _DURATION_TEXT.fullmatch(text):
        return None
    parts = _DURATION_PART.findall(text)
    sizes = [_DURATION_UNITS[unit] for _n, unit in parts]
    if any(a <= b for a, b in itertools.pairwise(sizes)):
        return None  # 1m1h, 1h1h: a typo, not a duration
    return sum(float(n) * _DURATION_UNITS[unit] for n, unit in parts)


def format_duration(seconds: float) -> str:
    """How help, errors and notes show a duration: ``90`` -> ``1m30s``, ``86400`` -> ``1d``,
    ``0.5`` -> ``500ms``, ``1.5`` -> ``1.5s``."""
    if seconds != int(seconds):
        ms = round(seconds * 1000, 6)
        return f"{int(ms)}ms" if seconds < 1 and ms == int(ms) else f"{seconds:g}s"
    n, parts = int(seconds), []
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        q, n = divmod(n, size)
        if q:
            parts.append(f"{q}{unit}")
    return "".join(parts) or "0s"


@dataclass(frozen=True)
class Duration:
    """An argparse ``type`` for a duration flag: ``30s``, ``10m``, ``7d``, ``1h30m`` or plain
    seconds, finite, in ``[lo, hi]`` seconds (``(lo, hi]`` with ``lo_open``); a plain number above
    ``hi`` that is in range once divided by 1000 is refused as milliseconds. Returns seconds
    (an ``int`` with ``integer``). Every duration flag of every command uses this one type."""

    flag: str
    lo: float
    hi: float
    example: str
    lo_open: bool = False
    integer: bool = False

    def __call__(self, value: str) -> float:
        flag, lo, hi = self.flag, self.lo, self.hi
        low = f"above {format_duration(lo)}" if self.lo_open else f"from {format_duration(lo)}"
        whole = "a duration in whole seconds" if self.integer else "a duration"
        tail = (
            f"give {whole} {low} to {format_duration(hi)} ({DURATION_FORMS}), "
            f"e.g. {flag} {self.example}"
        )
        shown = f"{flag} {value[:40]!r}"
        text = value.strip()
        try:
            x = float(text)
        except ValueError:
            seconds = duration_seconds(text)
            if seconds is None:
                raise BadArgument(f"{shown} is not a duration: {tail}") from None
            x = seconds
        else:
            if not math.isfinite(x):
                raise BadArgument(f"{shown} is not finite: {tail}")
            if x > hi and lo < x / 1000 <= hi:
                raise BadArgument(
                    f"{shown} looks like milliseconds: give seconds, e.g. {flag} {_fmt(x / 1000)}"
                )
        if x < lo or (self.lo_open and x == lo) or x > hi:
            raise BadArgument(f"{shown} is out of range: {tail}")
        if self.integer:
            if x != int(x):
                raise BadArgument(f"{shown} is not a whole number of seconds: {tail}")
            return int(x)
        return x


def duration(
    flag: str,
    lo: float,
    hi: float,
    example: str,
    *,
    lo_open: bool = False,
    integer: bool = False,
) -> Duration:
    """The duration type for ``flag`` (see ``Duration``)."""
    return Duration(flag, lo, hi, example, lo_open, integer)


# ---- listen addresses ------------------------------------------------------------------------

_HOST = re.compile(r"[A-Za-z0-9_.-]{1,253}")
_IPV6 = re.compile(r"[0-9A-Fa-f:.]{2,45}(?:%[A-Za-z0-9_.-]{1,32})?")
Address = tuple[str, int]  # (host, port) to listen on


def listen(flag: str = "--listen", example: str = "127.0.0.1:9464") -> Callable[[str], Address]:
    """A listen address, ``HOST:PORT`` (``[::1]:9464`` for IPv6; port 0: the system picks one),
    returned as ``(host, port)``. A bare ``:PORT`` is refused: say which interface."""
    as_port = port(flag, example.rpartition(":")[2], zero=True)

    def parse(value: str) -> Address:
        want = f"give HOST:PORT, e.g. {flag} {example} (0.0.0.0:PORT listens on every interface)"
        host, sep, port_text = value.rpartition(":")
        if host.startswith("[") and host.endswith("]") and _IPV6.fullmatch(host[1:-1]):
            host = host[1:-1]
        elif ":" in host:
            raise BadArgument(
                f"{flag} {value[:60]!r}: put an IPv6 address in brackets, e.g. {flag} [::1]:9464"
            )
        elif not sep or not _HOST.fullmatch(host):
            raise BadArgument(f"{flag} {value[:60]!r} is not HOST:PORT: {want}")
        try:
            number_ = int(as_port(port_text))
        except BadArgument:
            raise BadArgument(
                f"{flag} {value[:60]!r}: the port {port_text[:20]!r} is not 0 to 65535: {want}"
            ) from None
        return host, number_

    return parse


# ---- deprecated spellings --------------------------------------------------------------------

_NOTES = "_deprecation_notes"


def service_logging() -> None:
    """Log lines of a long-running command (exporter, notifier) to stderr, INFO and up, with
    the time and the logger's name: a refused request or a cut client is one line there (and in
    journald under systemd). Commands that print a result and exit keep WARNING."""
    import logging

    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )


def deprecate(namespace: argparse.Namespace, old: str, new: str) -> None:
    """Record that the old spelling ``old`` was used; ``new`` is what to write instead.
    ``cli.main`` prints each note once, on stderr, once the command line has parsed (a refused
    command line prints only its one error line)."""
    notes: dict[str, str] = getattr(namespace, _NOTES, None) or {}
    notes[old] = f"{old} is deprecated; use {new} (it still works until the next release)"
    setattr(namespace, _NOTES, notes)


def deprecation_notes(namespace: argparse.Namespace) -> list[str]:
    """The notes ``deprecate`` recorded, one per old spelling (with the value it was last
    given), in the order first used."""
    return list((getattr(namespace, _NOTES, None) or {}).values())


class Renamed(argparse.Action):
    """An old spelling of a flag, kept for one release: it stores its value where the new
    spelling does (``dest``) and records a note naming the new spelling with that value
    (``show`` writes the value as the new flag takes it). Hidden from ``--help``; docs/cli.md
    lists every old spelling."""

    def __init__(
        self,
        option_strings: Sequence[str],
        dest: str,
        *,
        new: str,
        show: Callable[[Any], str] = str,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("help", argparse.SUPPRESS)
        kwargs.setdefault("default", argparse.SUPPRESS)  # never hides the new flag's default
        super().__init__(option_strings, dest, **kwargs)
        self.new = new
        self.show = show

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: Any,
        option_string: str | None = None,
    ) -> None:
        setattr(namespace, self.dest, values)
        old = option_string or self.option_strings[0]
        deprecate(namespace, old, f"{self.new} {self.show(values)}".rstrip())


def add_renamed(
    p: argparse.ArgumentParser,
    old: str,
    new: str,
    *,
    dest: str,
    type: Callable[[str], Any],  # argparse's own name
    show: Callable[[Any], str] = str,
) -> None:
    """``old`` as a deprecated spelling of ``new`` (which stores into ``dest``)."""
    p.add_argument(old, dest=dest, type=type, action=Renamed, new=new, show=show)


def add_renamed_duration(
    p: argparse.ArgumentParser, old: str, new: str, *, dest: str, like: Duration
) -> None:
    """A renamed duration flag: the old spelling takes what the new one does, and its errors
    name the old spelling the user typed."""
    old_type = Duration(old, like.lo, like.hi, like.example, like.lo_open, like.integer)
    add_renamed(p, old, new, dest=dest, type=old_type, show=format_duration)


# ---- output folders --------------------------------------------------------------------------


def add_output_folder(
    p: argparse.ArgumentParser,
    make: Callable[[str], Callable[[str], Path]],
    *,
    help: str,  # argparse's own name
    metavar: str = "DIR",
) -> None:
    """``--output DIR``, and the positional folder older versions took (still accepted)."""
    p.add_argument(
        "folder",
        nargs="?",
        type=make(metavar),
        metavar=metavar,
        help=f"the same as --output {metavar}",
    )
    p.add_argument("--output", type=make("--output"), metavar=metavar, help=help)


def output_folder(args: argparse.Namespace, metavar: str = "DIR") -> Path:
    """The folder ``add_output_folder``'s flags name (given once, either way)."""
    given = [f for f in (args.output, args.folder) if f is not None]
    if not given:
        raise BadArgument(f"no folder given: pass --output {metavar}")
    if len(given) == 2 and given[0] != given[1]:
        raise BadArgument(
            f"two folders given ({given[1]} and --output {given[0]}): give one, --output {metavar}"
        )
    return Path(given[0])


# ---- text ------------------------------------------------------------------------------------


def text(flag: str, example: str, *, max_len: int = MAX_TEXT) -> Callable[[str], str]:
    """A short single-line value (a model name, run id, label): no control characters."""

    def parse(value: str) -> str:
        if not value or len(value) > max_len or not value.isprintable():
            what = "empty" if not value else "too long" if len(value) > max_len else "unprintable"
            raise BadArgument(
                f"{flag} {value[:40]!r} is {what}: give up to {max_len} printable characters, "
                f"e.g. {flag} {example}"
            )
        return value

    return parse


def instance(flag: str = "--instance") -> Callable[[str], int | str]:
    """An instance as ``report --by instance`` prints it (``gpu1:8000``; ``HOST:MODEL`` for a
    writer that knew no port), returned as given; or a bare port (``8000``), returned as an
    int, which selects the instances on that port on every host."""
    as_port = port(flag, "8000")
    as_text = text(flag, "gpu1:8000")

    def parse(value: str) -> int | str:
        if ":" not in value and _numeral(value):
            return int(as_port(value))  # a port, or one line on why the number is not one
        if ":" not in value or value.startswith(":"):
            as_text(value)  # an unprintable or overlong value gets that line first
            raise BadArgument(
                f"{flag} {value[:40]!r} is neither HOST:PORT nor a port: give an instance as "
                f"`report --by instance` prints it, e.g. {flag} gpu1:8000, or a port, "
                f"e.g. {flag} 8000"
            )
        return as_text(value)

    return parse


def _numeral(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


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


def url(flag: str, example: str) -> Callable[[str], str]:
    """An http(s) URL with a host (and a valid port, if any)."""

    def parse(value: str) -> str:
        problem = ""
        try:
            parts = urllib.parse.urlsplit(value)
            parts.port  # noqa: B018  (raises ValueError on a port out of range)
        except ValueError:
            problem = "is not a URL"
        else:
            if len(value) > 2048 or not value.isprintable() or any(c.isspace() for c in value):
                problem = "is not a URL"
            elif parts.scheme not in ("http", "https"):
                problem = "is not an http:// or https:// URL"
            elif not parts.hostname:
                problem = "names no host"
        if problem:
            raise BadArgument(f"{flag} {value[:80]!r} {problem}: give e.g. {flag} {example}")
        return value

    return parse


def tz_name(flag: str = "--tz") -> Callable[[str], str]:
    """An IANA time zone name that this machine's zone database knows."""

    def parse(value: str) -> str:
        if not is_zone_name(value):
            raise BadArgument(
                f"{flag} {value[:70]!r} is not a known time zone: use an IANA name, "
                f"e.g. {flag} Asia/Shanghai"
            )
        return value

    return parse


# ---- paths -----------------------------------------------------------------------------------


def input_file(
    flag: str, example: str, *, max_bytes: int, what: str = "", hint: str = ""
) -> Callable[[str], Path]:
    """A file to read: it exists, is a regular file (never a FIFO or device, which would
    block or never end), is readable and at most ``max_bytes`` long. Nothing is opened."""
    what = what or flag
    hint = hint or f"pass {flag} {example}"

    def parse(value: str) -> Path:
        path = Path(value)
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise BadArgument(f"{what} {path} not found: {hint}") from None
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or "not a path"
            raise BadArgument(f"{what} {path} cannot be read ({why}): {hint}") from None
        if not stat.S_ISREG(st.st_mode):
            raise BadArgument(f"{what} {path} is {kind_of(st.st_mode)}, not a regular file: {hint}")
        if st.st_size > max_bytes:
            raise BadArgument(
                f"{what} {path} is larger than {max_bytes // 1024} KiB (the wrong file?): {hint}"
            )
        if not os.access(path, os.R_OK):
            raise BadArgument(f"{what} {path} is not readable: {hint}")
        return path

    return parse


def output_file(flag: str, example: str, *, stdout: bool = False) -> Callable[[str], str]:
    """A file to write: nothing yet, or a regular file, in an existing folder (``-``: stdout
    with ``stdout``). The write itself goes through ``outfile.write_file``."""

    def parse(value: str) -> str:
        if stdout and value == "-":
            return value
        check_target(value, flag=flag, example=f"{flag} {example}")
        return value

    return parse


def output_dir(flag: str, example: str, names: tuple[str, ...]) -> Callable[[str], Path]:
    """A folder to write ``names`` into: nothing yet or a directory, and each of ``names`` in
    it nothing yet or a regular file."""

    def parse(value: str) -> Path:
        path = Path(value)
        if not value:
            raise BadArgument(f"{flag} '' is not a folder name: give one, e.g. {flag} {example}")
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return path  # created when written
        except (OSError, ValueError) as exc:
            why = getattr(exc, "strerror", None) or "not a path"
            raise BadArgument(
                f"{flag} {path}: {why}: give a folder, e.g. {flag} {example}"
            ) from None
        if not stat.S_ISDIR(st.st_mode):
            raise BadArgument(
                f"{flag} {path} is {'a file' if stat.S_ISREG(st.st_mode) else kind_of(st.st_mode)},"
                f" not a folder: give a folder, e.g. {flag} {example}"
            )
        for name in names:
            check_target(path / name, flag=flag, example=f"{flag} {example}")
        return path

    return parse


# ---- ledger roots and time -------------------------------------------------------------------


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


def add_tz(p: argparse.ArgumentParser, what: str = "'today'") -> None:
    p.add_argument(
        "--tz",
        type=tz_name(),
        default=None,
        metavar="ZONE",
        help=f"time zone for {what} (default: ${ZONE_ENV}, else the zone recorded in the "
        f"root's '{ZONE_FILE}' file, else {DEFAULT_TZ}; see docs/ledger.md)",
    )


def zone_of(args: argparse.Namespace, roots: Sequence[Path]) -> ZoneChoice:
    """The zone by the one rule (``--tz``, ``$VLLM_LEDGER_TZ``, the roots' zone file, the
    default); a zone file that was ignored is one warning line on stderr."""
    zone = resolve_zone(args.tz, os.environ, roots)
    for line in zone.warnings:
        print(f"vllm-ledger: warning: {printable(line)}", file=sys.stderr)
    return zone


def add_time(p: argparse.ArgumentParser) -> None:
    add_tz(p)
    p.add_argument(
        "--at",
        type=at_time,
        metavar="TIME",
        help="report as of TIME: Unix seconds or ISO 8601 (default: now)",
    )


EARLIEST_AT = 946_684_800.0  # 2000-01-01T00:00:00Z: no ledger is older
LATEST_AT = 4_102_444_800.0  # 2100-01-01T00:00:00Z


def instant(flag: str) -> Callable[[str], float]:
    """A point in time as argparse's ``type`` (``--at``, ``--since``, ``--from``...): the
    instant, or one line naming ``flag`` and saying what is wrong."""

    def parse(value: str) -> float:
        ts = parse_at(value, flag)
        assert ts is not None
        return ts

    return parse


at_time = instant("--at")


def parse_at(value: str | float | None, flag: str = "--at") -> float | None:
    """Unix seconds or ISO 8601 with an offset, between 2000 and 2100 (a number already
    parsed is passed through); errors name ``flag``."""
    if value is None or isinstance(value, float):
        return value
    example = f"give Unix seconds or ISO 8601, e.g. {flag} 2026-11-29T08:00:00+08:00"
    try:
        ts = float(value)
    except ValueError:
        ts = _iso_seconds(value, example, flag)
    if not math.isfinite(ts):
        raise BadArgument(f"{flag} {value!r} is not a time: {example}")
    if ts > LATEST_AT and ts / 1000 <= LATEST_AT:
        raise BadArgument(
            f"{flag} {value!r} looks like milliseconds: give seconds, e.g. {flag} {ts / 1000:.0f}"
        )
    if not EARLIEST_AT <= ts <= LATEST_AT:
        raise BadArgument(f"{flag} {value!r} is outside 2000-2100: {example}")
    return ts


def _iso_seconds(value: str, example: str, flag: str) -> float:
    try:
        # Python 3.10's fromisoformat does not take a trailing Z.
        dt = datetime.fromisoformat(value[:-1] + "+00:00" if value.endswith("Z") else value)
    except ValueError as exc:
        raise BadArgument(f"{flag} {value!r} is not a time: {example}") from exc
    if dt.tzinfo is None:
        raise BadArgument(f"{flag} {value!r} has no UTC offset: add one, e.g. +08:00")
    try:
        return dt.timestamp()
    except (OverflowError, OSError, ValueError) as exc:  # year 1 with an offset, say
        raise BadArgument(f"{flag} {value!r} is outside 2000-2100: {example}") from exc
