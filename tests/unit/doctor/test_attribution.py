"""The doctor's ``attribution`` row: each verdict from its facts (pure), and the facts read from
real ledgers the real Recorder wrote with the tag book the middleware fills (tagged, untagged,
no request ids, nothing finished yet, the newest of two runs)."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import FakeClock
from vllm_ledger.doctor import DoctorReport, Row, check_attribution, doctor, table
from vllm_ledger.doctor.attribution import (
    FIX_MIDDLEWARE,
    FIX_PLUGIN,
    FIX_VLLM,
    FIX_WAIT,
    AttributionFacts,
    attribution_row,
)
from vllm_ledger.format.identity import InstanceInfo, WriterIdentity
from vllm_ledger.write.recorder import Recorder
from vllm_ledger.write.shape import StatsShape
from vllm_ledger.write.tags import TagBook

T0 = 1_800_000_000.0
JOINS = StatsShape("0.32.0")
NO_JOIN = StatsShape("0.31.0", join_missing=("FinishedRequestStats has no request_id",))


# ---- the verdicts ----------------------------------------------------------------------------


def test_on_names_what_was_credited_and_what_was_not() -> None:
    row = attribution_row(
        AttributionFacts(
            "run-a", files=2, requests=40, credited=37, untagged=1, ambiguous=2, aborted=3,
            faults=1, keys=3, adapters=2, vllm_version="0.32.0",
        )
    )  # fmt: skip
    assert row == Row(
        "attribution",
        True,
        "on: run run-a: 37 of 40 finished requests credited (3 keys, 2 adapters); 1 untagged "
        "request, 2 ambiguous requests, 3 unfinished requests, 1 middleware fault",
    )
    assert row.result == "pass"


def test_a_vllm_without_request_id_is_off_and_warns() -> None:
    row = attribution_row(
        AttributionFacts(
            "run-a", files=1, requests=5, untagged=5, vllm_version="0.31.0",
            join_missing=("FinishedRequestStats has no request_id",),
        )
    )  # fmt: skip
    assert (row.result, row.fix) == ("warn", FIX_VLLM)
    assert row.checked == (
        "off: vLLM 0.31.0: FinishedRequestStats has no request_id: finished requests cannot be "
        "joined to the middleware's tags"
    )
    # A run written by such a vLLM: finished requests without their ids, no credit rows.
    row = attribution_row(AttributionFacts("run-b", files=1, requests=5))
    assert row.result == "warn"
    assert row.checked == (
        "off: run run-b recorded 5 finished requests without their ids: the vLLM that wrote it "
        "has no FinishedRequestStats.request_id"
    )
    assert row.fix == FIX_VLLM + "; if vLLM was upgraded since, restart it"


def test_only_untagged_rows_mean_the_middleware_is_not_loaded() -> None:
    row = attribution_row(AttributionFacts("run-a", files=1, requests=4, untagged=4))
    assert (row.result, row.fix) == ("FAIL", FIX_MIDDLEWARE)
    assert row.checked == (
        "off: run run-a: only untagged rows (4 finished requests, none tagged): the middleware "
        "is not loaded"
    )
    assert "--middleware vllm_ledger.middleware.LedgerMiddleware" in row.fix


def test_a_loaded_middleware_that_credited_nothing_fails_with_the_reasons() -> None:
    row = attribution_row(AttributionFacts("run-a", files=1, requests=2, ambiguous=2, faults=1))
    assert row.result == "FAIL"
    assert row.checked == (
        "off: run run-a: the middleware is loaded but credited no finished request; 2 ambiguous "
        "requests, 1 middleware fault"
    )
    assert row.fix.startswith("ambiguous: clients send one X-Request-Id on two requests")


def test_nothing_finished_yet_is_unknown_and_warns() -> None:
    row = attribution_row(AttributionFacts("run-a", files=1))
    assert (row.result, row.checked, row.fix) == (
        "warn",
        "unknown: run run-a has no finished request yet",
        FIX_WAIT,
    )
    row = attribution_row(AttributionFacts("run-a", files=1, aborted=2))
    assert row.checked == (
        "unknown: run run-a has no finished request yet; the middleware is loaded (2 requests "
        "ended unfinished)"
    )


def test_files_before_attribution_and_no_files() -> None:
    row = attribution_row(AttributionFacts("run-a", files=2, files_without=2, requests=9))
    assert (row.result, row.fix) == ("FAIL", FIX_PLUGIN)
    assert (
        row.checked == "off: run run-a's ledger files were written by a plugin without attribution"
    )
    assert attribution_row(AttributionFacts(None)).result == "FAIL"


def test_a_warning_passes_the_run_and_is_counted_apart() -> None:
    report = DoctorReport(
        (Row("interface", True, "ok"), Row("attribution", True, "unknown", FIX_WAIT, warn=True))
    )
    assert report.ok
    assert report.summary() == "1 of 2 checks pass; 1 warns"
    assert table(report) == [
        "check        result  what was checked",
        "interface    pass    ok",
        "attribution  warn    unknown",
        f"             fix:    {FIX_WAIT}",
    ]


# ---- read from real ledgers ------------------------------------------------------------------


def _ledger(root: Path, run_id: str, start: float, kind: str) -> None:
    """One writer of ``run_id``: one finished request of 100 + 10 tokens, tagged by the book
    (``tagged``), finished with no tag (``untagged``), finished without its id as a vLLM before
    0.32 hands it (``no-id``), or none finished, one request cut (``cut``)."""
    clock = FakeClock(start)
    book = TagBook(monotonic=clock)
    book.consumer = True
    identity = WriterIdentity(run_id, 0, 1, (0,), 1, InstanceInfo(("tiny",), 8000, "h"))
    rec = Recorder(root, identity, clock=clock, book=book)
    entry = book.begin("x1", judge_abort=True) if kind in ("tagged", "cut") else None
    if entry is not None:
        book.named(entry, "alice", "tiny", "", "")
    finished: tuple[tuple[object, ...], ...] = {
        "tagged": ((10, 0.5, "chatcmpl-x1", 100, 0),),
        "untagged": ((10, 0.5, "chatcmpl-zz", 100, 0),),
        "no-id": ((10, 0.5),),
        "cut": (),
    }[kind]
    clock.t = start + 1
    rec.submit((start + 1, 0, 100, 10, 0, finished, book.tick()))
    if entry is not None:
        book.end(entry, 200)
    for i in range(3):
        rec.submit((start + 2 + i, 0, 0, 0, 0, (), book.tick()))
    clock.t = start + 10
    assert rec.pump(final=True)


def _row(root: Path, shape: StatsShape | None = JOINS) -> Row:
    return check_attribution([root], shape_of=lambda: shape, clock=lambda: T0 + 60)


def test_the_row_from_each_kind_of_ledger(tmp_path: Path) -> None:
    got = {}
    for kind in ("tagged", "untagged", "no-id", "cut"):
        root = tmp_path / kind
        _ledger(root, "run-1", T0, kind)
        got[kind] = _row(root)
    assert got["tagged"] == Row(
        "attribution", True, "on: run run-1: 1 of 1 finished request credited (1 key, 1 adapter)"
    )
    assert got["untagged"] == Row(
        "attribution",
        False,
        "off: run run-1: only untagged rows (1 finished request, none tagged): the middleware "
        "is not loaded",
        FIX_MIDDLEWARE,
    )
    assert got["no-id"].result == "warn"
    assert got["no-id"].checked.startswith("off: run run-1 recorded 1 finished request without")
    assert got["cut"] == Row(
        "attribution",
        True,
        "unknown: run run-1 has no finished request yet; the middleware is loaded (1 request "
        "ended unfinished)",
        FIX_WAIT,
        warn=True,
    )


def test_the_newest_run_is_the_one_read(tmp_path: Path) -> None:
    _ledger(tmp_path, "run-old", T0, "tagged")
    _ledger(tmp_path, "run-new", T0 + 30, "untagged")
    row = _row(tmp_path)
    assert row.checked.startswith("off: run run-new: only untagged rows")


def test_this_vllm_without_the_join_and_no_ledger(tmp_path: Path) -> None:
    _ledger(tmp_path / "r", "run-1", T0, "tagged")
    assert _row(tmp_path / "r", NO_JOIN).checked.startswith("off: vLLM 0.31.0: FinishedRequest")
    (tmp_path / "empty").mkdir()
    assert _row(tmp_path / "empty") == Row(
        "attribution",
        False,
        f"no ledger file under {tmp_path / 'empty'}",
        "is vLLM running with the ledger on (VLLM_LEDGER_DIR) and is --root that folder?",
    )
    # vLLM not importable here (None): the row is read from the ledger alone.
    assert _row(tmp_path / "r", None).result == "pass"


def test_doctor_runs_the_row_in_its_place(tmp_path: Path) -> None:
    _ledger(tmp_path, "run-1", T0, "untagged")
    report = doctor(
        [tmp_path], None, checks=("attribution",), shape_of=lambda: JOINS, clock=lambda: T0 + 60
    )
    assert [r.check for r in report.rows] == ["attribution"]
    assert not report.ok and report.summary() == "0 of 1 checks pass"
