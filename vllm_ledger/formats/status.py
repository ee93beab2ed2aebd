"""The bounded status document the bot reads over SSH, and its strict parser. Standard library.

``render(report)`` writes one line of ASCII JSON with fixed keys, numbers only (counts are
integers, ratios floats or null), problem codes from ``coverage.PROBLEM_CODES``, the host's
clock and a schema version. Its size is bounded by construction (``MAX_STATUS_BYTES``).

``parse(data)`` is the other side: it takes bytes from a remote host that may be hostile and
returns a ``StatusDoc`` holding only range-checked numbers and this module's own constant
strings, or raises ``StatusParseError``. Unknown keys are ignored (keys are only ever added
within a schema version); a known key that is missing, of the wrong type or out of range
rejects the whole document: a value that cannot be trusted is unknown, never 0.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from vllm_ledger import strictjson
from vllm_ledger.errors import ConfigError, StatusParseError
from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.report import Report, WindowReport
from vllm_ledger.read.windows import WINDOW_NAMES

STATUS_SCHEMA = 1
MAX_STATUS_BYTES = 4096
WRITER_STATES: tuple[str, ...] = ("alive", "closed", "stale", "crashed", "missing")

# Range checks for what a remote host may claim.
MAX_COUNT = 10**15  # tokens, requests, files: ~30 years at 1M tokens/s
MAX_SECONDS = 10**10  # durations (300+ years)
MIN_CLOCK_TS = 10**9  # 2001-09-09: a host clock before this is broken
MAX_CLOCK_TS = 10**10  # 2286
MAX_SPEED = 10**9  # tokens per second
MAX_TZ_OFFSET_S = 18 * 3600
MAX_NUMBER_CHARS = 32  # no numeral in a valid document is longer
STATUS_MAX_DEPTH = 8  # a valid document nests four deep (windows -> a window -> problems)


@dataclass(frozen=True)
class StatusWindow:
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
class StatusDoc:
    schema: int
    clock_ts: float
    cutoff_ts: int
    tz_offset_seconds: int
    runs: int
    files_bad: int
    writers: tuple[tuple[str, int], ...]
    windows: tuple[StatusWindow, ...]

    def window(self, name: str) -> StatusWindow:
        for w in self.windows:
            if w.name == name:
                return w
        raise KeyError(name)


# ---- producing -------------------------------------------------------------------------


def _ratio(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _window_dict(w: WindowReport) -> dict[str, Any]:
    return {
        "start": int(w.start_ts),
        "cutoff": int(w.cutoff_ts),
        "input": int(w.input_tokens),
        "output": int(w.output_tokens),
        "cached": int(w.cached_tokens),
        "requests": int(w.requests),
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


def status_dict(report: Report) -> dict[str, Any]:
    """The status document as a dict (see docs/bot-status.md for every key)."""
    writers = {s: 0 for s in WRITER_STATES}
    for w in report.writers:
        if w.state in writers:
            writers[w.state] += 1
    by_name = {w.name: w for w in report.windows}
    return {
        "schema": STATUS_SCHEMA,
        "clock": round(report.generated_ts, 3),
        "cutoff": int(report.cutoff_ts),
        "tz_offset": _tz_offset_seconds(report),
        "runs": int(report.runs),
        "files_bad": len(report.files),
        "writers": writers,
        "windows": {n: _window_dict(by_name[n]) for n in WINDOW_NAMES if n in by_name},
    }


def render(report: Report) -> str:
    """One line of ASCII JSON, well under ``MAX_STATUS_BYTES``."""
    text = json.dumps(
        status_dict(report), separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
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
    input_tokens = _int(d, "input", 0, MAX_COUNT)
    cached = _int(d, "cached", 0, MAX_COUNT)
    if cached > input_tokens:
        raise StatusParseError("window: cached above input")
    return StatusWindow(
        name=name,
        start_ts=start,
        cutoff_ts=cutoff,
        input_tokens=input_tokens,
        output_tokens=_int(d, "output", 0, MAX_COUNT),
        cached_tokens=cached,
        requests=_int(d, "requests", 0, MAX_COUNT),
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
    windows = _obj(doc, "windows")
    clock = _float(doc, "clock", MIN_CLOCK_TS, MAX_CLOCK_TS)
    assert clock is not None
    return StatusDoc(
        schema=schema,
        clock_ts=clock,
        cutoff_ts=_int(doc, "cutoff", MIN_CLOCK_TS, MAX_CLOCK_TS),
        tz_offset_seconds=_int(doc, "tz_offset", -MAX_TZ_OFFSET_S, MAX_TZ_OFFSET_S),
        runs=_int(doc, "runs", 0, MAX_COUNT),
        files_bad=_int(doc, "files_bad", 0, MAX_COUNT),
        writers=_codes(doc, "writers", WRITER_STATES, require_all=True),
        windows=tuple(_window(n, _obj(windows, n)) for n in WINDOW_NAMES),
    )


def doc_dict(doc: StatusDoc) -> dict[str, Any]:
    """A parsed document back in the status form (validated numbers only)."""
    return {
        "schema": doc.schema,
        "clock": doc.clock_ts,
        "cutoff": doc.cutoff_ts,
        "tz_offset": doc.tz_offset_seconds,
        "runs": doc.runs,
        "files_bad": doc.files_bad,
        "writers": dict(doc.writers),
        "windows": {
            w.name: {
                "start": w.start_ts,
                "cutoff": w.cutoff_ts,
                "input": w.input_tokens,
                "output": w.output_tokens,
                "cached": w.cached_tokens,
                "requests": w.requests,
                "hit_rate": w.hit_rate,
                "avg_speed": w.avg_speed,
                "gen_speed": w.gen_speed,
                "uncovered_seconds": w.uncovered_seconds,
                "complete": w.complete,
                "problems": dict(w.problems),
            }
            for w in doc.windows
        },
    }


__all__ = [
    "MAX_STATUS_BYTES",
    "STATUS_SCHEMA",
    "StatusDoc",
    "StatusParseError",
    "StatusWindow",
    "doc_dict",
    "parse",
    "render",
    "status_dict",
]
