"""The JSON documents of ``doctor``, ``preflight``, ``verify`` and ``check`` (``--json``): each
``"schema": 1``, described key by key in docs/json-schema.md. Pure.

As in ``report --json``: within a schema, keys are only ever added, never renamed or removed;
instants are Unix seconds; ``null`` means unknown, never 0; strings that came from disk or a
remote (paths, run ids, details) are JSON strings, escaped by JSON, not trusted text. A
command that could not start (exit 2) prints its one error line on stderr and no document.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from vllm_ledger.read.check import FileVerdict
    from vllm_ledger.read.verify import VerifyResult

SCHEMA = 1


def dumps(doc: dict[str, Any]) -> str:
    """One document, indented, ASCII (a terminal or a pipe shows it as written), one newline."""
    return json.dumps(doc, indent=2, ensure_ascii=True, allow_nan=False) + "\n"


def doctor_dict(report: Any, vllm_output_lines: int = 0) -> dict[str, Any]:
    """``doctor --json``: every row of a ``doctor.DoctorReport``, as the table shows it
    (docs/json-schema.md, "doctor"). Typed loosely: the checks sit above the formats."""
    return {
        "schema": SCHEMA,
        "ok": report.ok,
        "summary": report.summary(),
        "checks": [
            {"check": r.check, "result": r.result, "checked": r.checked, "fix": r.fix}
            for r in report.rows
        ],
        "vllm_output_lines": vllm_output_lines,
    }


def preflight_dict(result: Any) -> dict[str, Any]:
    """``preflight --json``: every finding of a ``deploy.preflight.Preflight``
    (docs/json-schema.md, "preflight"). Typed loosely: deploy sits above the formats."""
    return {
        "schema": SCHEMA,
        "blocked": result.blocked,
        "blockers": sum(f.result == "BLOCKER" for f in result.findings),
        "findings": [
            {
                "check": f.check,
                "result": f.result,
                "found": f.found,
                "needs": f.needs,
                "source": f.source,
            }
            for f in result.findings
        ],
    }


def verify_dict(result: VerifyResult) -> dict[str, Any]:
    """``verify --json``: the run compared, both sides, the differences, or another server's
    counters (docs/json-schema.md, "verify")."""
    other = result.other_server
    return {
        "schema": SCHEMA,
        "match": result.match,
        "run_id": result.run_id,
        "ledger": dict(result.ledger),
        "vllm": dict(result.vllm),
        "differences": [
            {"figure": d.figure, "metric": d.metric, "ledger": d.ledger, "vllm": d.vllm}
            for d in result.differences
        ],
        "waited_seconds": round(result.waited_s, 3),
        "other_server": None
        if other is None
        else {
            "created_at": round(other.created_ts, 3),
            "run_start_at": round(other.run_start_ts, 3),
            "offset_seconds": round(other.offset_s, 3),
        },
    }


def check_dict(roots: Sequence[Path], verdicts: Sequence[FileVerdict]) -> dict[str, Any]:
    """``check --json``: a verdict per file and per problem beyond the files
    (docs/json-schema.md, "check")."""
    files = [v for v in verdicts if not v.root]
    bad = sum(1 for v in files if not v.ok)
    beyond = len(verdicts) - len(files)
    return {
        "schema": SCHEMA,
        "ok": bool(verdicts) and not bad and not beyond,
        "roots": [str(r) for r in roots],
        "files": len(files),
        "files_with_problems": bad,
        "problems_beyond_files": beyond,
        "verdicts": [
            {
                "path": str(v.path),
                "ok": v.ok,
                "verdict": v.verdict,
                "detail": v.detail,
                "root": v.root,
            }
            for v in verdicts
        ],
    }


__all__ = ["SCHEMA", "check_dict", "doctor_dict", "dumps", "preflight_dict", "verify_dict"]
