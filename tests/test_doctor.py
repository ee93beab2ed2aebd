"""vllm-ledger doctor (vllm_ledger/doctor/): each check failing for its real cause.

* interface: a patched copy of vLLM's FinishedRequestStats without ``decode_time``, from a
  test-only folder first on PYTHONPATH (tests/data/vllm_missing_field), in a real doctor process;
* agreement: another server's /metrics: the recorded /metrics text of a real vLLM 0.32, served
  from a real HTTP server on 127.0.0.1 with its ``_created`` samples an hour after the run's
  start (a second real vLLM would cost a minute of start-up for the same bytes);
* writers: two real writer processes (tests/faults/writer_proc.py, the real Recorder) of one
  run expecting two, one of them SIGKILLed (standing in for one of two vLLM API processes;
  tests/e2e/test_doctor_e2e.py runs the doctor against a real vLLM);
* storage: a real tmpfs remounted read-only, and one that filled up under a writer;
* attribution: a real doctor process over a ledger whose finished request no tag named (the
  middleware's flag as the fix), and the interface row naming the join in the installed vLLM
  (tests/unit/doctor/test_attribution.py holds every verdict).

The passing run of all four against a real vLLM is tests/e2e/test_doctor_e2e.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import cast

import pytest

from tests.conftest import REPO, run_cli
from tests.faults.helpers import WriterProc, fill_disk, pumped_recorder, tmpfs
from tests.ledgers import ev, write_ledger
from tests.rawhttp import RawServer, drip
from tests.unit.read.test_verify import METRICS, MetricsServer, created_at
from vllm_ledger.doctor import (
    PLACES,
    SELFTEST_EVENTS,
    check_agreement,
    check_storage,
    check_writers,
    interface_problems,
    storage_selftest,
)

PATCHED = REPO / "tests" / "data" / "vllm_missing_field"
T0 = 1_800_000_000.0
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


def test_interface_fails_on_a_stats_class_missing_a_field() -> None:
    """A real doctor process whose vLLM lacks FinishedRequestStats.decode_time: the row names
    the field, the round trip fails on it too, the fix says what to do, exit 1."""
    code, out, err = run_cli(
        "doctor", "--only", "interface", env={"PYTHONPATH": f"{PATCHED}{os.pathsep}{REPO}"}
    )
    assert code == 1, out + err
    lines = out.splitlines()
    assert lines[0] == "check      result  what was checked"
    assert lines[1].startswith("interface  FAIL    vLLM 0.32.0: FinishedRequestStats has no field ")
    assert "FinishedRequestStats has no field decode_time;" in lines[1]
    assert "record() round trip failed: TypeError:" in lines[1]
    assert "decode_time" in lines[1].split("round trip failed")[1]
    assert lines[2].startswith("           fix:    this vLLM changed what the plugin reads: pin")
    assert lines[3:] == ["0 of 1 checks pass"]


def test_interface_problems_name_each_difference() -> None:
    """The introspection alone, on vLLM's real modules and on altered copies of them."""
    pytest.importorskip("vllm")
    import types

    from vllm.v1.metrics import loggers, stats

    assert interface_problems(stats, loggers) == []

    class IterationStats(stats.IterationStats):
        def __init__(self) -> None:
            super().__init__()
            # A float where the plugin wants an int: the wrong type is what is being tested.
            self.num_generation_tokens = cast(int, 0.0)
            del self.iteration_timestamp

    class Base(loggers.AggregateStatLoggerBase):
        def record(self, iteration_stats, scheduler_stats, engine_idx=0):  # type: ignore[override]
            pass

    altered_stats = types.SimpleNamespace(
        IterationStats=IterationStats, FinishedRequestStats=stats.FinishedRequestStats
    )
    altered_loggers = types.SimpleNamespace(AggregateStatLoggerBase=Base)
    assert interface_problems(altered_stats, altered_loggers) == [
        "IterationStats has no iteration_timestamp",
        "IterationStats.num_generation_tokens is float, not int",
        "AggregateStatLoggerBase.record takes (iteration_stats, scheduler_stats, engine_idx), "
        "not (scheduler_stats, iteration_stats, mm_cache_stats, engine_idx)",
    ]


def test_agreement_names_another_servers_metrics(tmp_path: Path) -> None:
    start = float(int(time.time()) - 7200)
    write_ledger(
        tmp_path,
        "run-a",
        start_ts=start,
        end_ts=start + 100,
        events=[ev(start + 10, prompt=1065, gen=121, cached=576, finished=[(10, 0.5)] * 12)],
    )
    with MetricsServer([created_at(METRICS, start + 1.2)]) as same:
        row = check_agreement([tmp_path], same.url, wait_s=0, clock=time.time, sleep=time.sleep)
    assert row.passed, row
    assert row.checked == (
        f"run run-a: input 1,065, output 121, cached 576, requests 12, equal to {same.url}"
    )
    with MetricsServer([created_at(METRICS, start + 3600)]) as other:
        row = check_agreement([tmp_path], other.url, wait_s=0, clock=time.time, sleep=time.sleep)
    assert not row.passed
    assert row.checked.startswith("run run-a: /metrics is another server's (or another launch's)")
    assert ", 3,600 s after this run started (" in row.checked
    assert row.fix == "point --metrics-url at the vLLM whose ledger is under --root"


def test_agreement_against_a_dripping_metrics_ends_at_the_timeout(tmp_path: Path) -> None:
    """`doctor --only agreement --timeout 1s` against a /metrics that drips a byte every 0.2 s:
    a failed row after about a second, not after the drip (1,000 bytes: 200 s)."""
    start = float(int(time.time()) - 7200)
    write_ledger(tmp_path, "run-a", start_ts=start, end_ts=start + 100)
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n"
    with RawServer(drip(head, b"x")) as server:
        url = server.url("/metrics")
        began = time.monotonic()
        code, out, err = run_cli(
            "doctor",
            "--only",
            "agreement",
            "--root",
            str(tmp_path),
            "--metrics-url",
            url,
            "--timeout",
            "1s",
        )
        took = time.monotonic() - began
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "check      result  what was checked",
        f"agreement  FAIL    {url} did not answer within 1 s: is vLLM running there?",
        f"           fix:    check that vLLM serves {url} and that --root is the ledger root it "
        "writes (VLLM_LEDGER_DIR)",
        "0 of 1 checks pass",
    ]
    assert took < 1.0 + 15.0, took  # the interpreter's start-up included


def _writer(root: Path, rank: int) -> WriterProc:
    return WriterProc.start(
        "--root",
        str(root),
        "--run-id",
        "run-1",
        "--rank",
        str(rank),
        "--expected",
        "2",
        "--events",
        "0",
        "--heartbeat",
        "0.1",
        "--flush",
        "0.05",
    )


def test_writers_one_of_two_killed(tmp_path: Path) -> None:
    """Two real writer processes of one run; SIGKILL one: named at once (its heartbeat stops
    moving), long before the 30 s after which the report would call it stale."""
    root = tmp_path / "ledger"
    writers = [_writer(root, 0), _writer(root, 1)]
    try:
        for w in writers:
            w.wait_line("ACK")
        row = check_writers([root], wait_s=10)
        assert row.passed, row
        assert row.checked.startswith("run run-1, 2 expected writers: w0 alive (heartbeat ")
        assert ", w1 alive (heartbeat " in row.checked

        row = check_writers([root], wait_s=10, expect_writers=8)
        assert not row.passed and row.checked.endswith("; you expect 8")
        assert row.fix == (
            "the run expects 2: launch with --api-server-count 8 (and VLLM_LEDGER_WRITERS=8), "
            "or pass --expect-writers 2"
        )

        os.kill(writers[1].proc.pid, signal.SIGKILL)
        writers[1].finish()
        row = check_writers([root], wait_s=2)
        assert not row.passed
        assert "w0 alive (heartbeat " in row.checked
        assert ", w1 silent: no heartbeat in 2 s (last " in row.checked
        assert row.fix.startswith("an API process that is silent or gone is not recording")
    finally:
        for w in writers:
            if w.proc.poll() is None:
                os.kill(w.proc.pid, signal.SIGKILL)
                w.finish()


def test_writers_with_no_ledger_and_a_missing_writer(tmp_path: Path) -> None:
    row = check_writers([tmp_path], wait_s=0)
    assert (row.passed, row.checked) == (False, f"no writer under {tmp_path}")
    now = time.time()
    write_ledger(tmp_path, "run-1", start_ts=now - 20, end_ts=now - 1, expected=2, clean=False)
    row = check_writers([tmp_path], wait_s=0)
    assert not row.passed
    assert row.checked.startswith("run run-1, 2 expected writers: w0 silent: no heartbeat in 0 s")
    assert row.checked.endswith(", w1 missing (no ledger file)")


@pytest.mark.parametrize("place", PLACES)
def test_the_storage_selftest_flags_the_failure_and_never_raises(place: str) -> None:
    if place == "tmpfs" and os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if place == "read-only directory" and os.geteuid() == 0:
        # Root writes into a 0555 directory: run the self-test as nobody, in its own process.
        code = (
            "from vllm_ledger.doctor import storage_selftest;"
            "t = storage_selftest(('read-only directory',));"
            "print(t.place, t.flagged, t.commit_failures, t.lost_events, t.last_error)"
        )
        p = subprocess.run(
            [
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                sys.executable,
                "-c",
                code,
            ],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd="/",
            timeout=60,
        )
        assert p.returncode == 0, p.stderr
        assert p.stdout.startswith("read-only directory True 3 3 PermissionError:"), p.stdout
        return
    test = storage_selftest((place,))  # type: ignore[arg-type]
    assert (test.place, test.raised, test.flagged) == (place, None, True)
    assert (test.commit_failures, test.lost_events) == (3, SELFTEST_EVENTS)
    assert test.last_error


@ROOT_ONLY
def test_storage_fails_on_a_read_only_root() -> None:
    with tmpfs("1m") as mnt:
        root = mnt / "ledger"
        write_ledger(root, "run-1", start_ts=T0, end_ts=T0 + 20)
        subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
        row = check_storage([root], clock=lambda: T0 + 30)
    assert not row.passed
    assert row.checked.startswith(
        "self-test on a tmpfs: 3 failed commits and 3 lost events counted, nothing raised; "
        f"{root} is on a read-only file system; {root} has "
    )
    assert row.fix == "free space, remount read-write, or fix the owner and mode of the root"


@ROOT_ONLY
def test_storage_fails_on_writes_the_root_refused() -> None:
    """A writer whose tmpfs filled up: 12 events lost, counted in the ledger once it recovered;
    the doctor names them."""
    with tmpfs("512k") as mnt:
        root = mnt / "ledger"
        rec, clock = pumped_recorder(root, "run-1", T0)
        rec.submit(ev(T0 - 0.5, prompt=7, gen=1))
        assert rec.pump()
        filler = fill_disk(mnt)
        for j in range(12):
            rec.submit(ev(T0 + 2.5 + j / 100, prompt=3))
        for t in (T0 + 5, T0 + 10, T0 + 15):
            clock.t = t
            assert rec.pump() is False
        filler.unlink()
        clock.t = T0 + 20
        assert rec.pump(final=True)
        row = check_storage([root], clock=lambda: T0 + 30)
    assert not row.passed
    assert "run run-1 lost 12 events to failed writes" in row.checked
    assert row.fix.endswith(
        "that storage refused the ledger's commits (full, read-only or unwritable): fix it; "
        "those seconds stay uncovered (docs/faults.md)"
    )


def test_the_interface_row_names_the_join() -> None:
    """The interface check's shape line says what the attribution join reads in this vLLM."""
    pytest.importorskip("vllm")
    import vllm
    from vllm.v1.metrics import loggers, stats

    from vllm_ledger.doctor.interface import interface_row
    from vllm_ledger.write.shape import detect_shape

    shape = detect_shape(stats, loggers, vllm.__version__)
    row = interface_row(vllm.__version__, [], shape)
    assert row.passed and row.checked.endswith(
        ".finished_requests[*].num_generation_tokens / .decode_time; joined by .request_id"
    )


def test_the_command_names_an_enforcer_that_stopped(tmp_path: Path) -> None:
    """A real enforcer process (one round a second: stale after 6 s) publishes, the doctor says
    budgets are on and enforcing; SIGTERMed, its file goes stale and the doctor says enforcement
    fails open, why, and the fix (exit 1). The budgets file comes from the environment, as
    vLLM's rank 0 reads it."""
    from tests.unit.commands.test_enforce import _root_now
    from tests.unit.test_enforcer import _budgets
    from vllm_ledger.doctor.budgets import FIX_STALE
    from vllm_ledger.format import overbudget

    (root, _midnight), config = _root_now(tmp_path), _budgets(tmp_path)
    env = {"VLLM_LEDGER_BUDGETS": str(config)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_ledger.enforcer", str(root), "--config", str(config),
         "--interval", "1"],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        path = overbudget.path_in(root)
        deadline = time.monotonic() + 30
        while not path.exists():
            assert time.monotonic() < deadline, "the enforcer never published"
            time.sleep(0.05)
        code, out, err = run_cli("doctor", "--only", "budgets", "--root", str(root), env=env)
        assert code == 0, out + err
        lines = out.splitlines()
        assert lines[1].startswith(
            f"budgets  pass    on and enforcing: 3 budgets in {config} ($VLLM_LEDGER_BUDGETS) "
            f"(2 enforced); the enforcer's file in {root} written "
        )
        assert lines[1].endswith(" s ago, 1 label refused now")
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)
    written, fresh_s, _over = overbudget.parse(path.read_bytes())
    assert fresh_s == 6.0
    time.sleep(max(0.0, written + fresh_s + 1 - time.time()))  # the file's own deadline
    code, out, err = run_cli("doctor", "--only", "budgets", "--root", str(root), env=env)
    assert code == 1, out + err
    lines = out.splitlines()
    assert lines[1].startswith(
        f"budgets  FAIL    failing open: 3 budgets in {config} ($VLLM_LEDGER_BUDGETS) "
        f"(2 enforced), but in {root}: .vllm-ledger-over-budget.json was written "
    )
    assert lines[1].endswith(
        " s ago (stale after 6 s): the enforcer stopped; every request is served"
    )
    assert lines[2] == f"         fix:    {FIX_STALE}"
    assert lines[3:] == ["0 of 1 checks pass"]


def test_the_command_says_attribution_is_off_and_gives_the_flag(tmp_path: Path) -> None:
    """A real doctor process (it imports the installed vLLM, which joins) over a ledger whose
    finished request no tag named: off, the middleware's flag as the fix, exit 1."""
    from tests.unit.doctor.test_attribution import _ledger

    _ledger(tmp_path, "run-1", time.time() - 60, "untagged")
    code, out, err = run_cli("doctor", "--only", "attribution", "--root", str(tmp_path))
    assert code == 1, out + err
    assert out.splitlines() == [
        "check        result  what was checked",
        "attribution  FAIL    off: run run-1: only untagged rows (1 finished request, none "
        "tagged): the middleware is not loaded",
        "             fix:    add --middleware vllm_ledger.middleware.LedgerMiddleware to vllm "
        "serve (render --usage writes it in every mode; docs/attribution.md), then restart vLLM",
        "0 of 1 checks pass",
    ]
    assert "Traceback" not in err
