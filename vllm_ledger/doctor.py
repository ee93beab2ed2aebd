"""The post-upgrade checks the write-up asks for after every vLLM upgrade, as one table.

Four checks, each a row saying what was checked, whether it passed and how to fix a failure:

* ``interface``: the installed vLLM's stats classes (``IterationStats``, its prompt token
  stats, ``FinishedRequestStats``) have every field the plugin reads, with the types it
  expects, ``AggregateStatLoggerBase`` builds and calls loggers the way the plugin is written
  for, and one real ``record()`` through the real plugin lands in a temporary ledger that reads
  back exactly. vLLM is imported only here, when this check runs.
* ``agreement``: ``verify`` (read/verify.py): the newest run's totals against a live /metrics,
  another server's /metrics named as such.
* ``writers``: every expected writer of the newest run under the roots is alive and its
  heartbeat moves while the doctor watches (a writer whose process died stops moving at once,
  long before the 30 s after which the report calls it stale).
* ``storage``: a self-test in a temporary place that refuses writes (a tiny full tmpfs where
  this process may mount one, else a read-only directory, else a path under a regular file):
  the real recorder counts the failed commits and the lost events and never raises. Then the
  ledger roots themselves: writable, not read-only, not full, and no event of the newest run
  lost to a failed write.

Nothing here raises for a failed check: a check that cannot run is a failed row saying why.
"""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import functools
import inspect
import logging
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from vllm_ledger import __version__
from vllm_ledger.errors import LedgerError
from vllm_ledger.read.report import Report, WriterStatus, build_report
from vllm_ledger.read.snapshot import Sums, read_ledger
from vllm_ledger.read.verify import COUNTERS, FETCH_TIMEOUT_S, verify
from vllm_ledger.read.windows import Window
from vllm_ledger.write import paths
from vllm_ledger.write.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.recorder import MAX_RETRIES, Recorder

CheckName = Literal["interface", "agreement", "writers", "storage"]
CHECKS: tuple[CheckName, ...] = ("interface", "agreement", "writers", "storage")

# The fields the plugin reads (write/plugin.py's docstring lists them), with their types.
ITERATION_FIELDS: tuple[tuple[str, type], ...] = (
    ("iteration_timestamp", float),
    ("num_generation_tokens", int),
    ("finished_requests", list),
)
PROMPT_FIELDS: tuple[tuple[str, type], ...] = (("total", int), ("cached_tokens", int))
FINISHED_FIELDS: tuple[tuple[str, type], ...] = (
    ("num_generation_tokens", int),
    ("decode_time", float),
)
RECORD_PARAMS = ("scheduler_stats", "iteration_stats", "mm_cache_stats", "engine_idx")
INIT_PARAMS = ("vllm_config", "engine_indexes")

# A heartbeat every 5 s (recorder.HEARTBEAT_INTERVAL_S): two of them, and a second to commit.
HEARTBEAT_WAIT_S = 12.0
# Below this much free space under a ledger root, the next commits may fail.
MIN_FREE_BYTES = 64 * 1024 * 1024
TMPFS_SIZE = "512k"  # room for a ledger and its WAL, then filled
SELFTEST_EVENTS = 3

ALL_TIME = Window("all", 0, 2**40)

StoragePlace = Literal["tmpfs", "read-only directory", "path under a regular file"]
PLACES: tuple[StoragePlace, ...] = ("tmpfs", "read-only directory", "path under a regular file")


@dataclass(frozen=True)
class Row:
    """One check: what was checked (or found), whether it passed, how to fix a failure."""

    check: CheckName
    passed: bool
    checked: str
    fix: str = ""


@dataclass(frozen=True)
class DoctorReport:
    rows: tuple[Row, ...]

    @property
    def ok(self) -> bool:
        return all(r.passed for r in self.rows)


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
) -> DoctorReport:
    """Run ``checks`` in the order of ``CHECKS``; every one gives a row, none raises."""
    rows: list[Row] = []
    for name in CHECKS:
        if name not in checks:
            continue
        try:
            if name == "interface":
                row = check_interface()
            elif name == "agreement":
                row = check_agreement(
                    roots, metrics_url, wait_s=wait_s, timeout_s=timeout_s, clock=clock, sleep=sleep
                )
            elif name == "writers":
                row = check_writers(
                    roots,
                    wait_s=heartbeat_wait_s,
                    expect_writers=expect_writers,
                    clock=clock,
                    sleep=sleep,
                )
            else:
                row = check_storage(roots, clock=clock)
        except Exception as exc:  # a check that cannot run is a failed row, never a crash
            row = Row(
                name,
                False,
                f"the check could not run: {type(exc).__name__}: {exc}",
                f"run it alone (vllm-ledger doctor --only {name}); if it stays, report it",
            )
        rows.append(row)
    return DoctorReport(tuple(rows))


# ---- 1. interface ----------------------------------------------------------------------------


def _declared(cls: Any, name: str) -> Any:
    """The declared type of a dataclass field (a type, or its name as a string), else None."""
    for f in dataclasses.fields(cls):
        if f.name == name:
            return f.type
    return None


def _type_ok(declared: Any, want: type) -> bool:
    if declared is want:
        return True
    return isinstance(declared, str) and declared.strip("'\"") == want.__name__


def interface_problems(stats: Any, loggers: Any) -> list[str]:
    """What in vLLM's stats module and loggers module differs from what the plugin reads."""
    problems: list[str] = []
    it_cls = getattr(stats, "IterationStats", None)
    fin_cls = getattr(stats, "FinishedRequestStats", None)
    base = getattr(loggers, "AggregateStatLoggerBase", None)
    for name, obj in (
        ("IterationStats", it_cls),
        ("FinishedRequestStats", fin_cls),
        ("AggregateStatLoggerBase", base),
    ):
        if obj is None:
            problems.append(f"vLLM has no {name}")
    if it_cls is not None:
        it = it_cls()
        for field, want in ITERATION_FIELDS:
            if not hasattr(it, field):
                problems.append(f"IterationStats has no {field}")
            elif type(getattr(it, field)) is not want:
                got = type(getattr(it, field)).__name__
                problems.append(f"IterationStats.{field} is {got}, not {want.__name__}")
        pts = getattr(it, "prompt_token_stats", None)
        if pts is None:
            problems.append("IterationStats has no prompt_token_stats")
        else:
            pcls = type(pts)
            for field, want in PROMPT_FIELDS:
                value = getattr(pts, field, None)
                if value is None:
                    problems.append(f"{pcls.__name__} has no {field}")
                    continue
                declared = _declared(pcls, field) if dataclasses.is_dataclass(pcls) else want
                if type(value) is not want or not _type_ok(declared, want):
                    problems.append(f"{pcls.__name__}.{field} is not {want.__name__}")
    if fin_cls is not None:
        if not dataclasses.is_dataclass(fin_cls):
            problems.append("FinishedRequestStats is no longer a dataclass")
        else:
            for field, want in FINISHED_FIELDS:
                declared = _declared(fin_cls, field)
                if declared is None:
                    problems.append(f"FinishedRequestStats has no field {field}")
                elif not _type_ok(declared, want):
                    problems.append(f"FinishedRequestStats.{field} is {declared}, not {want}")
    if base is not None:
        params = list(inspect.signature(base.record).parameters.values())[1:]
        names = tuple(p.name for p in params)
        if names[:4] != RECORD_PARAMS:
            problems.append(
                f"AggregateStatLoggerBase.record takes ({', '.join(names)}), "
                f"not ({', '.join(RECORD_PARAMS)})"
            )
        else:
            defaults = {p.name: p.default for p in params}
            if defaults["mm_cache_stats"] is not None or defaults["engine_idx"] != 0:
                problems.append("AggregateStatLoggerBase.record's defaults changed")
        init = tuple(list(inspect.signature(base.__init__).parameters)[1:3])
        if init != INIT_PARAMS:
            problems.append(
                f"AggregateStatLoggerBase is built with ({', '.join(init)}), "
                f"not ({', '.join(INIT_PARAMS)})"
            )
    return problems


@contextlib.contextmanager
def _env(**values: str | None) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    try:
        for k, v in values.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextlib.contextmanager
def _quiet_ledger_log() -> Iterator[_Collect]:
    """The plugin's log lines during the round trip, collected instead of printed."""
    log = logging.getLogger("vllm.ledger")
    handler = _Collect()
    saved = log.propagate
    log.addHandler(handler)
    log.propagate = False
    try:
        yield handler
    finally:
        log.removeHandler(handler)
        log.propagate = saved


def round_trip() -> tuple[dict[str, int], dict[str, int]]:
    """One real ``record()`` through the plugin vLLM loads, into a temporary ledger.

    Returns (what was recorded, what the ledger reads back), both in the report's names.
    """
    from vllm.config import ParallelConfig, VllmConfig
    from vllm.v1.engine import FinishReason
    from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PrefillStats

    from vllm_ledger.plugin import LedgerStatLogger

    it = IterationStats()
    prefill = PrefillStats()
    prefill.set(num_prompt_tokens=7, num_local_cached_tokens=3, num_external_cached_tokens=0)
    it.prompt_token_stats.update_from_output(prefill)
    it.num_generation_tokens = 4
    it.finished_requests.append(
        FinishedRequestStats(
            finish_reason=FinishReason.LENGTH, num_generation_tokens=4, decode_time=0.25
        )
    )
    sent = {
        "input_tokens": 7,
        "output_tokens": 4,
        "cached_tokens": 3,
        "requests": 1,
        "decode_tokens": 3,
        "decode_us": 250_000,
    }
    config = VllmConfig(parallel_config=ParallelConfig(_api_process_count=1, _api_process_rank=0))
    with (
        tempfile.TemporaryDirectory(prefix="vllm-ledger-doctor-") as tmp,
        _env(
            VLLM_LEDGER_DIR=tmp,
            VLLM_LEDGER_RUN_ID="doctor-round-trip",
            VLLM_LEDGER_MAINTENANCE="0",
            VLLM_LEDGER_DISABLE=None,
            VLLM_LEDGER_WRITERS=None,
        ),
        _quiet_ledger_log() as log,
    ):
        plugin = LedgerStatLogger(vllm_config=config, engine_indexes=[0])
        try:
            if plugin.recorder is None:
                raise RuntimeError("the plugin did not start recording: " + "; ".join(log.lines))
            plugin.record(None, it, mm_cache_stats=None, engine_idx=0)
            faults = plugin.faults_total + plugin.recorder.rejected_total
        finally:
            plugin.shutdown()
            atexit.unregister(plugin.shutdown)
        if faults:
            raise RuntimeError(f"the plugin refused the iteration ({'; '.join(log.lines)})")
        got = Sums()
        for path in paths.iter_ledger_files(Path(tmp)):
            snap = read_ledger(path, [ALL_TIME])
            if not snap.ok:
                raise RuntimeError(f"the ledger written reads as {snap.status}: {snap.detail}")
            for s in snap.window_sums(ALL_TIME).values():
                got.add(s)
    return sent, dataclasses.asdict(got)


def check_interface() -> Row:
    fix = (
        "this vLLM changed what the plugin reads: pin the vLLM version the plugin supports "
        "(0.32/0.33) or update vllm_ledger/write/plugin.py, then run the doctor again"
    )
    try:
        import vllm
        from vllm.v1.metrics import loggers, stats
    except Exception as exc:
        return Row(
            "interface",
            False,
            f"vLLM cannot be imported here ({type(exc).__name__}: {exc})",
            "run the doctor with the Python that runs vLLM (its venv or image)",
        )
    version = str(getattr(vllm, "__version__", "?"))
    problems = interface_problems(stats, loggers)
    try:
        sent, got = round_trip()
    except Exception as exc:
        problems.append(f"record() round trip failed: {type(exc).__name__}: {exc}")
    else:
        if got != sent:
            wrong = ", ".join(f"{k} {got[k]} (sent {v})" for k, v in sent.items() if got[k] != v)
            problems.append(f"record() round trip read back {wrong}")
    if problems:
        return Row("interface", False, f"vLLM {version}: " + "; ".join(problems), fix)
    n = len(ITERATION_FIELDS) + 1 + len(PROMPT_FIELDS) + len(FINISHED_FIELDS)
    return Row(
        "interface",
        True,
        f"vLLM {version}: the {n} stats fields the plugin reads are there with their types; "
        f"record({', '.join(RECORD_PARAMS)}) as the plugin takes it; one record() through "
        "the plugin read back exactly (input 7, output 4, cached 3, 1 request)",
    )


# ---- 2. agreement ----------------------------------------------------------------------------


def check_agreement(
    roots: Sequence[Path],
    metrics_url: str | None,
    *,
    wait_s: float,
    timeout_s: float = FETCH_TIMEOUT_S,
    clock: Callable[[], float],
    sleep: Callable[[float], None],
) -> Row:
    if metrics_url is None:
        return Row(
            "agreement",
            False,
            "no /metrics to compare with",
            "pass --metrics-url http://HOST:PORT/metrics of the server writing the ledger",
        )
    try:
        result = verify(
            roots, metrics_url, wait_s=wait_s, clock=clock, sleep=sleep, timeout_s=timeout_s
        )
    except LedgerError as exc:
        return Row("agreement", False, str(exc), _agreement_fix(metrics_url))
    if result.other_server is not None:
        return Row(
            "agreement",
            False,
            f"run {result.run_id}: {result.other_server.explain()}",
            "point --metrics-url at the vLLM whose ledger is under --root",
        )
    if result.differences:
        diffs = "; ".join(
            f"{d.figure}: ledger {d.ledger:,} vs {d.metric} {d.vllm:,} "
            f"(diff {d.ledger - d.vllm:+,})"
            for d in result.differences
        )
        return Row(
            "agreement",
            False,
            f"run {result.run_id} after {result.waited_s:.0f} s: {diffs}",
            "run it again when traffic is quiet; a difference that stays means events are "
            "lost or the stats interface changed (see the interface row and docs/faults.md)",
        )
    figures = ", ".join(f"{k} {result.ledger[k]:,}" for k, _m in COUNTERS)
    return Row(
        "agreement",
        True,
        f"run {result.run_id}: {figures}, equal to {metrics_url}",
    )


def _agreement_fix(url: str) -> str:
    return (
        f"check that vLLM serves {url} and that --root is the ledger root it writes "
        "(VLLM_LEDGER_DIR)"
    )


# ---- 3. writers ------------------------------------------------------------------------------


def _newest_run(report: Report) -> str | None:
    starts: dict[str, float] = {}
    for w in report.writers:
        if w.first_ts is not None:
            starts[w.run_id] = min(starts.get(w.run_id, w.first_ts), w.first_ts)
    return max(starts, key=lambda r: starts[r]) if starts else None


def _run_writers(report: Report, run_id: str) -> dict[int, WriterStatus]:
    """One status per rank of ``run_id``: the file that proved alive last."""
    out: dict[int, WriterStatus] = {}
    for w in report.writers:
        if w.run_id != run_id:
            continue
        old = out.get(w.writer_rank)
        if old is None or (w.last_ts or 0) > (old.last_ts or 0):
            out[w.writer_rank] = w
    return out


def check_writers(
    roots: Sequence[Path],
    *,
    wait_s: float = HEARTBEAT_WAIT_S,
    expect_writers: int | None = None,
    clock: Callable[[], float] = time.time,
    sleep: Callable[[float], None] = time.sleep,
) -> Row:
    fix_root = "is vLLM running with the ledger on (VLLM_LEDGER_DIR) and is --root that folder?"
    try:
        report = build_report(roots, at_ts=clock(), clock=clock)
    except LedgerError as exc:
        return Row("writers", False, str(exc), fix_root)
    run_id = _newest_run(report)
    if run_id is None:
        return Row("writers", False, f"no writer under {', '.join(map(str, roots))}", fix_root)
    first = _run_writers(report, run_id)
    expected = max(w.expected_writers for w in first.values())
    start = clock()
    latest = first
    # Watch until every writer's heartbeat has moved, or the wait is over.
    while True:
        moved = {
            r
            for r, w in latest.items()
            if w.last_ts is not None and w.last_ts > (first[r].last_ts or 0)
        }
        if moved >= set(range(expected)) or clock() - start >= wait_s:
            break
        sleep(0.5)
        latest = _run_writers(build_report(roots, at_ts=clock(), clock=clock), run_id)
    now = clock()
    named: list[str] = []
    bad: list[str] = []
    for rank in range(max(expected, max(latest) + 1)):
        w = latest.get(rank)
        if w is None or w.state == "missing":
            text = f"w{rank} missing (no ledger file)"
        else:
            ago = f"{now - w.last_ts:.1f} s ago" if w.last_ts is not None else "never"
            if w.state != "alive":
                text = f"w{rank} {w.state} (last heartbeat {ago})"
            elif rank not in moved:
                text = f"w{rank} silent: no heartbeat in {now - start:.0f} s (last {ago})"
            else:
                named.append(f"w{rank} alive (heartbeat {ago})")
                continue
        named.append(text)
        bad.append(text)
    what = f"run {run_id}, {expected} expected writer{'s' if expected != 1 else ''}: "
    what += ", ".join(named)
    fixes: list[str] = []
    if bad:
        fixes.append(
            "an API process that is silent or gone is not recording: restart vLLM "
            "(a new run starts); a missing one never started its plugin: look for "
            "'vllm-ledger' in vLLM's log"
        )
    wrong_count = expect_writers is not None and expect_writers != expected
    if wrong_count:
        what += f"; you expect {expect_writers}"
        fixes.append(
            f"the run expects {expected}: launch with --api-server-count {expect_writers} "
            f"(and VLLM_LEDGER_WRITERS={expect_writers}), or pass --expect-writers {expected}"
        )
    return Row("writers", not bad and not wrong_count, what, "; ".join(fixes))


# ---- 4. storage ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelfTest:
    place: StoragePlace
    raised: str | None
    commit_failures: int
    lost_events: int
    last_error: str | None

    @property
    def flagged(self) -> bool:
        return (
            self.raised is None
            and self.commit_failures >= MAX_RETRIES
            and self.lost_events == SELFTEST_EVENTS
            and bool(self.last_error)
        )


def _mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        return False
    p = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={TMPFS_SIZE},mode=0700", "tmpfs", str(where)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return p.returncode == 0


def _fill(directory: Path) -> None:
    with open(directory / "filler.bin", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\xff" * 4096)
    with open(directory / "filler.bin", "ab", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"\xff")


@contextlib.contextmanager
def refusing_place(
    base: Path, places: Sequence[StoragePlace] = PLACES
) -> Iterator[tuple[StoragePlace, Path, Callable[[], None]]]:
    """A ledger root under ``base`` that refuses writes, the first of ``places`` this process
    can make (a path under a regular file when none of them), and the call that makes it
    refuse (the tmpfs is healthy until it is filled)."""
    for place in places:
        if place == "tmpfs":
            mnt = base / "tmpfs"
            mnt.mkdir()
            if not _mount_tmpfs(mnt):
                mnt.rmdir()
                continue
            try:
                yield place, mnt / "ledger", functools.partial(_fill, mnt)
            finally:
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
            return
        if place == "read-only directory":
            ro = base / "read-only"
            ro.mkdir(mode=0o555)
            ro.chmod(0o555)
            try:
                (ro / "probe").mkdir()
            except OSError:
                yield place, ro / "ledger", lambda: None
                return
            (ro / "probe").rmdir()  # this user writes anyway (root): try the next place
            continue
    # No user can create a directory under a regular file: the place every process can make.
    regular = base / "a-file"
    regular.write_bytes(b"")
    yield "path under a regular file", regular / "ledger", lambda: None


def storage_selftest(places: Sequence[StoragePlace] = PLACES) -> SelfTest:
    """The real recorder, pumped on a clock moved 5 s a time, over storage that refuses
    writes: ``SELFTEST_EVENTS`` events must be counted lost, each failed commit counted, and
    nothing raised."""
    base = Path(tempfile.mkdtemp(prefix="vllm-ledger-doctor-"))
    try:
        with _quiet_ledger_log(), refusing_place(base, places) as (place, root, refuse):
            t = [time.time()]
            rec = Recorder(
                root,
                WriterIdentity(
                    "doctor-storage-selftest",
                    0,
                    1,
                    pid=os.getpid(),
                    instance=InstanceInfo(("doctor",), None, "doctor", "", __version__),
                ),
                clock=lambda: t[0],
            )
            raised = None
            try:
                if place == "tmpfs":
                    rec.submit((t[0] - 0.5, 0, 1, 1, 0, ()))
                    if not rec.pump():
                        raise RuntimeError(
                            f"a healthy tmpfs refused the first commit: {rec.last_error}"
                        )
                refuse()
                for j in range(SELFTEST_EVENTS):
                    rec.submit((t[0] + 0.5 + j / 100, 0, 2, 1, 0, ()))
                for _ in range(MAX_RETRIES):
                    t[0] += 5.0
                    rec.pump()
            except Exception as exc:
                raised = f"{type(exc).__name__}: {exc}"
            finally:
                with contextlib.suppress(Exception):
                    rec.abandon()
            return SelfTest(
                place, raised, rec.commit_failures_total, rec.lost_events_total, rec.last_error
            )
    finally:
        with contextlib.suppress(OSError):
            (base / "read-only").chmod(0o755)
        shutil.rmtree(base, ignore_errors=True)
    raise AssertionError("unreachable: the last place always exists")  # pragma: no cover


def root_problems(root: Path, min_free_bytes: int = MIN_FREE_BYTES) -> list[str]:
    """Why ``root`` would refuse the ledger's next commits, if it would."""
    try:
        st = os.statvfs(root)
    except OSError as exc:
        return [f"{root}: {exc.strerror}"]
    out = []
    if st.f_flag & os.ST_RDONLY:
        out.append(f"{root} is on a read-only file system")
    free = st.f_bavail * st.f_frsize
    if free < min_free_bytes:
        out.append(f"{root} has {free:,} bytes free (under {min_free_bytes // 2**20} MiB)")
    if not os.access(root, os.W_OK | os.X_OK):
        out.append(f"{root} is not writable by this user")
    return out


def check_storage(
    roots: Sequence[Path],
    *,
    clock: Callable[[], float] = time.time,
    places: Sequence[StoragePlace] = PLACES,
) -> Row:
    test = storage_selftest(places)
    problems: list[str] = []
    fixes: list[str] = []
    if not test.flagged:
        why = (
            f"it raised {test.raised}"
            if test.raised
            else (
                f"{test.commit_failures} failed commits and {test.lost_events} of "
                f"{SELFTEST_EVENTS} events counted lost"
            )
        )
        problems.append(
            f"self-test on a {test.place}: the recorder did not flag the failure ({why})"
        )
        fixes.append("the recorder must count failures and never raise: report it as a bug")
    for root in roots:
        problems.extend(root_problems(root))
    if len(problems) > (0 if test.flagged else 1):
        fixes.append("free space, remount read-write, or fix the owner and mode of the root")
    lost = 0
    try:
        report = build_report(roots, at_ts=clock(), by="run", clock=clock)
    except LedgerError:
        report = None
    if report is not None:
        run_id = _newest_run(report)
        row = next((r for r in report.breakdown if r.key == run_id), None)
        if row is not None:
            total = next(w for w in row.windows if w.name == "total")
            lost = total.problems.get("write_failed", 0)
            if lost:
                problems.append(f"run {run_id} lost {lost:,} events to failed writes")
                fixes.append(
                    "that storage refused the ledger's commits (full, read-only or "
                    "unwritable): fix it; those seconds stay uncovered (docs/faults.md)"
                )
    selftest = (
        f"self-test on a {test.place}: {test.commit_failures} failed commits and "
        f"{test.lost_events} lost events counted, nothing raised"
        if test.flagged
        else ""
    )
    if problems:
        text = "; ".join([*([selftest] if selftest else []), *problems])
        return Row("storage", False, text, "; ".join(fixes))
    where = ", ".join(map(str, roots))
    return Row(
        "storage",
        True,
        f"{selftest}; {where} writable with room, no write failures recorded",
    )
