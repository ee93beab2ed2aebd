"""The checks to run after every vLLM upgrade (docs/doctor.md), as one table.

Six checks, one module each, each giving a row that says what was checked, whether it passed
and how to fix a failure:

* ``interface`` (interface.py): the installed vLLM's stats classes have every field the plugin
  reads, with its types; its logger base builds and calls loggers as the plugin expects; one
  real ``record()`` through the real plugin reads back exactly from a temporary ledger.
* ``agreement`` (agreement.py): ``verify``, the newest run's totals against a live /metrics,
  another server's /metrics named as such.
* ``writers`` (writers.py): every expected writer of the newest run is alive and its heartbeat
  moves while the doctor watches.
* ``storage`` (storage.py): the real recorder, over storage that refuses writes, counts the
  failed commits and the lost events and never raises; the roots are writable, with room, and
  the newest run lost no event to a failed write.
* ``attribution`` (attribution.py): whose tokens are recorded (the newest run credits finished
  requests to keys and adapters), or why not: this vLLM cannot join them, the middleware is
  not loaded, the plugin predates it; unknown (warn) until a request has finished.
* ``budgets`` (budgets.py): off (no budgets file), the file valid or not, on and enforcing
  (the enforcer's over-budget file fresh), or failing open (missing or stale: the enforcer is
  down, every request is served).

Nothing here raises for a failed check: a check that cannot run is a failed row saying why.
``table`` renders a report through the one check table (``formats/checks.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timezone, tzinfo
from pathlib import Path

from vllm_ledger.doctor.agreement import check_agreement
from vllm_ledger.doctor.attribution import check_attribution, installed_shape
from vllm_ledger.doctor.base import CHECKS, CheckName, Row
from vllm_ledger.doctor.budgets import check_budgets
from vllm_ledger.doctor.interface import check_interface, interface_problems, round_trip
from vllm_ledger.doctor.storage import (
    MIN_FREE_BYTES,
    PLACES,
    SELFTEST_EVENTS,
    SelfTest,
    StoragePlace,
    check_storage,
    root_problems,
    storage_selftest,
)
from vllm_ledger.doctor.writers import HEARTBEAT_WAIT_S, check_writers
from vllm_ledger.formats.checks import CheckRow, render
from vllm_ledger.read.verify import FETCH_TIMEOUT_S
from vllm_ledger.write.shape import StatsShape


@dataclass(frozen=True)
class DoctorReport:
    rows: tuple[Row, ...]

    @property
    def ok(self) -> bool:
        return all(r.passed for r in self.rows)

    def summary(self) -> str:
        """``N of M checks pass`` (a row that warns is not counted), and the warnings."""
        passed = sum(r.result == "pass" for r in self.rows)
        warned = sum(r.result == "warn" for r in self.rows)
        more = f"; {warned} warn{'s' if warned == 1 else ''}" if warned else ""
        return f"{passed} of {len(self.rows)} checks pass{more}"


def doctor(
    roots: Sequence[Path],
    metrics_url: str | None,
    *,
    checks: Sequence[CheckName] = CHECKS,
    wait_s: float = 10.0,
    timeout_s: float = FETCH_TIMEOUT_S,
    heartbeat_wait_s: float = HEARTBEAT_WAIT_S,
    expect_writers: int | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
    tz: tzinfo = timezone.utc,
    shape_of: Callable[[], StatsShape | None] = installed_shape,
    budgets: Path | None = None,
    budgets_origin: str = "",
    on_check: Callable[[CheckName, int, int], None] | None = None,
) -> DoctorReport:
    """Run ``checks`` in the order of ``CHECKS``; every one gives a row, none raises. Instants
    a row names are in ``tz``; ``budgets`` is the budgets file (None: none set), named by
    ``budgets_origin``; ``on_check(name, n, of)`` is called as the n-th of ``of`` checks
    starts (the command's progress line)."""
    rows: list[Row] = []
    chosen = [name for name in CHECKS if name in checks]
    for name in chosen:
        if on_check is not None:
            on_check(name, len(rows) + 1, len(chosen))
        try:
            if name == "interface":
                row = check_interface()
            elif name == "agreement":
                row = check_agreement(
                    roots,
                    metrics_url,
                    wait_s=wait_s,
                    timeout_s=timeout_s,
                    clock=clock,
                    sleep=sleep,
                    tz=tz,
                )
            elif name == "writers":
                row = check_writers(
                    roots,
                    wait_s=heartbeat_wait_s,
                    expect_writers=expect_writers,
                    clock=clock,
                    sleep=sleep,
                )
            elif name == "storage":
                row = check_storage(roots, clock=clock)
            elif name == "attribution":
                row = check_attribution(roots, shape_of=shape_of, clock=clock)
            else:
                row = check_budgets(roots, budgets, budgets_origin, clock=clock)
        except Exception as exc:  # a check that cannot run is a failed row, never a crash
            row = Row(
                name,
                False,
                f"the check could not run: {type(exc).__name__}: {exc}",
                f"run it alone (vllm-ledger doctor --only {name}); if it stays, report it",
            )
        rows.append(row)
    return DoctorReport(tuple(rows))


def table(report: DoctorReport) -> list[str]:
    """The report as the check table: check, pass or FAIL, what was checked; a ``fix:`` line
    under each failed row. Terminal-safe."""
    return render([CheckRow(r.check, r.result, r.checked, r.fix) for r in report.rows])


__all__ = [
    "CHECKS",
    "HEARTBEAT_WAIT_S",
    "MIN_FREE_BYTES",
    "PLACES",
    "SELFTEST_EVENTS",
    "CheckName",
    "DoctorReport",
    "Row",
    "SelfTest",
    "StoragePlace",
    "check_agreement",
    "check_attribution",
    "check_budgets",
    "check_interface",
    "check_storage",
    "check_writers",
    "doctor",
    "interface_problems",
    "root_problems",
    "round_trip",
    "storage_selftest",
    "table",
]
