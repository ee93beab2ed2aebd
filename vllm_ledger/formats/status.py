"""The bounded status document the bot reads over SSH, and its strict parser. Standard library.

``render(report, ports)`` writes one line of ASCII JSON with fixed keys, numbers only (counts
are integers, ratios floats or null), problem codes from ``coverage.PROBLEM_CODES``, the host's
clock and a schema version, and the zone "today" was cut in (``tz_offset`` at the cutoff,
``tz`` its IANA name, ``tz_source`` the level of the zone rule that chose it: the forced
command passes no ``--tz``, so ``VLLM_LEDGER_TZ`` or the root's zone file decide);
``instances`` adds the same figures per API port (at most
``MAX_STATUS_INSTANCES``, the rest counted in ``instances_truncated``), so the bot's line for a
node port shows that port's instance even when several share a data dir. Each row may carry
``health``: the deployment host's own ``GET /health`` of 127.0.0.1 at that port (a state from
``REMOTE_HEALTH_STATES`` and the HTTP status), so a bot that has only an SSH target still sees
whether vLLM answers. ``keys_today`` (``formats/status_keys.py``) holds the top keys of
today by input tokens and today's not-attributed tokens, where the ledgers keep whose tokens.
With ``--by`` a ``breakdown`` (keys are ledger text, ASCII-escaped and cut to
``MAX_KEY_CHARS``; the bot never reads it) is added. Its size is bounded by construction: the
document without rows stays under ``MAX_BASE_BYTES``, ``keys_today`` under ``MAX_KEYS_BYTES``,
and rows are dropped (and counted: breakdown rows, then key rows, then port rows) until the
whole is at most ``MAX_STATUS_BYTES``, below what the bot reads (64 KiB).

``parse(data)`` is the other side: it takes bytes from a remote host that may be hostile and
returns a ``StatusDoc`` holding only range-checked numbers, this module's own constant
strings and a zone name shaped like one (``tz``: at most 64 of ``[A-Za-z0-9_+-/]``), or
raises ``StatusParseError``. Unknown keys are ignored (keys are only ever added
within a schema version); a known key that is missing, of the wrong type or out of range
rejects the whole document: a value that cannot be trusted is unknown, never 0. So does an
``instances`` list longer than ``MAX_STATUS_INSTANCES``, a port given twice, or a port's count
above the whole data dir's in the same window. The ``breakdown`` is never read; the keys of
``keys_today`` are the only remote text kept, each shape-checked (``status_keys.KEY_SHAPE``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from vllm_ledger import figures, strictjson
from vllm_ledger.errors import ConfigError, StatusParseError
from vllm_ledger.figures import Figure
from vllm_ledger.formats import status_asked, status_budgets
from vllm_ledger.formats.status_asked import Ask, Asked, asked_dict, parse_asked_parts
from vllm_ledger.formats.status_budgets import StatusBudgets, parse_budgets, parsed_budgets_dict
from vllm_ledger.formats.status_keys import (
    MAX_KEYS_BYTES,
    StatusKeys,
    keys_dict,
    parse_keys,
    parsed_keys_dict,
)
from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.ports import MAX_PORT_ROWS, PortRow, PortRows
from vllm_ledger.read.report import Report, WindowReport
from vllm_ledger.read.whose import WhoseWindow
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
MAX_COUNT = 10**15  # tokens, requests, files: ~30 years at 1M tokens/s
MAX_SECONDS = 10**10  # durations (300+ years)
MIN_CLOCK_TS = 10**9  # 2001-09-09: a host clock before this is broken
MAX_CLOCK_TS = 10**10  # 2286
MAX_SPEED = 10**9  # tokens per second
MAX_TZ_OFFSET_S = 18 * 3600
MAX_NUMBER_CHARS = 32  # no numeral in a valid document is longer
STATUS_MAX_DEPTH = 8  # a valid document nests seven deep (breakdown -> rows -> windows ...)


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


# ---- producing -------------------------------------------------------------------------


def _ratio(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _window_dict(w: WindowReport) -> dict[str, Any]:
    return {
        "start": int(w.start_ts),
        "cutoff": int(w.cutoff_ts),
        **{f.key: int(getattr(w, f.report_name)) for f in STATUS_FIGURES},
        "hit_rate": _ratio(w.hit_rate),
        "avg_speed": _ratio(w.avg_speed),
        "gen_speed": _ratio(w.gen_speed),
        "uncovered_seconds": int(w.uncovered_seconds),
        "complete": bool(w.complete),
        "problems": {c: int(w.problems[c]) for c in PROBLEM_CODES if w.problems.get(c)},
    }


def _tz_offset_seconds(report: Report) -> int:
    from zoneinfo import ZoneInfo

    local = datetime.fromtimestamp(report.cutoff_ts, timezone.utc).astimezone(ZoneInfo(report.tz))
    off = local.utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _windows_dict(windows: tuple[WindowReport, ...]) -> dict[str, Any]:
    """``STATUS_WINDOWS``, each from the report's window of that name."""
    by_name = {w.name: w for w in windows}
    missing = [n for n in STATUS_WINDOWS if n not in by_name]
    if missing:
        raise ValueError(f"a status document needs the windows {', '.join(missing)}")
    return {n: _window_dict(by_name[n]) for n in STATUS_WINDOWS}


PortHealth = Mapping[int, tuple[str, int | None]]


def _port_dict(row: PortRow, health: PortHealth | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "port": int(row.port),
        "runs": int(row.runs),
        "writers": {s: int(row.writers.get(s, 0)) for s in WRITER_STATES},
        "windows": _windows_dict(row.windows),
    }
    probed = (health or {}).get(int(row.port))
    if probed is not None and probed[0] in REMOTE_HEALTH_STATES:
        code = probed[1] if probed[1] is not None and 100 <= probed[1] <= 599 else None
        out["health"] = {"state": probed[0], "http_status": code}
    return out


def status_dict(
    report: Report,
    ports: PortRows | None = None,
    health: PortHealth | None = None,
    *,
    tz_source: ZoneSource | None = None,
    keys: WhoseWindow | None = None,
    budgets: dict[str, Any] | None = None,
    asked: Asked | None = None,
) -> dict[str, Any]:
    """The status document as a dict (see docs/bot-status.md for every key), before the byte
    bound (``render`` applies it). ``health`` maps a port to its probe's (state, HTTP status);
    a row whose port it names carries it. ``keys``: today's rows by key (``keys_today``);
    ``budgets``: ``status_budgets.budgets_dict``'s block; ``asked``: what an ask found."""
    writers = {s: 0 for s in WRITER_STATES}
    for w in report.writers:
        if w.state in writers:
            writers[w.state] += 1
    out: dict[str, Any] = {
        "schema": STATUS_SCHEMA,
        "clock": round(report.generated_ts, 3),
        "cutoff": int(report.cutoff_ts),
        "tz_offset": _tz_offset_seconds(report),
        "tz": report.tz,  # the zone "today" was cut in (the rule: docs/ledger.md)
        **({"tz_source": tz_source} if tz_source in ZONE_SOURCES else {}),
        "runs": int(report.runs),
        "files_bad": len(report.files),
        "writers": writers,
        "windows": _windows_dict(report.windows),
    }
    if report.nothing_matched is not None:
        nm = report.nothing_matched
        out["nothing_matched"] = {
            "reason": nm.reason,
            "models": [m[:MAX_KEY_CHARS] for m in nm.models[:MAX_NAMES]],
            "instances": [i[:MAX_KEY_CHARS] for i in nm.instances[:MAX_NAMES]],
        }
    if keys is not None:
        out["keys_today"] = keys_dict(keys)
    if budgets is not None:
        out["budgets"] = budgets
    if asked is not None:
        out["asked"] = asked_dict(asked, _window_dict(asked.window))
    if ports is not None:
        rows = ports.rows[:MAX_STATUS_INSTANCES]
        out["instances"] = [_port_dict(r, health) for r in rows]
        out["instances_truncated"] = int(ports.truncated) + len(ports.rows) - len(rows)
    if report.breakdown_by is not None:
        rows_ = report.breakdown[:MAX_BREAKDOWN_ROWS]
        out["breakdown"] = {
            "by": report.breakdown_by,
            "rows": [
                {"key": r.key[:MAX_KEY_CHARS], "windows": _windows_dict(r.windows)} for r in rows_
            ],
            "truncated": len(report.breakdown) - len(rows_),
        }
    return out


def _dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=True, allow_nan=False)


def _drop_rows(doc: dict[str, Any], block: str) -> bool:
    """Drop the last row of a ``{rows, truncated}`` block, counted; False when none is left."""
    got = doc.get(block)
    if not got or not got["rows"]:
        return False
    got["rows"].pop()
    got["truncated"] += 1
    return True


def _drop_port(doc: dict[str, Any]) -> bool:
    """Drop the highest port row, counted; False when none is left."""
    if not doc.get("instances"):
        return False
    doc["instances"].pop()
    doc["instances_truncated"] += 1
    return True


def _drop_budget(doc: dict[str, Any]) -> bool:
    return "budgets" in doc and status_budgets.drop_last(doc["budgets"])


def _drop_asked(doc: dict[str, Any]) -> bool:
    return "asked" in doc and status_asked.drop_last(doc["asked"])


def render(
    report: Report,
    ports: PortRows | None = None,
    health: PortHealth | None = None,
    *,
    tz_source: ZoneSource | None = None,
    keys: WhoseWindow | None = None,
    budgets: dict[str, Any] | None = None,
    asked: Asked | None = None,
) -> str:
    """One line of ASCII JSON of at most ``MAX_STATUS_BYTES``: rows are dropped and counted
    until it fits, in this order: breakdown rows, today's keys, the least urgent budgets,
    then the highest ports (16 port rows and the top keys fit even with every count at its
    largest: tested). A document that answers an ask is read for that answer only, so its
    ports and budgets go before the answer's rows, which go last."""
    doc = status_dict(
        report, ports, health, tz_source=tz_source, keys=keys, budgets=budgets, asked=asked
    )
    steps: list[Callable[[dict[str, Any]], bool]] = [
        lambda d: _drop_rows(d, "breakdown"),
        lambda d: _drop_rows(d, "keys_today"),
        _drop_budget,
        _drop_port,
        _drop_asked,
    ]
    text = _dumps(doc)
    while len(text) + 1 > MAX_STATUS_BYTES:
        if not any(step(doc) for step in steps):  # pragma: no cover  (bounded far below)
            raise AssertionError("status document over its bound without rows")
        text = _dumps(doc)
    return text + "\n"


# ---- parsing (remote bytes) -----------------------------------------------------------


def _parse_float(text: str) -> float:
    if len(text) > MAX_NUMBER_CHARS:
        raise StatusParseError("number too long")
    x = float(text)
    if not math.isfinite(x):
        raise StatusParseError("non-finite number")
    return x


def _parse_int(text: str) -> int:
    if len(text) > MAX_NUMBER_CHARS:
        raise StatusParseError("number too long")
    return int(text)


def _obj(parent: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    v = parent.get(key)
    if not isinstance(v, dict):
        raise StatusParseError(f"{key}: not an object")
    return v


def _int(parent: Mapping[str, Any], key: str, lo: int, hi: int) -> int:
    v = parent.get(key)
    if type(v) is not int or not lo <= v <= hi:
        raise StatusParseError(f"{key}: not an integer in range")
    return v


def _float(
    parent: Mapping[str, Any], key: str, lo: float, hi: float, nullable: bool = False
) -> float | None:
    v = parent.get(key)
    if v is None and nullable and key in parent:
        return None
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise StatusParseError(f"{key}: not a number")
    if not math.isfinite(v) or not lo <= v <= hi:
        raise StatusParseError(f"{key}: not a number in range")
    return float(v)


def _bool(parent: Mapping[str, Any], key: str) -> bool:
    v = parent.get(key)
    if type(v) is not bool:
        raise StatusParseError(f"{key}: not a boolean")
    return v


def _codes(
    parent: Mapping[str, Any], key: str, allowed: tuple[str, ...], require_all: bool
) -> tuple[tuple[str, int], ...]:
    obj = _obj(parent, key)
    if any(k not in allowed for k in obj):
        raise StatusParseError(f"{key}: unknown code")
    # The names kept are this module's own constants, never the remote's strings.
    out = tuple(
        (code, _int(obj, code, 0, MAX_COUNT)) for code in allowed if require_all or code in obj
    )
    return out


def _window(name: str, d: Mapping[str, Any]) -> StatusWindow:
    start = _int(d, "start", 0, MAX_CLOCK_TS)
    cutoff = _int(d, "cutoff", 0, MAX_CLOCK_TS)
    if start > cutoff:
        raise StatusParseError("window: start after cutoff")
    counts: dict[str, Any] = {f.report_name: _int(d, f.key, 0, MAX_COUNT) for f in STATUS_FIGURES}
    for part, whole in figures.parts(STATUS_FIGURES):
        if counts[part.report_name] > counts[whole.report_name]:
            raise StatusParseError(f"window: {part.key} above {whole.key}")
    return StatusWindow(
        name=name,
        start_ts=start,
        cutoff_ts=cutoff,
        **counts,
        hit_rate=_float(d, "hit_rate", 0.0, 1.0, nullable=True),
        avg_speed=_float(d, "avg_speed", 0.0, MAX_SPEED, nullable=True),
        gen_speed=_float(d, "gen_speed", 0.0, MAX_SPEED, nullable=True),
        uncovered_seconds=_int(d, "uncovered_seconds", 0, MAX_SECONDS),
        complete=_bool(d, "complete"),
        problems=_codes(d, "problems", PROBLEM_CODES, require_all=False),
    )


def _loads(data: bytes) -> Any:
    try:
        text = data.decode("ascii")  # render() writes ASCII only; anything else is foreign
    except UnicodeDecodeError as exc:
        raise StatusParseError("not ASCII") from exc
    if any(c < " " and c not in "\n\r\t" for c in text):
        raise StatusParseError("control character")
    try:
        return strictjson.loads(
            text,
            max_bytes=len(data),  # the caller has bounded the bytes
            what="status",
            max_depth=STATUS_MAX_DEPTH,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except ConfigError as exc:
        raise StatusParseError(exc.what) from exc


def parse(data: bytes, max_bytes: int = 64 * 1024) -> StatusDoc:
    """A status document from untrusted bytes, or ``StatusParseError``."""
    if len(data) > max_bytes:
        raise StatusParseError("too long")
    doc = _loads(data.strip())
    if not isinstance(doc, dict):
        raise StatusParseError("not an object")
    schema = _int(doc, "schema", 0, 10**6)
    if schema != STATUS_SCHEMA:
        raise StatusParseError("unsupported schema")
    windows_obj = _obj(doc, "windows")
    clock = _float(doc, "clock", MIN_CLOCK_TS, MAX_CLOCK_TS)
    assert clock is not None
    windows = tuple(_window(n, _obj(windows_obj, n)) for n in STATUS_WINDOWS)
    instances = None
    truncated = 0
    if "instances" in doc:
        instances = _instances(doc["instances"], windows)
        truncated = _int(doc, "instances_truncated", 0, MAX_COUNT)
    return StatusDoc(
        schema=schema,
        clock_ts=clock,
        cutoff_ts=_int(doc, "cutoff", MIN_CLOCK_TS, MAX_CLOCK_TS),
        tz_offset_seconds=_int(doc, "tz_offset", -MAX_TZ_OFFSET_S, MAX_TZ_OFFSET_S),
        runs=_int(doc, "runs", 0, MAX_COUNT),
        files_bad=_int(doc, "files_bad", 0, MAX_COUNT),
        writers=_codes(doc, "writers", WRITER_STATES, require_all=True),
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
    v = doc["tz_source"]
    for source in ZONE_SOURCES:
        if v == source:
            return source
    raise StatusParseError("tz_source: not a known source")


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
        port = _int(item, "port", 1, 65535)
        if any(i.port == port for i in out):
            raise StatusParseError("instances: a port given twice")
        windows_obj = _obj(item, "windows")
        windows = tuple(_window(n, _obj(windows_obj, n)) for n in STATUS_WINDOWS)
        for part, all_ in zip(windows, whole, strict=True):
            if any(
                getattr(part, f.report_name) > getattr(all_, f.report_name) for f in STATUS_FIGURES
            ):
                raise StatusParseError("instances: a port above the whole data dir")
        out.append(
            StatusInstance(
                port=port,
                runs=_int(item, "runs", 0, MAX_COUNT),
                writers=_codes(item, "writers", WRITER_STATES, require_all=True),
                windows=windows,
                health=_row_health(item),
            )
        )
    return tuple(out)


def _row_health(item: Mapping[str, Any]) -> tuple[str, int | None] | None:
    """A row's optional ``health``: a state of our own set and an HTTP status or null."""
    if "health" not in item:
        return None
    h = _obj(item, "health")
    state = h.get("state")
    if not isinstance(state, str) or state not in REMOTE_HEALTH_STATES or len(h) != 2:
        raise StatusParseError("health: not a known state")
    code = h.get("http_status", 0)
    if code is not None and (type(code) is not int or not 100 <= code <= 599):
        raise StatusParseError("health: not an HTTP status")
    # The state kept is this module's own constant, never the remote's string.
    return REMOTE_HEALTH_STATES[REMOTE_HEALTH_STATES.index(state)], code


def _parsed_windows(windows: tuple[StatusWindow, ...]) -> dict[str, Any]:
    return {
        w.name: {
            "start": w.start_ts,
            "cutoff": w.cutoff_ts,
            **{f.key: getattr(w, f.report_name) for f in STATUS_FIGURES},
            "hit_rate": w.hit_rate,
            "avg_speed": w.avg_speed,
            "gen_speed": w.gen_speed,
            "uncovered_seconds": w.uncovered_seconds,
            "complete": w.complete,
            "problems": dict(w.problems),
        }
        for w in windows
    }


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
            "window": _parsed_windows((a.window,))[a.window.name],
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
    "render",
    "status_dict",
]
