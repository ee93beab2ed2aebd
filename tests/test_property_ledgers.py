"""Property: a window the report calls complete is exact, whatever the events and the damage.

For random event streams written through the real ``Recorder`` (its real store, on a fake
clock) and random damage done to the files afterwards (impossible values written with
``sqlite3``, broken spans and meta, truncation, a zeroed header, a FIFO in a file's place, a
deleted file, and, as root with ``setpriv``, folders and files only another user may not
read), every figure of every window is checked against the independent sum of the events whose
second falls in that window (windows worked out here from their definition: today from local
midnight, 24 h / 72 h / 168 h rolling, total since the first record, all up to the start of the
query's second):

- no figure is negative or above that sum (nothing invented);
- a window called complete equals it, figure by figure (nothing unknown passes as known);
- a window holding events of a damaged file the report could not read is not complete, and
  the file (or the folder hiding it) is named;
- the readers leave every file byte-identical and every mode as it was.

The main property uses writers that closed cleanly or were abandoned more than an hour before
the query, so that it does not depend on how a live writer's recent seconds are vouched for; a
smaller property covers live writers with the two assertions that hold under any design.

A bug of the reader this property found (a run none of whose files could be read was bounded
by whatever vouched next, and `total` started at the first readable record) is fixed; its two
shrunk examples stay as tests at the end. ``TOLERATE_LOST_RUNS`` stays False.

Profiles (``tests/conftest.py``): ``ci`` (the default; fixed seed) and ``fuzz``
(``make fuzz``: many more examples, a random seed).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from hypothesis import event, example, given
from hypothesis import strategies as st

from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.read.report import build_report
from vllm_ledger.write.iteration import IterationEvent
from vllm_ledger.write.recorder import Recorder

REPO = Path(__file__).resolve().parent.parent
AT_BASE = 1_796_000_000  # 2026-11-30 00:53:20 UTC; each example shifts it by up to a day
NOBODY = 65534
# Reading as another user needs root (to make that user) and setpriv, as in test_hostile_root.
AS_OTHER_USER = os.geteuid() == 0 and shutil.which("setpriv") is not None
# The writers below commit at their events and at their ends, not every 5 s: a span must not
# break between two commits, as it never does under the production 5 s heartbeat.
NO_SPAN_BREAK_S = 30 * 86_400.0
# Each example writes a few fresh SQLite files; on tmpfs their fsyncs cost nothing (on this
# machine's disk they made the run four times slower). Any other directory works the same.
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK | os.X_OK) else None
FIGURES = ("input_tokens", "output_tokens", "cached_tokens", "requests", "decode_tokens")


# ---- what happened: the plan of runs, writers and events ------------------------------------


@dataclass(frozen=True)
class Event:
    offset_ms: int  # after its run's start
    engine: int
    prompt: int
    generation: int
    cached: int  # <= prompt
    finished: tuple[tuple[int, int], ...]  # (generation tokens, decode microseconds)


@dataclass(frozen=True)
class WriterPlan:
    events: tuple[Event, ...]
    closed: bool  # False: abandoned (connection dropped, no clean close), as a killed process


@dataclass(frozen=True)
class RunPlan:
    port: int  # the instance (host:port)
    duration_s: int
    after: str  # where it starts: "end" of the previous run, a "gap" after it, or "overlap"
    writers: tuple[WriterPlan, ...]
    missing_writers: int  # expected writers that never came up


@dataclass(frozen=True)
class Damage:
    target: int  # a writer's file, by index (modulo the number of files)
    kind: str
    param: int


@dataclass(frozen=True)
class Written:
    """One writer's file and what went into it, in absolute time."""

    path: Path
    run_dir: Path
    events: tuple[tuple[float, Event], ...]  # (event ts, event)


# ---- strategies -------------------------------------------------------------------------------


@st.composite
def events(draw: st.DrawFn, duration_s: int) -> Event:
    big = draw(st.booleans()) and draw(st.booleans()) and draw(st.booleans())  # 1 in 8
    most = 60_000_000 if big else 5_000  # two big ones in one second pass the 10^8 bound
    prompt = draw(st.integers(0, most))
    return Event(
        # A percent of the run, then a point in it: a plain integer in so wide a range would
        # come out near 0 far more often than not.
        offset_ms=draw(st.integers(0, 99)) * duration_s * 10
        + draw(st.integers(0, duration_s * 10 - 1)),
        engine=draw(st.integers(0, 1)),
        prompt=prompt,
        generation=draw(st.integers(0, most)),
        cached=draw(st.integers(0, prompt)),
        finished=tuple(
            draw(st.lists(st.tuples(st.integers(0, 2_000), st.integers(0, 30_000_000)), max_size=2))
        ),
    )


DURATIONS_S = (2, 30, 600, 7_200, 90_000, 300_000, 700_000)


@st.composite
def runs(draw: st.DrawFn) -> RunPlan:
    duration = draw(st.sampled_from(DURATIONS_S))
    n_writers = draw(st.integers(1, 3))
    writers = tuple(
        WriterPlan(
            events=tuple(draw(st.lists(events(duration), max_size=6))),
            closed=draw(st.sampled_from([True, True, True, True, True, False])),
        )
        for _ in range(n_writers)
    )
    return RunPlan(
        port=draw(st.sampled_from([8000, 8001])),
        duration_s=duration,
        after=draw(st.sampled_from(["end", "overlap", "end", "overlap", "gap"])),
        writers=writers,
        missing_writers=draw(st.sampled_from([0] * 9 + [1])),
    )


VALUE_KINDS = ("negative", "text", "blob", "int64_max", "cached_over_input")
FACT_KINDS = ("nan_span_start", "span_ends_before_start", "huge_expected_writers")
FILE_KINDS = ("truncate", "zero_header", "fifo", "delete")
PERMISSION_KINDS = ("file_000", "run_0700", "run_000")
DAMAGE_KINDS = VALUE_KINDS + FACT_KINDS + FILE_KINDS + (PERMISSION_KINDS if AS_OTHER_USER else ())
ORDER = {k: i for i, k in enumerate(VALUE_KINDS + FACT_KINDS + FILE_KINDS + PERMISSION_KINDS)}
TRUNCATE_TO = (0, 50, 99, 100, 1024, 4096, -1)  # -1: half the file


@st.composite
def damage_lists(draw: st.DrawFn) -> tuple[Damage, ...]:
    """Up to three damages of different kinds (a shuffle, so that every kind comes up about as
    often: Hypothesis draws early elements of a ``sampled_from`` more often)."""
    kinds = draw(st.permutations(DAMAGE_KINDS))
    return tuple(
        Damage(target=draw(st.integers(0, 8)), kind=kind, param=draw(st.integers(0, 1000)))
        for kind in kinds[: draw(st.integers(0, 3))]
    )


@dataclass(frozen=True)
class Scenario:
    runs: tuple[RunPlan, ...]
    shift_s: int  # moves the whole story (and "today"'s midnight) by up to a day
    tail_s: float  # from the end of the last run to the query
    start_fraction: float  # of the first run's start second
    tz: str
    damage: tuple[Damage, ...]


scenarios = st.builds(
    Scenario,
    runs=st.lists(runs(), min_size=1, max_size=3).map(tuple),
    shift_s=st.integers(0, 86_399),
    tail_s=st.sampled_from([0.0, 0.5, 1.0, 1.75, 0.0, 20.0, 4_000.0]),
    start_fraction=st.sampled_from([0.0, 0.0, 0.5]),
    tz=st.sampled_from(["UTC", "Asia/Shanghai"]),
    damage=damage_lists(),
)


# ---- writing: the real recorder on a fake clock -----------------------------------------------


class FakeClock:
    def __init__(self, t: float) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def _as_iteration_event(ts: float, e: Event) -> IterationEvent:
    finished = tuple((g, us / 1e6) for g, us in e.finished)
    return (ts, e.engine, e.prompt, e.generation, e.cached, finished)


def write_writer(
    root: Path,
    ident: WriterIdentity,
    start_ts: float,
    end_ts: float,
    stamped: Sequence[tuple[float, Event]],
    *,
    closed: bool,
) -> tuple[Written, Recorder]:
    """Run one writer from ``start_ts`` to ``end_ts``: a commit opens its span, every event is
    committed at most 0.9 s after its stamp (never after the end), and the last commit at the
    end closes it cleanly or not. The caller abandons an unclosed writer (drops its connection
    without a clean close, as a killed process would) when it likes."""
    clock = FakeClock(start_ts)
    rec = Recorder(root, ident, clock=clock, span_break_s=NO_SPAN_BREAK_S)
    rec.pump()  # the first heartbeat opens the span
    for i, (ts, e) in enumerate(sorted(stamped, key=lambda x: x[0])):
        clock.t = max(clock.t, min(end_ts, ts + (i % 10) / 10 * 0.9))
        rec.submit(_as_iteration_event(ts, e))
        assert rec.pump()
    clock.t = end_ts
    assert rec.pump(final=closed)
    assert rec.path is not None and rec.dropped_total == 0 and rec.lost_events_total == 0
    return Written(rec.path, rec.path.parent, tuple(stamped)), rec


def _identity(run_id: str, rank: int, expected: int, port: int) -> WriterIdentity:
    instance = InstanceInfo(("tiny",), port, "testhost", "0.32.0")
    return WriterIdentity(run_id, rank, expected, (0, 1), 1000 + rank, instance)


def _run_id(start_ts: float, i: int) -> str:
    return f"{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(start_ts))}-testhost-{i}"


def write_scenario(root: Path, sc: Scenario) -> tuple[float, list[Written]]:
    """Write every run of ``sc``; returns the query instant and the files written."""
    # Lay the runs out from 0, then move the story so that the query lands at AT_BASE + shift.
    placed: list[tuple[float, float]] = []
    t = sc.start_fraction
    for i, run in enumerate(sc.runs):
        if i:
            prev_start, prev_end = placed[-1]
            t = {
                "end": prev_end,
                "gap": prev_end + 900,
                "overlap": prev_start + (prev_end - prev_start) // 2,
            }[run.after]
        placed.append((t, t + run.duration_s))
    last_end = max(end for _start, end in placed)
    at = float(AT_BASE + sc.shift_s)
    move = at - sc.tail_s - last_end
    written: list[Written] = []
    for i, (run, (start, end)) in enumerate(zip(sc.runs, placed, strict=True)):
        start, end = start + move, end + move
        expected = len(run.writers) + run.missing_writers
        for rank, wp in enumerate(run.writers):
            ident = _identity(_run_id(start, i), rank, expected, run.port)
            # Abandoned writers only where they went silent more than an hour before the query
            # (finished, stale or crashed under any design of live coverage).
            closed = wp.closed or end > at - 3_600 - 1
            stamped = [(start + e.offset_ms / 1000, e) for e in wp.events]
            w, rec = write_writer(root, ident, start, end, stamped, closed=closed)
            rec.abandon()  # a no-op after a clean close
            written.append(w)
    return at, written


# ---- damage -----------------------------------------------------------------------------------


@dataclass
class Applied:
    kind: str
    files: tuple[Path, ...]  # the ledger files it may hide
    named: Path  # the path the report must name (a file or a run folder)
    must_refuse: bool  # the reader can always see it (False: it may miss the damaged part)


def _first_row(conn: sqlite3.Connection, param: int) -> tuple[int, int] | None:
    rows = conn.execute("SELECT ts, engine FROM buckets ORDER BY ts, engine").fetchall()
    return None if not rows else rows[param % len(rows)]


_VALUE_SQL = {  # each takes the damage's parameter (a number from 0 to 1000)
    "negative": "generation_tokens = -1 - ?",  # not input: cached > input would catch that
    "text": "generation_tokens = 'lots' || ?",
    "blob": "cached_tokens = CAST(zeroblob(1 + ? % 8) AS BLOB)",
    "int64_max": "prompt_tokens = 9223372036854775807 - ? % 2",
    "cached_over_input": "cached_tokens = prompt_tokens + 1 + ?",
}


def _edit(path: Path, damage: Damage) -> bool:
    """Write one impossible value with sqlite3; False when the file has nothing to damage."""
    kind, param = damage.kind, damage.param
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        if kind in _VALUE_SQL:
            row = _first_row(conn, param)
            if row is None:
                conn.execute("ROLLBACK")
                return False
            ts, engine = row
            # The same second, hour and day: whichever a window reads holds the bad value.
            for table, size in (("buckets", 1), ("hourly", 3600), ("daily", 86400)):
                conn.execute(
                    f"UPDATE {table} SET {_VALUE_SQL[kind]} WHERE ts = ? AND engine = ?",
                    (param, ts - ts % size, engine),
                )
        elif kind == "nan_span_start":
            conn.execute("UPDATE spans SET start_ts = 'nan' WHERE id = (SELECT min(id) FROM spans)")
        elif kind == "span_ends_before_start":
            conn.execute(
                "UPDATE spans SET end_ts = start_ts - 1 - ? WHERE id = (SELECT max(id) FROM spans)",
                (param % 100,),
            )
        elif kind == "huge_expected_writers":
            conn.execute(
                "UPDATE meta SET value = ? WHERE key = 'expected_writers'", (str(10**9 + param),)
            )
        conn.execute("COMMIT")
    finally:
        conn.close()
    return True


def apply_damage(written: Sequence[Written], damage: Sequence[Damage]) -> list[Applied]:
    """Damage the files (values first, then file types, then permissions); what was done, one
    entry per file or run folder, the last damage to a file deciding what a reader can see."""
    on_file: dict[Path, Applied] = {}
    on_run: dict[Path, Applied] = {}
    for d in sorted(damage, key=lambda d: ORDER[d.kind]):
        w = written[d.target % len(written)]
        path, kind = w.path, d.kind
        regular = path.is_file() and not path.is_symlink()
        prior = on_file.get(path)
        was_refused = prior is not None and prior.must_refuse
        done: Applied | None = None
        if kind in VALUE_KINDS or kind in FACT_KINDS:
            if regular and path.stat().st_size >= 100 and _edit(path, d):
                done = Applied(kind, (path,), path, True)
        elif kind == "truncate":
            if regular:
                size = path.stat().st_size
                to = size // 2 if TRUNCATE_TO[d.param % 7] < 0 else TRUNCATE_TO[d.param % 7]
                os.truncate(path, min(size, to))
                done = Applied(kind, (path,), path, was_refused or to < 100)
        elif kind == "zero_header":
            if regular and path.stat().st_size >= 100:
                with open(path, "r+b") as f:
                    f.write(b"\0" * 100)
                done = Applied(kind, (path,), path, True)
        elif kind == "fifo":
            if os.path.lexists(path):
                path.unlink()
                os.mkfifo(path)
                done = Applied(kind, (path,), path, True)
        elif kind == "delete":
            if os.path.lexists(path):
                path.unlink()  # its .seq marker stays, as after an `rm` of the ledger
                done = Applied(kind, (path,), path, False)
        elif kind == "file_000":
            if os.path.lexists(path):
                path.chmod(0o000)
                done = Applied(kind, (path,), path, True)
        elif kind in ("run_0700", "run_000"):
            w.run_dir.chmod(0o700 if kind == "run_0700" else 0o000)
            hidden = tuple(x.path for x in written if x.run_dir == w.run_dir)
            on_run[w.run_dir] = Applied(kind, hidden, w.run_dir, True)
        if done is not None:
            on_file[path] = done
    for path, a in on_file.items():
        if path.parent in on_run:  # the folder is named instead of the files it hides
            a.must_refuse = False
    return [*on_file.values(), *on_run.values()]


def tree_state(root: Path) -> dict[str, tuple[int, str]]:
    """Every entry under ``root`` with its mode and, for a regular file, its sha256 (as root:
    nothing here opens a FIFO)."""
    out: dict[str, tuple[int, str]] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st_ = os.lstat(p)
            digest = ""
            if stat.S_ISREG(st_.st_mode):
                with open(p, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            out[os.path.relpath(p, root)] = (st_.st_mode, digest)
    return out


# ---- reading ----------------------------------------------------------------------------------

_REPORT_AS_JSON = """
import dataclasses, json, sys
from pathlib import Path
from vllm_ledger.read.report import build_report
at = float(sys.argv[2])
r = build_report([Path(sys.argv[1])], at_ts=at, clock=lambda: at, tz=sys.argv[3])
print(json.dumps({"windows": [dataclasses.asdict(w) for w in r.windows],
                  "files": [dataclasses.asdict(f) for f in r.files]}))
"""


def report_dict(root: Path, at: float, tz: str, as_nobody: bool) -> dict[str, Any]:
    """The report's windows and named files, read in this process or as uid 65534."""
    if not as_nobody:
        r = build_report([root], at_ts=at, clock=lambda: at, tz=tz)
        return {
            "windows": [dataclasses.asdict(w) for w in r.windows],
            "files": [dataclasses.asdict(f) for f in r.files],
        }
    ids = [f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    out = subprocess.run(
        ["setpriv", *ids, sys.executable, "-c", _REPORT_AS_JSON, str(root), repr(at), tz],
        capture_output=True,
        text=True,
        timeout=120,
        cwd="/",
        env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


# ---- the independent expectation ---------------------------------------------------------------


def expected_windows(at: float, tz: str) -> dict[str, tuple[int, int]]:
    """The four fixed windows from their definition (docs/ledger.md): up to the start of the query's
    second; today from local midnight; 24 h, 72 h, 168 h rolling."""
    cutoff = math.floor(at)
    local = datetime.fromtimestamp(cutoff, ZoneInfo(tz))
    midnight = int(local.replace(hour=0, minute=0, second=0, microsecond=0).timestamp())
    out = {"today": (midnight, cutoff)}
    out.update({n: (cutoff - h * 3600, cutoff) for n, h in (("24h", 24), ("3d", 72), ("7d", 168))})
    return out


def figures_of(stamped: Iterator[tuple[float, Event]], start: int, end: int) -> dict[str, int]:
    """What the events stamped in seconds ``[start, end)`` add up to (decode time in whole
    microseconds, so that sums and differences stay exact)."""
    sums = dict.fromkeys((*FIGURES, "decode_us"), 0)
    for ts, e in stamped:
        if start <= math.floor(ts) < end:
            sums["input_tokens"] += e.prompt
            sums["output_tokens"] += e.generation
            sums["cached_tokens"] += e.cached
            sums["requests"] += len(e.finished)
            sums["decode_tokens"] += sum(max(g - 1, 0) for g, _us in e.finished)
            sums["decode_us"] += sum(us for _g, us in e.finished)
    return sums


def all_events(written: Sequence[Written]) -> Iterator[tuple[float, Event]]:
    for w in written:
        yield from w.events


def assert_honest(w: dict[str, Any], truth: dict[str, int]) -> None:
    """Nothing invented; complete means exact."""
    expect = {**{k: truth[k] for k in FIGURES}, "decode_seconds": truth["decode_us"] / 1e6}
    for name, value in expect.items():
        assert 0 <= w[name] <= value, (w["name"], name, w[name], value, w)
    if w["complete"]:
        assert {k: w[k] for k in expect} == expect, (w["name"], w, expect)


# ---- the properties -----------------------------------------------------------------------------


# The known bug's two minimal examples (below): a run whose only file is refused, followed by
# a run of the same instance, and one overlapped by another instance.
LOST_RUN_EARLIER = Scenario(
    runs=(
        RunPlan(8000, 2, "end", (WriterPlan((Event(0, 0, 0, 1, 0, ()),), True),), 0),
        RunPlan(8000, 2, "end", (WriterPlan((), True),), 0),
    ),
    shift_s=0,
    tail_s=0.0,
    start_fraction=0.0,
    tz="UTC",
    damage=(Damage(0, "negative", 0),),
)
LOST_RUN_UNDER_ANOTHER_INSTANCE = Scenario(
    runs=(
        RunPlan(8000, 600, "end", (WriterPlan((Event(400_000, 0, 10, 5, 0, ()),), True),), 0),
        RunPlan(8001, 600, "overlap", (WriterPlan((), True),), 0),
    ),
    shift_s=0,
    tail_s=0.0,
    start_fraction=0.0,
    tz="UTC",
    damage=(Damage(0, "negative", 0),),
)


# Found by `make fuzz` in this test's own arithmetic (decode time summed as floats): the lost
# run's 1 us taken from 3 us in floating point is not 2 us.
_Z = Event(0, 0, 0, 0, 0, ())
DECODE_MICROSECONDS = dataclasses.replace(
    LOST_RUN_EARLIER,
    runs=(
        RunPlan(8000, 2, "end", (WriterPlan((_Z, Event(0, 0, 0, 0, 0, ((0, 1),))), True),), 0),
        RunPlan(8000, 2, "end", (WriterPlan((_Z, Event(0, 0, 0, 0, 0, ((0, 2),))), True),), 0),
    ),
)


# A bug this property found (the two tests at the end): where *every* file of a run
# was refused, deleted or hidden, the reader bounded the time those files may hide by the next
# instant anything vouched for (a later run, another instance), and "total" started at the
# first record it could read. Fixed: a refused file's time ends only at its own instance's next
# launch or its writer's next generation, `total` reaches back over its run, and a marker whose
# ledger is gone is named. Kept as a switch (False: the property tolerates no shortfall).
TOLERATE_LOST_RUNS = False


def lost_runs(
    written: Sequence[Written], applied: Sequence[Applied], named: set[Path]
) -> set[Path]:
    """Run folders none of whose files the reader could read."""
    unread = set(named)
    for a in applied:
        if a.kind == "delete" or a.named in named:
            unread.update(a.files)
    runs_: dict[Path, list[Path]] = {}
    for w in written:
        runs_.setdefault(w.run_dir, []).append(w.path)
    return {d for d, files in runs_.items() if all(f in unread for f in files)}


@given(sc=scenarios)
@example(sc=LOST_RUN_EARLIER)
@example(sc=DECODE_MICROSECONDS)
@example(sc=LOST_RUN_UNDER_ANOTHER_INSTANCE)
@example(sc=dataclasses.replace(LOST_RUN_UNDER_ANOTHER_INSTANCE, damage=(Damage(0, "delete", 0),)))
def test_a_complete_window_is_exact_and_no_figure_exceeds_the_events(sc: Scenario) -> None:
    base = Path(tempfile.mkdtemp(prefix="ledger-property-", dir=SCRATCH))
    try:
        base.chmod(0o755)  # uid 65534 reads below it where the damage asks for that user
        root = base / "ledger"
        at, written = write_scenario(root, sc)
        applied = apply_damage(written, sc.damage)
        before = tree_state(root)
        as_nobody = any(a.kind in PERMISSION_KINDS for a in applied)
        doc = report_dict(root, at, sc.tz, as_nobody)
        assert tree_state(root) == before  # readers wrote nothing, changed no mode

        named = {Path(f["path"]) for f in doc["files"]}
        lost = lost_runs(written, applied, named)
        lost_events = [ev for w in written if w.run_dir in lost for ev in w.events]
        cutoff = math.floor(at)
        fixed = expected_windows(at, sc.tz)
        windows = {w["name"]: w for w in doc["windows"]}
        assert list(windows) == ["today", "24h", "3d", "7d", "total"]
        for name, w in windows.items():
            if name == "total":
                # Since the first record: no figure above what its own seconds hold, and
                # complete means every event before the cutoff.
                assert w["cutoff_ts"] == cutoff and w["start_ts"] <= cutoff, w
                starts = [w["start_ts"], 0]
            else:
                assert (w["start_ts"], w["cutoff_ts"]) == fixed[name], (name, w)
                starts = [fixed[name][0]]
            for start in starts:
                truth = figures_of(all_events(written), start, cutoff)
                missed = figures_of(iter(lost_events), start, cutoff)
                if w["complete"] and TOLERATE_LOST_RUNS and any(missed.values()):
                    event(f"known bug: {name} complete without a lost run's events")
                    truth = {k: v - missed[k] for k, v in truth.items()}
                assert_honest(w, truth)

        # What the examples covered (shown by --hypothesis-show-statistics).
        event("complete: " + (" ".join(n for n, w in windows.items() if w["complete"]) or "none"))
        for a in applied:
            event(f"damage: {a.kind}" + (" (refused)" if a.named in named else ""))
        event(f"read as uid {NOBODY if as_nobody else os.geteuid()}")
        if named and any(w["complete"] for w in windows.values()):
            event("a file named and a window complete")

        by_path = {x.path: x for x in written}
        for a in applied:
            if a.must_refuse:
                assert a.named in named, (a, doc["files"])
            if a.named not in named and a.kind != "delete":
                continue  # read in full after all (a cut that missed every page it reads)
            for path in a.files:
                if TOLERATE_LOST_RUNS and path.parent in lost:
                    continue  # the known bug above
                for w in windows.values():
                    if any(
                        w["start_ts"] <= math.floor(ts) < w["cutoff_ts"]
                        for ts, _e in by_path[path].events
                    ):
                        assert not w["complete"], (a, w)
    finally:
        for dirpath, dirnames, _files in os.walk(base):
            for name in dirnames:
                os.chmod(os.path.join(dirpath, name), 0o755)
        shutil.rmtree(base)


@dataclass(frozen=True)
class LiveScenario:
    duration_s: int
    writers: tuple[tuple[tuple[Event, ...], float, tuple[Event, ...]], ...]
    # per writer: events committed, how long before the run's end it last committed, and events
    # stamped from a second before that commit on and still in its queue at the query
    tail_s: float  # from the end of the run to the query: at most 30 s, so the writers are alive
    shift_s: int


@st.composite
def live_scenarios(draw: st.DrawFn) -> LiveScenario:
    duration = draw(st.sampled_from([2, 30, 600, 90_000]))
    writers = tuple(
        (
            tuple(draw(st.lists(events(duration), max_size=5))),
            draw(st.sampled_from([0.0, 0.5, 3.0, 12.0])),
            tuple(draw(st.lists(events(1), max_size=3))),
        )
        for _ in range(draw(st.integers(1, 2)))
    )
    return LiveScenario(
        duration_s=duration,
        writers=writers,
        tail_s=draw(st.sampled_from([0.0, 0.3, 1.0, 5.0, 17.5])),
        shift_s=draw(st.integers(0, 86_399)),
    )


@given(sc=live_scenarios())
def test_a_live_report_never_calls_complete_a_window_missing_queued_events(
    sc: LiveScenario,
) -> None:
    """Writers alive at the query (last commit under 30 s before it), some events stamped up to
    a second before their last commit still queued: whatever the design of live coverage (a
    cutoff at the watermark, or seconds left uncovered), nothing is invented and a complete
    window holds every event of its seconds, the queued ones included."""
    base = Path(tempfile.mkdtemp(prefix="ledger-property-live-", dir=SCRATCH))
    recorders: list[Recorder] = []
    try:
        root = base / "ledger"
        at = float(AT_BASE + sc.shift_s)
        end = at - sc.tail_s
        start = end - sc.duration_s
        stamped_all: list[tuple[float, Event]] = []
        for rank, (committed, early_s, queued) in enumerate(sc.writers):
            last = max(start, end - early_s)
            stamped = [
                (start + e.offset_ms / 1000 * (last - start) / sc.duration_s, e) for e in committed
            ]
            w, rec = write_writer(
                root,
                _identity(_run_id(start, 0), rank, len(sc.writers), 8000),
                start,
                last,
                stamped,
                closed=False,
            )
            recorders.append(rec)
            # Stamped in [last - 1 s, at]: may have been on their way to the queue at the commit.
            late = [(last - 1 + e.offset_ms / 1000 * (at - last + 1) * 0.999, e) for e in queued]
            for ts, e in late:
                assert rec.submit(_as_iteration_event(ts, e))
            stamped_all += [*w.events, *late]
        before = tree_state(root)
        doc = report_dict(root, at, "UTC", as_nobody=False)
        windows = {w["name"]: w for w in doc["windows"]}
        assert list(windows) == ["today", "24h", "3d", "7d", "total"]
        event("complete: " + (" ".join(n for n, w in windows.items() if w["complete"]) or "none"))
        for w in windows.values():
            assert w["start_ts"] <= w["cutoff_ts"] <= math.floor(at), w
            assert_honest(w, figures_of(iter(stamped_all), w["start_ts"], w["cutoff_ts"]))
        # A live file is read through the writer's -wal; the reader adds nothing beside it.
        assert set(tree_state(root)) == set(before)
    finally:
        for rec in recorders:
            rec.abandon()
        shutil.rmtree(base)


def _report_after(sc: Scenario) -> tuple[list[Written], dict[str, Any]]:
    base = Path(tempfile.mkdtemp(prefix="ledger-property-known-", dir=SCRATCH))
    try:
        at, written = write_scenario(base / "ledger", sc)
        assert [a.kind for a in apply_damage(written, sc.damage)] == [d.kind for d in sc.damage]
        return written, report_dict(base / "ledger", at, sc.tz, as_nobody=False)
    finally:
        shutil.rmtree(base)


def test_total_is_not_complete_while_a_refused_file_holds_earlier_records() -> None:
    """The property's minimal example, as Hypothesis shrank it: run A (2 s, one output token at
    its first instant) then run B of the same instance (2 s, nothing), both closed cleanly; a
    negative count written into A. The report names A (``bad_values``) but starts ``total`` at
    B's start, where A's ``ledger_unreadable`` ends, and calls it complete with 0 output."""
    sc = LOST_RUN_EARLIER
    written, doc = _report_after(sc)
    assert [(Path(f["path"]), f["status"]) for f in doc["files"]] == [
        (written[0].path, "bad_values")
    ]
    total = doc["windows"][-1]
    assert (total["name"], total["output_tokens"]) == ("total", 0)
    assert not total["complete"], total  # fails today: complete, with A's token missing


def test_another_instance_does_not_vouch_for_a_refused_files_time() -> None:
    """Instance :8000 runs 600 s with 10 input tokens 400 s in; instance :8001 runs from 300 s
    to 900 s with nothing; both closed cleanly, the query at 900 s. A's file refused (a
    negative count): its ``ledger_unreadable`` ends where :8001's coverage starts (300 s), so
    ``total`` (from 300 s) is complete with 0 input, though A's tokens at 400 s fall in it.
    Deleting A's file (its ``.seq`` marker left) gives the same."""
    sc = LOST_RUN_UNDER_ANOTHER_INSTANCE
    written, doc = _report_after(sc)
    assert [(Path(f["path"]), f["status"]) for f in doc["files"]] == [
        (written[0].path, "bad_values")
    ]
    total = doc["windows"][-1]
    assert total["start_ts"] <= written[0].events[0][0] < total["cutoff_ts"], total
    assert total["input_tokens"] == 0
    assert not total["complete"], total  # fails today: complete, with A's 10 tokens missing
