"""The bounded status document the bot reads over SSH: its shape, its limits and its strict
parser. Standard library. ``formats/status_render.py`` writes it from a report.

``parse(data)`` takes bytes from a remote host that may be hostile and
returns a ``StatusDoc`` holding only range-checked numbers (``formats/status_fields.py``), this
module's own constant strings and a zone name shaped like one (``tz``: at most 64 of
``[A-Za-z0-9_+-/]``), or raises ``StatusParseError``. Unknown keys are ignored (keys are only
ever added within a schema version); a known key that is missing, of the wrong type or out of
range rejects the whole document: a value that cannot be trusted is unknown, never 0. So does
an ``instances`` list longer than ``MAX_STATUS_INSTANCES``, a port given twice, or a port's
count above the whole data dir's in the same window. The ``breakdown`` is never read; the keys
of ``keys_today`` are the only remote text kept, each shape-checked (``status_keys.KEY_SHAPE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from vllm_ledger import figures
from vllm_ledger.errors import StatusParseError
from vllm_ledger.figures import Figure
from vllm_ledger.formats.status_asked import Ask, parse_asked_parts
from vllm_ledger.formats.status_budgets import StatusBudgets, parse_budgets, parsed_budgets_dict
from vllm_ledger.formats.status_fields import (
    MAX_COUNT,
    field_bool,
    field_codes,
    field_float,
    field_int,
    field_obj,
    field_word,
    loads,
)
from vllm_ledger.formats.status_keys import (
    MAX_KEYS_BYTES,
    StatusKeys,
    parse_keys,
    parsed_keys_dict,
)
from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.known import FIGURES_KNOWN, FiguresKnown, figures_known, weakest
from vllm_ledger.read.ports import MAX_PORT_ROWS
from vllm_ledger.read.zone import MAX_ZONE_CHARS, ZONE_NAME_RE, ZONE_SOURCES, ZoneSource

STATUS_SCHEMA = 1
# The windows the document promises, in its order (docs/bot-status.md): its own list, not the
# report's, so that a report with other windows makes no other document.
STATUS_WINDOWS: tuple[str, ...] = ("today", "24h", "3d", "7d", "total")
# The figures each window carries (counts only: ``figures.BRIEF``), by their JSON keys.
STATUS_FIGURES: tuple[Figure, ...] = figures.BRIEF
MAX_BASE_BYTES = 4096  # the document without instances or breakdown rows
MAX_STATUS_BYTES = 60 * 1024  # the whole line; the bot reads at most 64 KiB
MAX_STATUS_INSTANCES = MAX_PORT_ROWS  # 16
MAX_BREAKDOWN_ROWS = 16
MAX_KEY_CHARS = 64
MAX_NAMES = 4  # known models and instances listed when nothing matched
WRITER_STATES: tuple[str, ...] = ("alive", "closed", "stale", "crashed", "missing")
# What the host's own probe of 127.0.0.1:PORT/health may say (never "unknown": no key then).
REMOTE_HEALTH_STATES: tuple[str, ...] = ("healthy", "unhealthy", "down")

# Range checks for what a remote host may claim.
MAX_SECONDS = 10**10  # durations (300+ years)
MIN_CLOCK_TS = 10**9  # 2001-09-09: a host clock before this is broken
MAX_CLOCK_TS = 10**10  # 2286
MAX_SPEED = 10**9  # tokens per second
MAX_TZ_OFFSET_S = 18 * 3600


@dataclass(frozen=True)
@figures.with_figure_fields("report_name", "int", STATUS_FIGURES)
class StatusWindow:
    """A window as a remote host sent it; a field per ``STATUS_FIGURES`` (``report_name``; one
    not declared here comes last, from ``figures.with_figure_fields``)."""

    name: str
    start_ts: int
    cutoff_ts: int
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    requests: int
    hit_rate: float | None
    avg_speed: float | None
    gen_speed: float | None
    uncovered_seconds: int
    complete: bool
    problems: tuple[tuple[str, int], ...]
    # exact, lower_bound or unknown (read/known.py): where unknown, the counts above are 0 on
    # the wire and nobody knows them; every form the bot prints shows them unknown, never 0.
    known: FiguresKnown


@dataclass(frozen=True)
class StatusInstance:
    """The instances on one API port of the data dir (validated numbers only)."""

    port: int
    runs: int
    writers: tuple[tuple[str, int], ...]
    windows: tuple[StatusWindow, ...]
    # (state from REMOTE_HEALTH_STATES, HTTP status or None); None: the host did not probe
    health: tuple[str, int | None] | None = None

    def window(self, name: str) -> StatusWindow:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)


@dataclass(frozen=True)
class StatusAsked:
    """What the host answered to an ask (``formats/status_asked.py``), validated."""

    ask: Ask
    window: StatusWindow
    by: tuple[tuple[str, StatusKeys], ...]
    files_without: int

    def rows(self, by: str) -> StatusKeys | None:
        return next((k for b, k in self.by if b == by), None)


@dataclass(frozen=True)
class StatusDoc:
    schema: int
    clock_ts: float
    cutoff_ts: int
    tz_offset_seconds: int
    runs: int
    files_bad: int
    writers: tuple[tuple[str, int], ...]
    windows: tuple[StatusWindow, ...]
    instances: tuple[StatusInstance, ...] | None = None  # None: the host sent no breakdown
    instances_truncated: int = 0
    tz_name: str | None = None  # None: a host that sent no "tz" (older than the zone rule)
    tz_source: ZoneSource | None = None
    keys_today: StatusKeys | None = None  # None: no ledger there keeps whose tokens
    budgets: StatusBudgets | None = None  # None: the host names no budgets file
    asked: StatusAsked | None = None  # None: nothing asked, or a host from before asks

    def window(self, name: str) -> StatusWindow:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)

    def instance(self, port: int) -> StatusInstance | None:
        for i in self.instances or ():
            if i.port == port:
                return i
        return None


# ---- parsing (remote bytes) -----------------------------------------------------------


def _window(name: str, d: Mapping[str, Any]) -> StatusWindow:
    start = field_int(d, "start", 0, MAX_CLOCK_TS)
    cutoff = field_int(d, "cutoff", 0, MAX_CLOCK_TS)
    if start > cutoff:
        raise StatusParseError("window: start after cutoff")
    counts: dict[str, Any] = {
        f.report_name: field_int(d, f.key, 0, MAX_COUNT) for f in STATUS_FIGURES
    }
    for part, whole in figures.parts(STATUS_FIGURES):
        if counts[part.report_name] > counts[whole.report_name]:
            raise StatusParseError(f"window: {part.key} above {whole.key}")
    complete = field_bool(d, "complete")
    uncovered = field_int(d, "uncovered_seconds", 0, MAX_SECONDS)
    # The same rule as the host's report, from the numbers; a host that says less is believed
    # (an older host sends no word: the numbers decide alone).
    known = figures_known(complete, uncovered, cutoff - start, any(counts.values()))
    if "figures" in d:
        known = weakest(known, field_word(d, "figures", FIGURES_KNOWN))
    return StatusWindow(
        name=name,
        start_ts=start,
        cutoff_ts=cutoff,
        **counts,
        hit_rate=field_float(d, "hit_rate", 0.0, 1.0, nullable=True),
        avg_speed=field_float(d, "avg_speed", 0.0, MAX_SPEED, nullable=True),
        gen_speed=field_float(d, "gen_speed", 0.0, MAX_SPEED, nullable=True),
        uncovered_seconds=uncovered,
        complete=complete,
        problems=field_codes(d, "problems", PROBLEM_CODES, require_all=False),
        known=known,
    )


def parse(data: bytes, max_bytes: int = 64 * 1024) -> StatusDoc:
    """A status document from untrusted bytes, or ``StatusParseError``."""
    if len(data) > max_bytes:
        raise StatusParseError("too long")
    doc = loads(data.strip())
    if not isinstance(doc, dict):
        raise StatusParseError("not an object")
    schema = field_int(doc, "schema", 0, 10**6)
    if schema != STATUS_SCHEMA:
        raise StatusParseError("unsupported schema")
    windows_obj = field_obj(doc, "windows")
    clock = field_float(doc, "clock", MIN_CLOCK_TS, MAX_CLOCK_TS)
    assert clock is not None
    windows = tuple(_window(n, field_obj(windows_obj, n)) for n in STATUS_WINDOWS)
    instances = None
    truncated = 0
    if "instances" in doc:
        instances = _instances(doc["instances"], windows)
        truncated = field_int(doc, "instances_truncated", 0, MAX_COUNT)
    return StatusDoc(
        schema=schema,
        clock_ts=clock,
        cutoff_ts=field_int(doc, "cutoff", MIN_CLOCK_TS, MAX_CLOCK_TS),
        tz_offset_seconds=field_int(doc, "tz_offset", -MAX_TZ_OFFSET_S, MAX_TZ_OFFSET_S),
        runs=field_int(doc, "runs", 0, MAX_COUNT),
        files_bad=field_int(doc, "files_bad", 0, MAX_COUNT),
        writers=field_codes(doc, "writers", WRITER_STATES, require_all=True),
        windows=windows,
        instances=instances,
        instances_truncated=truncated,
        tz_name=_tz_name(doc),
        tz_source=_tz_source(doc),
        keys_today=parse_keys(doc),
        budgets=parse_budgets(doc),
        asked=_asked(doc),
    )


def _asked(doc: Mapping[str, Any]) -> StatusAsked | None:
    """The optional ``asked`` block: its window checked as every window."""
    if "asked" not in doc:
        return None
    parts, window = parse_asked_parts(doc["asked"])
    return StatusAsked(
        ask=parts.ask,
        window=_window(parts.ask.window, window),
        by=parts.by,
        files_without=parts.files_without,
    )


def _tz_name(doc: Mapping[str, Any]) -> str | None:
    """The optional ``tz``: shaped like an IANA name (letters, digits, ``_+-/``), short."""
    if "tz" not in doc:
        return None
    v = doc["tz"]
    if not isinstance(v, str) or len(v) > MAX_ZONE_CHARS or not ZONE_NAME_RE.fullmatch(v):
        raise StatusParseError("tz: not a time zone name")
    return v


def _tz_source(doc: Mapping[str, Any]) -> ZoneSource | None:
    """The optional ``tz_source``: one of our own constants, never the remote's string."""
    if "tz_source" not in doc:
        return None
    return field_word(doc, "tz_source", ZONE_SOURCES)


def _instances(value: object, whole: tuple[StatusWindow, ...]) -> tuple[StatusInstance, ...]:
    """The per-port rows: a bounded list, one row per port, no count above the whole's."""
    if not isinstance(value, list):
        raise StatusParseError("instances: not a list")
    if len(value) > MAX_STATUS_INSTANCES:
        raise StatusParseError("instances: too many")
    out: list[StatusInstance] = []
    for item in value:
        if not isinstance(item, dict):
            raise StatusParseError("instances: not an object")
        port = field_int(item, "port", 1, 65535)
        if any(i.port == port for i in out):
            raise StatusParseError("instances: a port given twice")
        windows_obj = field_obj(item, "windows")
        windows = tuple(_window(n, field_obj(windows_obj, n)) for n in STATUS_WINDOWS)
        for part, all_ in zip(windows, whole, strict=True):
            if any(
                getattr(part, f.report_name) > getattr(all_, f.report_name) for f in STATUS_FIGURES
            ):
                raise StatusParseError("instances: a port above the whole data dir")
        out.append(
            StatusInstance(
                port=port,
                runs=field_int(item, "runs", 0, MAX_COUNT),
                writers=field_codes(item, "writers", WRITER_STATES, require_all=True),
                windows=windows,
                health=_row_health(item),
            )
        )
    return tuple(out)


def _row_health(item: Mapping[str, Any]) -> tuple[str, int | None] | None:
    """A row's optional ``health``: a state of our own set and an HTTP status or null."""
    if "health" not in item:
        return None
    h = field_obj(item, "health")
    state = h.get("state")
    if not isinstance(state, str) or state not in REMOTE_HEALTH_STATES or len(h) != 2:
        raise StatusParseError("health: not a known state")
    code = h.get("http_status", 0)
    if code is not None and (type(code) is not int or not 100 <= code <= 599):
        raise StatusParseError("health: not an HTTP status")
    # The state kept is this module's own constant, never the remote's string.
    return REMOTE_HEALTH_STATES[REMOTE_HEALTH_STATES.index(state)], code


def _parsed_window(w: StatusWindow) -> dict[str, Any]:
    """One window as the bot prints it: unknown figures ``null``, never 0 (the wire keeps 0
    there for bots older than the ``figures`` word; docs/bot-status.md)."""
    unknown = w.known == "unknown"
    return {
        "start": w.start_ts,
        "cutoff": w.cutoff_ts,
        **{f.key: None if unknown else getattr(w, f.report_name) for f in STATUS_FIGURES},
        "hit_rate": w.hit_rate,
        "avg_speed": None if unknown else w.avg_speed,
        "gen_speed": w.gen_speed,
        "uncovered_seconds": w.uncovered_seconds,
        "complete": w.complete,
        "problems": dict(w.problems),
        **({"figures": "unknown"} if unknown else {}),
    }


def _parsed_windows(windows: tuple[StatusWindow, ...]) -> dict[str, Any]:
    return {w.name: _parsed_window(w) for w in windows}


def doc_dict(doc: StatusDoc) -> dict[str, Any]:
    """A parsed document back in the status form (validated numbers only; no breakdown)."""
    out: dict[str, Any] = {
        "schema": doc.schema,
        "clock": doc.clock_ts,
        "cutoff": doc.cutoff_ts,
        "tz_offset": doc.tz_offset_seconds,
        **({"tz": doc.tz_name} if doc.tz_name is not None else {}),
        **({"tz_source": doc.tz_source} if doc.tz_source is not None else {}),
        "runs": doc.runs,
        "files_bad": doc.files_bad,
        "writers": dict(doc.writers),
        "windows": _parsed_windows(doc.windows),
    }
    if doc.instances is not None:
        out["instances"] = [
            {
                "port": i.port,
                "runs": i.runs,
                "writers": dict(i.writers),
                "windows": _parsed_windows(i.windows),
                **(
                    {"health": {"state": i.health[0], "http_status": i.health[1]}}
                    if i.health is not None
                    else {}
                ),
            }
            for i in doc.instances
        ]
        out["instances_truncated"] = doc.instances_truncated
    if doc.keys_today is not None:
        out["keys_today"] = parsed_keys_dict(doc.keys_today)
    if doc.budgets is not None:
        out["budgets"] = parsed_budgets_dict(doc.budgets)
    if doc.asked is not None:
        a = doc.asked
        out["asked"] = {
            "ask": a.ask.word,
            "window": _parsed_window(a.window),
            "by": {b: parsed_keys_dict(k) for b, k in a.by},
            "files_without": a.files_without,
        }
    return out


__all__ = [
    "MAX_BASE_BYTES",
    "MAX_KEYS_BYTES",
    "MAX_STATUS_BYTES",
    "MAX_STATUS_INSTANCES",
    "REMOTE_HEALTH_STATES",
    "STATUS_FIGURES",
    "STATUS_SCHEMA",
    "STATUS_WINDOWS",
    "StatusAsked",
    "StatusDoc",
    "StatusInstance",
    "StatusParseError",
    "StatusWindow",
    "doc_dict",
    "parse",
]
