"""The status document written: one line of ASCII JSON from a ``Report``, bounded in bytes.

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

The document's shape, its limits and its strict parser are ``formats/status.py``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from typing import Any

from vllm_ledger.formats import status_asked, status_budgets
from vllm_ledger.formats.status import (
    MAX_BREAKDOWN_ROWS,
    MAX_KEY_CHARS,
    MAX_NAMES,
    MAX_STATUS_BYTES,
    MAX_STATUS_INSTANCES,
    REMOTE_HEALTH_STATES,
    STATUS_FIGURES,
    STATUS_SCHEMA,
    STATUS_WINDOWS,
    WRITER_STATES,
)
from vllm_ledger.formats.status_asked import Asked, asked_dict
from vllm_ledger.formats.status_keys import keys_dict
from vllm_ledger.read.coverage import PROBLEM_CODES
from vllm_ledger.read.ports import PortRow, PortRows
from vllm_ledger.read.report import Report, WindowReport
from vllm_ledger.read.whose import WhoseWindow
from vllm_ledger.read.zone import ZONE_SOURCES, ZoneSource


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
        # Nothing recorded in the window (read/known.py): its counts are not 0 but unknown.
        # They stay 0 on the wire, as bots older than this word expect numbers; the word is
        # written only there, so the largest document is no larger (docs/bot-status.md).
        **({"figures": "unknown"} if w.known == "unknown" else {}),
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
        # To the millisecond, never up into the next second: `report --at CLOCK` cuts at the
        # same second as the document.
        "clock": min(round(report.generated_ts, 3), math.floor(report.generated_ts) + 0.999),
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
