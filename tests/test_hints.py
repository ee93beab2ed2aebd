"""Hints that point the right way: a /metrics URL without its path, a --root one folder off,
a period after the cutoff, the top-level help's render modes; and progress on stderr only
(``progress.when_slow``, ``progress.quiet_stderr``)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from tests.rawhttp import RawServer, canned, response
from tests.unit.read.test_verify import METRICS, MetricsServer
from vllm_ledger.commands.render import RENDER_MODES
from vllm_ledger.progress import quiet_stderr, when_slow
from vllm_ledger.read.matched import MAX_FOLDERS_LOOKED, nearby_roots, root_hint

RUN = "20261201-080000-a1b2"
START = float(int(time.time()) - 3 * 3600)


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    """``srv/usage`` is the root: one closed run in it."""
    root = tmp_path / "srv" / "usage"
    root.mkdir(parents=True)
    write_ledger(root, RUN, start_ts=START, end_ts=START + 60, events=[ev(START + 10, 100, 20)])
    return root


def test_verify_without_metrics_in_the_url_says_add_metrics(srv: Path) -> None:
    with MetricsServer([METRICS]) as server:
        bare = server.url.removesuffix("/metrics")
        code, out, err = run_cli("verify", "--root", str(srv), "--metrics-url", bare)
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: cannot read {bare}: HTTP 404 Not Found: add /metrics: "
        f"--metrics-url {bare}/metrics\n"
    )


def test_a_url_that_answers_but_not_with_metrics_says_add_metrics(srv: Path) -> None:
    page = response("200 OK", b"<html>vLLM API server</html>", ("Content-Type: text/html",))
    with RawServer(canned(page)) as server:
        code, out, err = run_cli("verify", "--root", str(srv), "--metrics-url", server.url("/"))
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: {server.url('/')} answers, but not with vLLM's metrics: "
        f"add /metrics: --metrics-url {server.url('/metrics')}\n"
    )


def test_nothing_listening_still_asks_whether_vllm_runs(srv: Path) -> None:
    with MetricsServer([METRICS]) as server:
        url = server.url
    code, _out, err = run_cli("verify", "--root", str(srv), "--metrics-url", url)
    assert code == 2 and err.endswith("Connection refused: is vLLM running there?\n"), err


@pytest.mark.parametrize("off", ["above", "below"])
def test_a_root_one_folder_off_names_the_root(srv: Path, off: str) -> None:
    wrong = srv.parent if off == "above" else srv / RUN
    code, out, _err = run_cli("report", "--root", str(wrong))
    assert code == 3
    assert out.splitlines()[0] == (
        f"nothing matched: no ledger file under {wrong}; did you mean --root {srv}?"
    )
    code, out, _err = run_cli("check", "--root", str(wrong))
    assert (code, out) == (
        1,
        f"NO_LEDGER     no ledger files under {wrong}; did you mean --root {srv}?\n",
    )


def test_a_root_with_nothing_near_keeps_the_plugin_question(tmp_path: Path) -> None:
    assert root_hint([tmp_path]) == ""
    code, out, _err = run_cli("report", "--root", str(tmp_path))
    assert code == 3
    assert out.splitlines()[0] == (
        f"nothing matched: no ledger file under {tmp_path}: is the plugin on "
        "(VLLM_LEDGER_DIR), and is this the root it writes? (docs/ledger.md)"
    )


def test_the_root_hint_looks_a_bounded_way(tmp_path: Path) -> None:
    """A folder of many sub-folders: only the first ``MAX_FOLDERS_LOOKED`` (by name) are
    looked into; a root past them is not found (a hint, not a search)."""
    for i in range(MAX_FOLDERS_LOOKED + 5):
        (tmp_path / f"d{i:03d}").mkdir()
    late = tmp_path / f"d{MAX_FOLDERS_LOOKED + 2:03d}"
    write_ledger(late, RUN, start_ts=START, end_ts=START + 10)
    assert nearby_roots([tmp_path]) == []
    early = tmp_path / "d001"
    write_ledger(early, RUN, start_ts=START, end_ts=START + 10)
    assert nearby_roots([tmp_path]) == [early]
    assert root_hint([tmp_path]) == f"; did you mean --root {early}?"
    assert nearby_roots([tmp_path / "missing"]) == []


def test_a_period_after_the_cutoff_is_nothing_matched(srv: Path) -> None:
    code, out, _err = run_cli("report", "--root", str(srv), "--since", "2099-01-01")
    assert code == 3
    assert out.startswith("nothing matched: the period from 2099-01-01 00:00:00")


def test_the_top_level_help_names_every_render_mode() -> None:
    code, out, _err = run_cli("--help", env={"COLUMNS": "200"})
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("render "))
    assert code == 0
    for mode in RENDER_MODES:
        assert mode in line, mode


def test_a_slow_step_says_so_on_stderr_a_quick_one_says_nothing(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with when_slow("compact", "compacting", after_s=60.0):
        pass
    assert capsys.readouterr() == ("", "")
    seen = threading.Event()
    with when_slow("compact", "compacting", after_s=0.0, every_s=0.01):
        deadline = time.monotonic() + 10
        err = ""
        while not seen.is_set() and time.monotonic() < deadline:
            err += capsys.readouterr().err
            if "(still, " in err:
                seen.set()
    out, rest = capsys.readouterr()
    assert out == "" and seen.is_set()
    assert (err + rest).splitlines()[0] == "compact: compacting"


def test_what_vllm_writes_on_stderr_is_kept_from_the_progress_lines(
    capfd: pytest.CaptureFixture[str],
) -> None:
    with quiet_stderr("doctor") as quiet:
        os.write(2, b"Triton is not installed.\n")  # as C code writes it
        os.write(1, b"WARNING an older vLLM on stdout\n")
        # a handler bound to the process's stderr stream (pytest swapped sys.stderr itself)
        print("INFO a logger line", file=sys.__stderr__, flush=True)
        quiet.say("[1/1] interface: importing vLLM")
    out, err = capfd.readouterr()
    assert (out, err) == ("", "doctor: [1/1] interface: importing vLLM\n")
    assert quiet.count == 3
    assert quiet.lines == [
        "Triton is not installed.",
        "WARNING an older vLLM on stdout",
        "INFO a logger line",
    ]


def test_doctors_attribution_row_names_the_root(srv: Path) -> None:
    from vllm_ledger.doctor.attribution import check_attribution

    row = check_attribution([srv.parent], shape_of=lambda: None)
    assert (row.passed, row.checked) == (
        False,
        f"no ledger file under {srv.parent}; did you mean --root {srv}?",
    )
