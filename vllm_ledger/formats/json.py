"""The stable JSON form of a Report: ``"schema": 1``. See docs/json-schema.md.

Keys are only ever added, never renamed or removed, within a schema version.
"""

from __future__ import annotations

import json
from typing import Any

from vllm_ledger.read.report import Report, WindowReport
from vllm_ledger.read.zone import ZoneChoice


def round_or_none(x: float | None, digits: int = 6) -> float | None:
    return None if x is None else round(x, digits)


def window_dict(w: WindowReport) -> dict[str, Any]:
    return {
        "start": w.start_ts,
        "cutoff": w.cutoff_ts,
        "wall_seconds": w.wall_seconds,
        "input": w.input_tokens,
        "output": w.output_tokens,
        "cached": w.cached_tokens,
        "hit_rate": round_or_none(w.hit_rate),
        "avg_speed": round_or_none(w.avg_speed),
        "gen_speed": round_or_none(w.gen_speed),
        "requests": w.requests,
        "decode_tokens": w.decode_tokens,
        "decode_seconds": round(w.decode_seconds, 6),
        "uncovered_seconds": w.uncovered_seconds,
        # Declared stops (declare-stop): neither covered nor uncovered; 0 with --strict.
        "declared_seconds": w.declared_seconds,
        "complete": w.complete,
        "problems": dict(w.problems),
    }


def report_dict(report: Report, zone: ZoneChoice | None = None) -> dict[str, Any]:
    out: dict[str, Any] = {
        "schema": report.schema,
        "generated_at": round(report.generated_ts, 3),
        "at": round(report.at_ts, 3),
        "cutoff": report.cutoff_ts,
        # Seconds the cutoff (the live writers' watermark) is behind the query's second.
        "behind_s": report.behind_s,
        "tz": report.tz,
        # Which level of the zone rule gave "tz" (--tz, VLLM_LEDGER_TZ, root, default).
        **({"tz_source": zone.source} if zone is not None else {}),
        "roots": list(report.roots),
        "runs": report.runs,
        "windows": {w.name: window_dict(w) for w in report.windows},
        "writers": [
            {
                "run_id": w.run_id,
                "writer_rank": w.writer_rank,
                "expected_writers": w.expected_writers,
                "instance": w.instance,
                "state": w.state,
                "first_ts": round_or_none(w.first_ts, 3),
                "last_ts": round_or_none(w.last_ts, 3),
            }
            for w in report.writers
        ],
        "files": [{"path": f.path, "status": f.status, "detail": f.detail} for f in report.files],
    }
    if report.instance_filter is not None or report.model_filter is not None:
        out["filter"] = {"instance": report.instance_filter, "model": report.model_filter}
    if report.breakdown_by is not None:
        out["breakdown"] = {
            "by": report.breakdown_by,
            "rows": [
                {"key": row.key, "windows": {w.name: window_dict(w) for w in row.windows}}
                for row in report.breakdown
            ],
        }
    return out


def render(report: Report, zone: ZoneChoice | None = None) -> str:
    return json.dumps(report_dict(report, zone), indent=2, sort_keys=False, allow_nan=False) + "\n"
