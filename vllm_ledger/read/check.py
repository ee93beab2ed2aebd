"""An integrity pass over every ledger file: for humans and cron, too slow for every poll.

Per file: ``PRAGMA quick_check`` on a read-only connection, the writer identity, every value,
the sequence marker against the file's last commit (commits the file lost), the hourly and
daily rows against the rows they add up (``snapshot.rollup_mismatches``), and whether the
writer closed cleanly, is alive, or went stale. One verdict line per file.

Then the root as the report sees it: every problem code of the report's ``total`` window that
no file's verdict already names (a writer that never wrote a file, dropped or lost events, an
edge in a compacted hour, ...) is a verdict of its own, so ``check`` passes only where
``total`` has no problem (time nothing was recording, between runs or after the last, is not
a problem: the report shows it as uncovered).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import timezone, tzinfo
from pathlib import Path

from vllm_ledger.format import connect, paths, reads
from vllm_ledger.read import values, writer_state
from vllm_ledger.read.discovery import Unseen, discover
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.open_ledger import describe_never_committed, read_ledger
from vllm_ledger.read.report import build_report
from vllm_ledger.read.snapshot import LedgerSnapshot, RollupMismatch, rollup_mismatches
from vllm_ledger.units import format_instant


@dataclass(frozen=True)
class FileVerdict:
    path: Path
    ok: bool
    # A file's: ok | damaged | unreadable | denied | bad_values | sequence_gap |
    # rollup_mismatch | unclean_exit | stale | busy. The root's (``root=True``): a problem code
    # of the report's total window that no file's verdict names (writer_missing, ...).
    verdict: str
    detail: str
    root: bool = False


# The file verdicts that already name a problem code of the report.
NAMED_BY_FILES: dict[str, frozenset[str]] = {
    "heartbeat_stale": frozenset({"stale", "unclean_exit"}),
    "unclean_exit": frozenset({"stale", "unclean_exit"}),
    "ledger_unreadable": frozenset({"unreadable", "damaged", "denied", "bad_values"}),
    "sequence_gap": frozenset({"sequence_gap"}),
    "rollup_mismatch": frozenset({"rollup_mismatch"}),
    "ledger_busy": frozenset({"busy"}),
    "never_committed": frozenset({"never_committed"}),
}

# What each other problem code of the total window means, for its verdict line.
ROOT_PROBLEMS: dict[str, str] = {
    "queue_overflow": "event(s) dropped: the plugin's buffer was full (docs/faults.md)",
    "rejected_input": "event(s) vLLM handed over that the plugin could not read (docs/faults.md)",
    "write_failed": "event(s) lost: a batch could not be committed (docs/faults.md)",
    "imprecise_edge": "window edge(s) in an hour compaction folded (docs/ledger.md)",
    "no_ledger": "nothing under the roots (docs/ledger.md)",
}


def _rollups(path: Path, busy_timeout_s: float, snap: LedgerSnapshot) -> list[RollupMismatch]:
    conn, _head, _stamp = connect.connect_read_only(path, busy_timeout_s)
    try:
        return rollup_mismatches(conn, snap.compacted_before_ts, snap.has_daily)
    finally:
        conn.close()


def describe_rollup(m: RollupMismatch, tz: tzinfo = timezone.utc) -> str:
    """One disagreement in words: the table, the hour (day), the engine and the figures."""
    finer = "seconds" if m.table == "hourly" else "hours"
    where = f"{m.table} row {format_instant(m.start_ts, tz)} engine {m.engine}"
    if m.stored is None:
        held = ", ".join(f"{k} {v}" for k, _s, v in m.differing())
        return f"no {where}, its {finer} hold {held}"
    figs = ", ".join(f"{k} {s} (its {finer}: {v})" for k, s, v in m.differing())
    return f"{where}: {figs}"


def _bad_values(path: Path, busy_timeout_s: float) -> str | None:
    """Every row of every table judged as a report would judge it (a report checks only the
    rows it adds: edge seconds, hours, days). None when all pass."""
    conn, _head, _stamp = connect.connect_read_only(path, busy_timeout_s)
    try:
        tables = reads.read_facts(conn).tables
        for table in ("buckets", "hourly", "daily"):
            if table in tables:
                for row in reads.sum_by_engine(conn, table, -(2**62), 2**62):
                    values.check_sum_row(table, row)
    except values.BadValues as exc:
        return str(exc)
    except sqlite3.OperationalError as exc:
        if "integer overflow" in str(exc):
            return f"counts overflow a 64-bit sum ({exc})"
        raise
    finally:
        conn.close()
    return None


def check_file(
    path: Path,
    now_ts: float,
    busy_timeout_s: float = 2.0,
    *,
    snap: LedgerSnapshot | None = None,
    latest_run: bool = True,
    tz: tzinfo = timezone.utc,
) -> FileVerdict:
    """One file's verdict. ``snap``: its snapshot if already read; ``latest_run``: whether its
    run is its instance's newest (a silent writer of an older run was replaced: it crashed);
    ``tz``: the zone the times it names are written in."""
    try:  # never open a FIFO, socket or device named like a ledger
        if not stat.S_ISREG(os.stat(path).st_mode):
            return FileVerdict(path, False, "unreadable", "not a regular file")
    except OSError as exc:
        return FileVerdict(path, False, "unreadable", str(exc))
    # A file a writer created and has not committed to yet: moments old, a writer starting;
    # older, a writer that never could (its marker, had it committed, would make it damage).
    if snap is None:
        snap = read_ledger(path, now_ts=now_ts, busy_timeout_s=busy_timeout_s)
    if snap.status == "starting":
        return FileVerdict(path, True, "ok", "starting: created moments ago, no commit yet")
    if snap.status == "never_committed":
        return FileVerdict(path, False, "never_committed", describe_never_committed(snap, tz))
    # The file's own header first: quick_check alone passes when page 1 comes from the -wal.
    damage = connect.file_damage(path, expect_wal=False)
    if damage is not None:
        return FileVerdict(path, False, "damaged", damage)
    qc = connect.quick_check(path, busy_timeout_s)
    if qc != "ok":
        kind = "busy" if "locked" in qc else "damaged"
        return FileVerdict(path, False, kind, f"quick_check: {qc}")
    if not snap.ok:
        return FileVerdict(path, False, "unreadable", f"{snap.status}: {snap.detail}")
    who = f"run {snap.run_id} writer {snap.writer_rank} gen {snap.generation}"
    bad = _bad_values(path, busy_timeout_s)
    if bad is not None:
        return FileVerdict(path, False, "bad_values", f"{who}: {bad}")
    rollups = _rollups(path, busy_timeout_s, snap)
    if rollups:
        more = f" (and {len(rollups) - 1} more)" if len(rollups) > 1 else ""
        return FileVerdict(
            path,
            False,
            "rollup_mismatch",
            f"{who}: {describe_rollup(rollups[0], tz)}{more}: a rollup row changed or lost since "
            "it was written; the report calls no window over it complete (docs/ledger.md)",
        )
    if snap.missing_commits:
        return FileVerdict(
            path,
            False,
            "sequence_gap",
            f"{who}: {snap.missing_commits} committed batch(es) missing after seq {snap.last_seq}",
        )
    return _state_verdict(path, snap, now_ts, latest_run, who)


def _state_verdict(
    path: Path, snap: LedgerSnapshot, now_ts: float, latest_run: bool, who: str
) -> FileVerdict:
    """A sound file's verdict by its writer's state: closed or alive is ok; silent past the
    stale limit and not yet finished is stale; any other is an unclean exit."""
    last = snap.last_proof_ts
    state = writer_state.writer_state(
        clean_close_ts=snap.clean_close_ts, last_proof_ts=last, at_ts=now_ts, latest_run=latest_run
    )
    if state == "closed":
        return FileVerdict(path, True, "ok", f"{who}: closed cleanly, seq {snap.last_seq}")
    if state == "alive":
        return FileVerdict(path, True, "ok", f"{who}: alive, seq {snap.last_seq}")
    age = "never" if last is None else f"{now_ts - last:.0f} s ago"
    if state == "stale" and not writer_state.finished(
        clean_close_ts=None, last_proof_ts=last, at_ts=now_ts
    ):
        # Silent past the stale limit, not yet long enough to call it gone: frozen, wedged,
        # failing to commit, or dead (its next run's start, or an hour, will tell).
        return FileVerdict(
            path,
            False,
            "stale",
            f"{who}: no clean close, last heartbeat {age}: frozen, failing to write, or exited "
            "uncleanly (an hour of silence makes it unclean_exit)",
        )
    return FileVerdict(
        path,
        False,
        "unclean_exit",
        f"{who}: no clean close, last heartbeat {age} (its unflushed tail is lost)",
    )


def check(
    roots: Sequence[Path], clock: Callable[[], float] = time.time, tz: tzinfo = timezone.utc
) -> list[FileVerdict]:
    now = clock()
    unseen: list[Unseen] = []
    found = [f.path for f in discover(roots, unseen)]
    snaps = {p: read_ledger(p, now_ts=now) for p in found if _regular(p)}
    latest = _latest_runs(list(snaps.values()))
    verdicts = [
        check_file(
            p,
            now,
            snap=snaps.get(p),
            latest_run=p not in snaps or snaps[p].run_id in latest,
            tz=tz,
        )
        for p in found
    ]
    for u in unseen:  # a folder it cannot list may hide ledgers: never "all sound"
        kind = "denied" if isinstance(u.error, PermissionError) else "unreadable"
        what = "cannot read" if paths.parse_ledger_name(u.path.name) else "cannot list"
        verdicts.append(FileVerdict(u.path, False, kind, f"{what}: {u.error.strerror}"))
    if verdicts:
        verdicts += root_verdicts(roots, now, verdicts)
    return verdicts


def root_verdicts(
    roots: Sequence[Path], now_ts: float, verdicts: Sequence[FileVerdict]
) -> list[FileVerdict]:
    """Each problem of the report's ``total`` window (as ``report`` builds it at ``now_ts``)
    that no failed file verdict names: a writer with no file at all, dropped or lost events,
    an edge in a compacted hour."""
    with LedgerSet.read(roots, clock=lambda: now_ts) as ls:
        report = build_report(ls, at_ts=now_ts, periods=("total",))
        run_dirs = {s.run_id: s.path.parent for s in ls.snapshots if s.run_id}
    failed = [v for v in verdicts if not v.ok]
    kinds = {v.verdict for v in failed}
    failed_writers = {
        (v.path.parent.name, named[0])
        for v in failed
        if (named := paths.parse_ledger_name(v.path.name)) is not None
    }
    where = Path(", ".join(str(r) for r in roots))
    out: list[FileVerdict] = []
    for code, n in report.window("total").problems.items():
        if code == "writer_missing":
            for wr in report.writers:
                if wr.state == "missing" and (wr.run_id, wr.writer_rank) not in failed_writers:
                    out.append(
                        FileVerdict(
                            run_dirs.get(wr.run_id, where),
                            False,
                            "writer_missing",
                            f"run {wr.run_id} writer {wr.writer_rank} of {wr.expected_writers}:"
                            " no ledger file (its API process never wrote one, or it was "
                            "removed): the run's time is uncovered (docs/faults.md)",
                            root=True,
                        )
                    )
            continue
        if kinds & NAMED_BY_FILES.get(code, frozenset()):
            continue
        what = ROOT_PROBLEMS.get(code, "a problem the report names (docs/json-schema.md)")
        out.append(FileVerdict(where, False, code, f"total window: {n} {what}", root=True))
    return out


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _latest_runs(snaps: Sequence[LedgerSnapshot]) -> set[str]:
    """The newest run of each instance (by its first proof), as the report's coverage sees it:
    a silent writer of any other run was replaced by a later launch."""
    newest: dict[str, tuple[float, str]] = {}
    for s in snaps:
        if not s.ok or not s.spans:
            continue
        start = min(a for a, _b in s.spans)
        key = s.instance.key
        cur = newest.get(key)
        if cur is None or (start, s.run_id) > cur:
            newest[key] = (start, s.run_id)
    runs = {run for _start, run in newest.values()}
    # A run none of whose files has a proof yet is as new as can be.
    runs |= {s.run_id for s in snaps if s.ok and not s.spans}
    return runs
