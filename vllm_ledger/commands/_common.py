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

What a value is (a duration, an instant, HOST:PORT, a number, a short text) is decided once, in
``vllm_ledger/units.py``, below every layer; here each is an argparse ``type`` whose refusal names
the flag (``flagged``), and ``flag_names`` does the same for a library's refusal.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import re
import stat
import sys
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from zoneinfo import ZoneInfo

from vllm_ledger import timespec, units
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.identity import default_root
from vllm_ledger.formats.safe import printable
from vllm_ledger.hostport import Address, host_port
from vllm_ledger.outfile import check_target, kind_of
from vllm_ledger.read.windows import DEFAULT_TZ
from vllm_ledger.read.zone import (
    ZONE_FILE,
    ZoneChoice,
    machine_zone,
    resolve_zone,
    zone_hint,
    zone_info,
    zone_problem,
)
from vllm_ledger.units import (
    DURATION_FORMS,
    MAX_TEXT,
    ZONE_ENV,
    duration_seconds,
    format_duration,
)

T = TypeVar("T")


# ---- a library's refusal, worded for the command line ---------------------------------------


def flagged(exc: BadArgument, flag: str) -> BadArgument:
    """``exc`` as the command line says it: ``flag`` where the library named its argument (or
    in front, when it named none) and in front of the example. ``step '1y' is not a duration:
    give ..., e.g. 1h`` -> ``--step '1y' is not a duration: give ..., e.g. --step 1h``."""
    what = exc.what
    if exc.argument and what.startswith(exc.argument + " "):
        what = what[len(exc.argument) + 1 :]
    return BadArgument(
        f"{flag} {what}",
        hint=exc.hint,
        argument=exc.argument,
        value=exc.value,
        example=f"{flag} {exc.example}" if exc.example else "",
    )


@contextmanager
def flag_names(**flags: str) -> Iterator[None]:
    """Within the block, a library's ``BadArgument`` whose ``.argument`` is one of ``flags``
    (``step="--step"``) is raised again worded with that flag (``flagged``)."""
    try:
        yield
    except BadArgument as exc:
        if exc.argument in flags:
            raise flagged(exc, flags[exc.argument]) from None
        raise


@contextmanager
def file_flag(argument: str, flag: str) -> Iterator[None]:
    """Within the block, a library's refusal of a file it was given as ``argument`` (one it
    could not read) says how to give another, as ``input_file`` does: ``cannot read x.json: No
    such file or directory`` -> ``...: pass --config FILE``."""
    try:
        yield
    except BadArgument as exc:
        if exc.argument == argument:
            raise BadArgument(
                exc.what, hint=f"pass {flag}", argument=exc.argument, value=exc.value
            ) from None
        raise


def with_flags(text: str, flags: Mapping[str, str]) -> str:
    """``text`` with the first mention of each name in ``flags`` (a library's parameter or a
    setting, as a whole word; never part of a path) as the command line says it: ``required
    with usage`` -> ``required with --usage``."""
    for name, flag in flags.items():
        word = re.compile(rf"(?<![\w./-]){re.escape(name)}(?![\w./-])")
        text = word.sub(flag.replace("\\", "\\\\"), text, count=1)
    return text


def typed(flag: str, parse: Callable[[str], T]) -> Callable[[str], T]:
    """An argparse ``type`` from a ``units`` parser: its refusal names ``flag``."""

    def typed(value: str) -> T:
        try:
            return parse(value)
        except BadArgument as exc:
            raise flagged(exc, flag) from None

    return typed


# ---- numbers ---------------------------------------------------------------------------------


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
    """An argparse ``type`` for a finite number in ``[lo, hi]`` (``units.number``)."""
    return typed(
        flag,
        lambda text: units.number(
            text,
            lo,
            hi,
            example,
            unit=unit,
            lo_open=lo_open,
            integer=integer,
            fraction=fraction,
        ),
    )


def port(flag: str, example: str = "8000", *, zero: bool = False) -> Callable[[str], float]:
    """A TCP port, 1-65535 (0 too with ``zero``: the system picks one)."""
    return typed(flag, lambda text: units.port(text, example, zero=zero))


# ---- durations -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Duration:
    """An argparse ``type`` for a duration flag: ``30s``, ``10m``, ``7d``, ``1h30m`` or plain
    seconds (``units.duration_seconds``), finite, in ``[lo, hi]`` seconds (``(lo, hi]`` with
    ``lo_open``); a plain number above ``hi`` that is in range once divided by 1000 is refused as
    milliseconds. Returns seconds (an ``int`` with ``integer``). Every duration flag of every
    command uses this one type."""

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
        tail = f"give {whole} {low} to {format_duration(hi)} ({DURATION_FORMS})"
        shown = f"{flag} {value[:40]!r}"
        example = f"{flag} {self.example}"
        text = value.strip()
        try:
            x = float(text)
        except ValueError:
            seconds = duration_seconds(text)
            if seconds is None:
                raise BadArgument(
                    f"{shown} is not a duration", hint=tail, example=example
                ) from None
            x = seconds
        else:
            if not math.isfinite(x):
                raise BadArgument(f"{shown} is not finite", hint=tail, example=example)
            if x > hi and lo < x / 1000 <= hi:
                raise BadArgument(
                    f"{shown} looks like milliseconds",
                    hint="give seconds",
                    example=f"{flag} {units.number_text(x / 1000)}",
                )
        if x < lo or (self.lo_open and x == lo) or x > hi:
            raise BadArgument(f"{shown} is out of range", hint=tail, example=example)
        if self.integer:
            if x != int(x):
                raise BadArgument(
                    f"{shown} is not a whole number of seconds", hint=tail, example=example
                )
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


def listen(flag: str = "--listen", example: str = "127.0.0.1:9464") -> Callable[[str], Address]:
    """A listen address, ``HOST:PORT`` (``hostport.host_port``: ``[::1]:9464`` for IPv6; port 0:
    the system picks one), returned as ``(host, port)``. A bare ``:PORT`` is refused."""
    return typed(flag, lambda value: host_port(value, example=example))


# ---- deprecated spellings --------------------------------------------------------------------

_NOTES = "_deprecation_notes"


JSON_LOG_KEYS = ("asctime", "levelname", "name", "processName", "process", "message")


def service_logging() -> None:
    """Log lines of a long-running command (exporter, notifier) to stderr, INFO and up, with
    the time and the logger's name: a refused request or a cut client is one line there (and in
    journald under systemd). Commands that print a result and exit keep WARNING. With
    ``VLLM_LEDGER_LOG_FORMAT=json`` each line is a JSON object with the keys vLLM's own JSON
    formatter writes (``JSON_LOG_KEYS``), so one log pipeline parses both."""
    if os.environ.get(units.LOG_FORMAT_ENV) != "json":
        logging.basicConfig(
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler])


class JsonLineFormatter(logging.Formatter):
    """One JSON object a line: ``JSON_LOG_KEYS``, and ``exc_info`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        import json

        record.message = record.getMessage()
        record.asctime = self.formatTime(record)
        line = {key: getattr(record, key) for key in JSON_LOG_KEYS}
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)


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
    return typed(flag, lambda value: units.short_text(value, example, max_len=max_len))


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
    """An IANA region zone (Region/City) that this machine's zone database knows, or UTC."""

    def parse(value: str) -> str:
        problem = zone_problem(value)
        if problem is not None:
            raise BadArgument(
                f"{flag} {value[:70]!r} {problem}: {zone_hint(value)}, e.g. {flag} Asia/Shanghai"
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


def wrote_line(path: str | os.PathLike[str], more: str = "") -> str:
    """``wrote /abs/path`` (``more`` after it, e.g. `` (systemd mode)``): the line every command
    prints on stderr for each file it wrote, the path absolute and terminal-safe."""
    return f"wrote {printable(os.path.abspath(path))}{more}"


def say_wrote(path: str | os.PathLike[str], more: str = "") -> None:
    """Print ``wrote_line(path, more)`` on stderr (stdout stays for what the command prints)."""
    print(wrote_line(path, more), file=sys.stderr)


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


def add_zeros(p: argparse.ArgumentParser) -> None:
    """``--zeros``: print 0 where a figure is unknown (``read/known.py``), as every form of
    ``report``, ``export`` and ``timeline`` does when asked."""
    p.add_argument(
        "--zeros",
        action="store_true",
        help="print 0 where a figure is unknown (no second of its window vouched for, nothing "
        "counted) instead of ? (text), an empty cell (CSV) or null (JSON); see docs/ledger.md",
    )


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
    try:
        with flag_names(tz="--tz"):
            zone = resolve_zone(args.tz, os.environ, roots)
    except BadArgument as exc:
        if exc.argument != "roots":
            raise
        raise BadArgument(
            exc.what, hint=f"pass --tz ZONE (or set {ZONE_ENV}) to choose one"
        ) from None
    for line in zone.warnings:
        print(f"vllm-ledger: warning: {printable(line)}", file=sys.stderr)
    return zone


def add_local_tz(p: argparse.ArgumentParser, what: str) -> None:
    """``--tz`` for a command that reads no ledger root (``local_zone_of``)."""
    p.add_argument(
        "--tz",
        type=tz_name(),
        default=None,
        metavar="ZONE",
        help=f"time zone for {what} (default: ${ZONE_ENV}, else this machine's zone: $TZ, "
        "else /etc/localtime, else UTC; see docs/ledger.md)",
    )


def local_zone_of(args: argparse.Namespace) -> tuple[ZoneInfo, str]:
    """The zone of a command without a ledger root, and its name: ``--tz``, else
    ``$VLLM_LEDGER_TZ``, else this machine's zone (``read.zone.machine_zone``)."""
    name = getattr(args, "tz", None) or os.environ.get(ZONE_ENV, "").strip()
    if name:
        problem = zone_problem(name)
        if problem is not None:  # only the environment's value can be refused here
            raise BadArgument(
                f"{ZONE_ENV} {name[:70]!r} {problem}: {zone_hint(name)}, "
                f"e.g. {ZONE_ENV}=Asia/Shanghai (or unset it)"
            )
        return zone_info(name), name
    return machine_zone(os.environ)


def add_time(p: argparse.ArgumentParser) -> None:
    add_tz(p)
    p.add_argument(
        "--at",
        type=time_flag("--at"),
        metavar="TIME",
        help=f"report as of TIME (default: now): {TIME_FLAG_HELP}",
    )


def time_flag(flag: str) -> Callable[[str], timespec.TimeSpec]:
    """Every flag that takes a time (``--since``, ``--until``, ``--at``, ``--from``) as
    argparse's ``type``: ``timespec.time_spec`` (every form of ``timespec.TIME_FORMS``),
    resolved once the zone and the cutoff are known (``resolve_flag``,
    ``read.periods.period_between``); one line naming ``flag`` otherwise."""
    return typed(flag, timespec.time_spec)


def resolve_flag(
    spec: timespec.TimeSpec | None, flag: str, zone: str, now_ts: float | None = None
) -> float | None:
    """A time flag's value (``time_flag``) as Unix seconds: read in ``zone`` and, for ``7d``,
    ``today`` and ``yesterday``, as of ``now_ts`` (default: the clock); None when not given. A
    refusal (a local time the zone skips, a duration reaching back before 2000) names
    ``flag``."""
    if spec is None:
        return None
    import time

    from vllm_ledger.read.periods import resolve_time

    now = math.floor(time.time() if now_ts is None else now_ts)
    argument = flag.lstrip("-")
    with flag_names(**{argument: flag}):
        return resolve_time(spec, now, zone_info(zone), argument=argument)


def at_of(args: argparse.Namespace, zone: str) -> float | None:
    """``--at`` as Unix seconds in the command's zone (None: now)."""
    return resolve_flag(getattr(args, "at", None), "--at", zone)


TIME_FLAG_HELP = (
    "a date (2026-12-01, 20261201), a month (2026-12: its first day), a local time "
    "(2026-12-01T08:00) in the zone, ISO 8601 with an offset, Unix seconds, today, yesterday, or "
    "a duration ago (7d); see docs/ledger.md"
)


def add_since_until(p: argparse.ArgumentParser, start: str, *, required: bool = False) -> None:
    """``--since TIME`` (``start``: what it starts) and ``--until TIME``."""
    p.add_argument(
        "--since",
        type=time_flag("--since"),
        required=required,
        metavar="TIME",
        help=f"{start} from TIME: {TIME_FLAG_HELP}",
    )
    p.add_argument(
        "--until",
        type=time_flag("--until"),
        metavar="TIME",
        help="end of the --since period (not included; default: the cutoff), in the same forms",
    )


TIME_FLAGS = {"since": "--since", "until": "--until", "from": "--from", "at": "--at"}


@contextmanager
def since_until_flags(flags: Mapping[str, str] = TIME_FLAGS) -> Iterator[None]:
    """Within the block, a refusal of a time as it was resolved (a local time a DST change
    skips, a duration reaching back before 2000, an end not after its start) is worded with the
    flags (``--until 2026-11-01 00:00:00 +08:00 is not after --since ...``)."""
    try:
        yield
    except BadArgument as exc:
        if exc.argument not in flags:
            raise
        if exc.what.startswith(f"{exc.argument} ") and " is not after " in exc.what:
            said = [with_flags(t, flags) for t in (exc.what, exc.hint, exc.example)]
            raise BadArgument(
                said[0], hint=said[1], argument=exc.argument, value=exc.value, example=said[2]
            ) from None
        raise flagged(exc, flags[exc.argument]) from None
