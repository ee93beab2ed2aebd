"""The exporter's coverage gauges: per window, seconds vouched for and problems, per instance and
for the whole root (the series without ``ledger_instance``), runs gone from the roots among the
problems; and per instance, the writers of its current run and of every run, by state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vllm_ledger.names import (
    LEDGER_INSTANCE_LABEL,
    LEDGER_RUN_START,
    LEDGER_WINDOW_COMPLETE,
    LEDGER_WINDOW_PROBLEMS,
    LEDGER_WINDOW_UNCOVERED_SECONDS,
    LEDGER_WINDOW_WALL_SECONDS,
    LEDGER_WRITERS,
    LEDGER_WRITERS_ALIVE,
    LEDGER_WRITERS_EXPECTED,
    PROBLEM_LABEL,
    STATE_LABEL,
    WINDOW_LABEL,
)
from vllm_ledger.observe.counters import VanishedRun
from vllm_ledger.read.report import Report, WindowReport

WRITER_STATES = ("alive", "closed", "stale", "crashed", "missing")
_OPEN_STATES = ("alive", "stale", "missing")
# A problem only a long-lived reader can see: a run it counted is no longer under the roots.
# (Not in read.coverage.PROBLEM_CODES: a single report never sees a run go.)
RUN_VANISHED = "run_vanished"

# An instance (None: the whole root), its windows and the vanished runs that were its own.
Scope = tuple[str | None, Sequence[WindowReport], Sequence[VanishedRun]]


def _writer_gauges(report: Report) -> dict[str, dict[str, int]]:
    """Per instance: writers expected and alive in its current run, and writers per state.

    The current run of an instance is the one that started last. It counts as expected only
    while it is open (a writer alive, stale or missing): a run whose writers all closed was
    stopped on purpose and expects nobody.
    """
    runs: dict[str, list[Any]] = {}
    for w in report.writers:
        runs.setdefault(w.run_id, []).append(w)
    current: dict[str, str] = {}
    start: dict[str, float] = {}
    for run_id, ws in runs.items():
        start[run_id] = min((w.first_ts for w in ws if w.first_ts is not None), default=0.0)
        inst = ws[0].instance
        if inst not in current or start[run_id] > start[current[inst]]:
            current[inst] = run_id
    out: dict[str, dict[str, int]] = {}
    for inst, run_id in sorted(current.items()):
        ws = runs[run_id]
        is_open = any(w.state in _OPEN_STATES for w in ws)
        out[inst] = {
            "expected": max(w.expected_writers for w in ws) if is_open else 0,
            "alive": sum(1 for w in ws if w.state == "alive"),
        }
        if is_open and start[run_id] > 0:
            out[inst]["start_ts"] = int(start[run_id])
        for state in WRITER_STATES:
            out[inst][state] = sum(
                1 for r in runs.values() for w in r if w.instance == inst and w.state == state
            )
    return out


def _vanished_counts(
    windows: Sequence[WindowReport], vanished: Sequence[VanishedRun]
) -> dict[str, int]:
    """Vanished runs per window: those whose time overlaps it, and every one in ``total`` (the
    counters still hold it, the root no longer does)."""
    return {
        w.name: sum(1 for v in vanished if w.name == "total" or v.overlaps(w.start_ts, w.cutoff_ts))
        for w in windows
    }


def coverage_families(
    gauge: Any, report: Report, vanished: Sequence[VanishedRun] = ()
) -> list[Any]:
    """Coverage: per instance (its own, as report --by instance) and for the whole root (the
    series without ledger_instance)."""
    coverage_labels = [WINDOW_LABEL, LEDGER_INSTANCE_LABEL]
    uncovered = gauge(
        LEDGER_WINDOW_UNCOVERED_SECONDS,
        "Seconds of the window no writer could vouch for",
        labels=coverage_labels,
    )
    wall = gauge(
        LEDGER_WINDOW_WALL_SECONDS,
        "Length of the window in seconds",
        labels=coverage_labels,
    )
    complete = gauge(
        LEDGER_WINDOW_COMPLETE,
        "1 when every second of the window is vouched for and problem-free",
        labels=coverage_labels,
    )
    problems = gauge(
        LEDGER_WINDOW_PROBLEMS,
        "Problem counts per window and code",
        labels=[WINDOW_LABEL, PROBLEM_LABEL, LEDGER_INSTANCE_LABEL],
    )
    scopes = _scopes(report, vanished)
    _add_lost_instances(report, vanished, complete, problems)
    for scope in scopes:
        _add_scope(scope, uncovered, wall, complete, problems)
    return [uncovered, wall, complete, problems]


def _scopes(report: Report, vanished: Sequence[VanishedRun]) -> list[Scope]:
    """The whole root, then each instance of the report's ``--by instance`` rows."""
    scopes: list[Scope] = [(None, report.windows, vanished)]
    rows = report.breakdown if report.breakdown_by == "instance" else ()
    for row in rows:
        scopes.append((row.key, row.windows, [v for v in vanished if row.key in v.instances]))
    return scopes


def _add_lost_instances(
    report: Report, vanished: Sequence[VanishedRun], complete: Any, problems: Any
) -> None:
    """An instance whose every run has gone: only what the counters still hold is known."""
    rows = report.breakdown if report.breakdown_by == "instance" else ()
    for lost in sorted({i for v in vanished for i in v.instances} - {r.key for r in rows}):
        lost_runs = [v for v in vanished if lost in v.instances]
        for w in report.windows:
            n = _vanished_counts([w], lost_runs)[w.name]
            if n:
                complete.add_metric([w.name, lost], 0.0)
                problems.add_metric([w.name, RUN_VANISHED, lost], float(n))


def _add_scope(scope: Scope, uncovered: Any, wall: Any, complete: Any, problems: Any) -> None:
    """One scope's samples of each coverage gauge, window by window."""
    inst, windows, gone_runs = scope
    gone = _vanished_counts(windows, gone_runs)
    for w in windows:
        codes = dict(w.problems)
        if gone[w.name]:
            codes[RUN_VANISHED] = gone[w.name]
        values = (
            (uncovered, float(w.uncovered_seconds)),
            (wall, float(w.wall_seconds)),
            (complete, 1.0 if w.complete and not gone[w.name] else 0.0),
        )
        for fam, v in values:
            if inst is None:
                fam.add_sample(fam.name, {WINDOW_LABEL: w.name}, v)
            else:
                fam.add_metric([w.name, inst], v)
        for code, n in sorted(codes.items()):
            if inst is None:
                problems.add_sample(problems.name, {WINDOW_LABEL: w.name, PROBLEM_LABEL: code}, n)
            else:
                problems.add_metric([w.name, code, inst], float(n))


def writer_families(gauge: Any, report: Report) -> list[Any]:
    """Per instance: writers expected and alive in its current run, writers of every run by
    state, and when its open run started."""
    writers = _writer_gauges(report)
    expected = gauge(
        LEDGER_WRITERS_EXPECTED,
        "Writers the current run of the instance expects (0 once it closed)",
        labels=[LEDGER_INSTANCE_LABEL],
    )
    alive = gauge(
        LEDGER_WRITERS_ALIVE,
        "Writers of the instance's current run now alive",
        labels=[LEDGER_INSTANCE_LABEL],
    )
    by_state = gauge(
        LEDGER_WRITERS,
        "Writers of every run of the instance, by state",
        labels=[LEDGER_INSTANCE_LABEL, STATE_LABEL],
    )
    run_start = gauge(
        LEDGER_RUN_START,
        "When the instance's open run started (unix seconds; none once it closed)",
        labels=[LEDGER_INSTANCE_LABEL],
    )
    for inst, counts in writers.items():
        if "start_ts" in counts:
            run_start.add_metric([inst], float(counts["start_ts"]))
        expected.add_metric([inst], float(counts["expected"]))
        alive.add_metric([inst], float(counts["alive"]))
        for state in WRITER_STATES:
            by_state.add_metric([inst, state], float(counts[state]))
    return [expected, alive, by_state, run_start]
