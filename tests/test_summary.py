"""The summary of finished files: every figure it gives is the files' own, whatever it holds.

A report over a root with a summary must equal, to the byte, the report over the same root
without one. The summary only decides how much is read: a finished run whose files are all
unchanged is answered whole from its record (no file opened); anything else, and any entry or
record whose values the ledger reader would refuse, means the files are read instead.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import test_property_ledgers as property_ledgers
from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger import strictjson
from vllm_ledger.formats import json as json_format
from vllm_ledger.read import summary
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import build_report
from vllm_ledger.read.summary_run import RECORD_FIELDS, SummaryRun

T0 = 1_795_000_000.0
H = 3600.0
NOW = T0 + 40 * H  # every writer finished; every window holds each run whole, or misses it
RUN_A = "20261118T000000Z-a"


def _runs(root: Path) -> None:
    """Four runs of one instance and one of another, in the shapes a summary must handle."""
    # Two writers, both closed cleanly, with traffic on two DP engines and a fault second.
    for rank in (0, 1):
        write_ledger(
            root,
            "20261118T000000Z-a",
            start_ts=T0,
            end_ts=T0 + 2 * H,
            expected=2,
            rank=rank,
            events=[
                ev(T0 + 60 * i + rank, prompt=11 + i, gen=3, cached=i % 5, engine=i % 2)
                for i in range(100)
            ],
        )
    # One writer of the two expected: the run vouches for nothing (writer_missing).
    write_ledger(
        root,
        "20261118T030000Z-b",
        start_ts=T0 + 3 * H,
        end_ts=T0 + 4 * H,
        expected=2,
        events=[ev(T0 + 3 * H + 10 * i, prompt=5, gen=2) for i in range(50)],
    )
    # A writer that died: its file is finished an hour later, its run is read file by file.
    write_ledger(
        root,
        "20261118T050000Z-c",
        start_ts=T0 + 5 * H,
        end_ts=T0 + 6 * H,
        clean=False,
        events=[ev(T0 + 5 * H + 7 * i, prompt=9, gen=1) for i in range(60)],
    )
    # A writer that committed no count at all, and one that did.
    for rank, events in ((0, []), (1, [ev(T0 + 8 * H + 30, prompt=40, gen=4)])):
        write_ledger(
            root,
            "20261118T080000Z-d",
            start_ts=T0 + 8 * H,
            end_ts=T0 + 9 * H,
            expected=2,
            rank=rank,
            events=events,
        )
    # Another instance, across the others.
    write_ledger(
        root,
        "20261118T010000Z-e",
        start_ts=T0 + H,
        end_ts=T0 + 7 * H,
        port=8001,
        model="other",
        events=[ev(T0 + H + 100 * i + 0.5, prompt=3, gen=30) for i in range(200)],
    )


@pytest.fixture(scope="module")
def plain_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("plain") / "ledger"
    _runs(root)
    return root


@pytest.fixture
def root(plain_root: Path, tmp_path: Path) -> Path:
    """A copy of the runs with the summary the maintenance pass writes."""
    copy = tmp_path / "ledger"
    shutil.copytree(plain_root, copy)
    summary.refresh(copy, NOW)
    return copy


# Instants that hold every run whole, that cut runs (windows start and end inside them), and
# one inside a run (its writers were alive then).
INSTANTS = [NOW, T0 + 24 * H + 1234.5, T0 + 9 * H + 1.25, T0 + 5.5 * H, T0 + 1.5 * H]


Reports = dict[tuple[float, str | None], str]


def _clock(at: float) -> Callable[[], float]:
    return lambda: at


def _reports(roots: list[Path]) -> Reports:
    """The JSON report at each instant and breakdown, as the command prints it."""
    out = {}
    for at in INSTANTS:
        for by in (None, "run", "instance", "engine"):
            with LedgerSet.read(roots, clock=_clock(at)) as ledgers:
                report = build_report(ledgers, at_ts=at, by=by)
            out[(at, by)] = json_format.render(report)
    return out


def _without_summary(root: Path) -> Reports:
    """The reports over a copy of ``root`` without its summary, as if made at ``root``."""
    bare = root.parent / "bare"
    shutil.copytree(root, bare, ignore=shutil.ignore_patterns(summary.SUMMARY_NAME))
    try:
        return {k: v.replace(str(bare), str(root)) for k, v in _reports([bare]).items()}
    finally:
        shutil.rmtree(bare)


def _sources(root: Path) -> list[Any]:
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        return ledgers.sources()


# ---- what the summary answers ----------------------------------------------------------------


def test_finished_runs_are_answered_whole_and_every_figure_is_the_files(root: Path) -> None:
    whole = {s.run_id for s in _sources(root) if isinstance(s, SummaryRun)}
    # The crashed run's state depends on the report's clock: its files are taken one by one.
    assert whole == {
        "20261118T000000Z-a",
        "20261118T030000Z-b",
        "20261118T080000Z-d",
        "20261118T010000Z-e",
    }
    assert _reports([root]) == _without_summary(root)


def test_a_report_that_holds_every_run_whole_opens_no_file(root: Path) -> None:
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        build_report(ledgers, by="run")
        assert ledgers.opens == 0
    # A window that cuts a run is answered by that run's files, and only those are opened.
    at = T0 + 1.5 * H
    with LedgerSet.read([root], clock=lambda: at) as ledgers:
        build_report(ledgers, at_ts=at)
        assert ledgers.opens == 3  # run a (two files) and run e


def test_an_older_summary_is_ignored(root: Path) -> None:
    want = _without_summary(root)
    (root / summary.SUMMARY_NAME).write_text(json.dumps({"version": 1, "entries": {}}))
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        build_report(ledgers)
        assert ledgers.opens == 7  # every file
    assert _reports([root]) == want


def test_a_changed_file_is_read_and_its_run_taken_file_by_file(root: Path) -> None:
    want = _without_summary(root)
    changed = root / "20261118T000000Z-a" / "w1.g0.ledger.sqlite"
    st = changed.stat()
    os.utime(changed, ns=(st.st_atime_ns, st.st_mtime_ns + 1))
    runs = {s.run_id for s in _sources(root) if isinstance(s, SummaryRun)}
    assert "20261118T000000Z-a" not in runs
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        build_report(ledgers)
        assert ledgers.opens == 1  # its other file still comes from its summary entry
    assert _reports([root]) == want


def test_a_run_under_two_roots_is_counted_once_as_without_a_summary(
    root: Path, tmp_path: Path
) -> None:
    second = tmp_path / "second"
    second.mkdir()
    shutil.copytree(root / "20261118T000000Z-a", second / "20261118T000000Z-a")
    summary.refresh(second, NOW)
    with_summaries = _reports([root, second])
    os.unlink(root / summary.SUMMARY_NAME)
    os.unlink(second / summary.SUMMARY_NAME)
    assert _reports([root, second]) == with_summaries


def test_a_new_file_in_a_summarised_run_is_read(root: Path) -> None:
    write_ledger(
        root,
        "20261118T030000Z-b",
        start_ts=T0 + 3 * H,
        end_ts=T0 + 4 * H,
        expected=2,
        rank=1,
        events=[ev(T0 + 3 * H + 10 * i + 3, prompt=6, gen=2) for i in range(50)],
    )
    runs = {s.run_id for s in _sources(root) if isinstance(s, SummaryRun)}
    assert "20261118T030000Z-b" not in runs
    assert _reports([root]) == _without_summary(root)


# ---- the value gate: a damaged or hostile summary is refused, never trusted ------------------


def _load(root: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """The index line and each run's file entries, as written."""
    data = (root / summary.SUMMARY_NAME).read_bytes()
    head, _, rest = data.partition(b"\n")
    index = json.loads(head)
    lines = {name: json.loads(rest[slice(*rec["at"])]) for name, rec in index["runs"].items()}
    return index, lines


def _save(root: Path, index: dict[str, Any], lines: dict[str, Any], at: Any = None) -> None:
    """Write a summary back (NaN and infinities as Python's json writes them); ``at`` puts
    run A's line somewhere else than where it is."""
    body = b""
    for name, rec in index["runs"].items():
        line = json.dumps(lines[name]).encode()
        rec["at"] = [len(body), len(body) + len(line)]
        body += line + b"\n"
    if at is not None:
        index["runs"][RUN_A]["at"] = at
    (root / summary.SUMMARY_NAME).write_bytes(json.dumps(index).encode() + b"\n" + body)


def _set_record(field: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(index: dict[str, Any], lines: dict[str, Any]) -> None:
        index["runs"][RUN_A]["run"][RECORD_FIELDS.index(field)] = value

    return change


def _set_entry(key: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(index: dict[str, Any], lines: dict[str, Any]) -> None:
        del index["runs"][RUN_A]["run"]  # the run is then taken file by file, from entries
        lines[RUN_A]["w0.g0.ledger.sqlite"][key] = value

    return change


def _set_both(key: str, value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(index: dict[str, Any], lines: dict[str, Any]) -> None:
        _set_record(key, value)(index, lines)
        for entry in lines[RUN_A].values():
            entry[key] = value

    return change


def _set_total(value: Any) -> Callable[[dict[str, Any], dict[str, Any]], None]:
    def change(index: dict[str, Any], lines: dict[str, Any]) -> None:
        index["runs"][RUN_A]["run"][RECORD_FIELDS.index("totals")]["0"][0] = value
        for entry in lines[RUN_A].values():
            entry["totals"]["0"][0] = value

    return change


HOSTILE = {
    # A billion writers: before, the report sized a list by it (MemoryError).
    "a billion writers": _set_both("expected_writers", 10**9),
    "a billion writers in a file entry": _set_entry("expected_writers", 10**9),
    "no writer expected": _set_both("expected_writers", 0),
    "NaN writers": _set_both("expected_writers", math.nan),
    "writers as text": _set_both("expected_writers", "8"),
    "writers as true": _set_both("expected_writers", True),
    # NaN and infinities where an instant belongs: before, an internal error.
    "a NaN run start": _set_record("start_ts", math.nan),
    "an infinite run end": _set_record("end_ts", math.inf),
    "NaN proofs": _set_record("writer_first_ts", math.nan),
    "a NaN close": _set_entry("clean_close_ts", math.nan),
    "a NaN span": _set_entry("spans", [[math.nan, T0 + 10]]),
    "NaN counts": _set_record("counts", [int(T0), math.nan]),
    "a NaN marker time": _set_entry("marker_ts", math.nan),
    "a NaN total": _set_total(math.nan),
    # Negative values.
    "a negative total": _set_total(-1),
    "a negative rank": _set_entry("writer_rank", -1),
    "a negative generation": _set_entry("generation", -1),
    "a negative sequence": _set_entry("last_seq", -5),
    "negative lost commits": _set_entry("missing_commits", -1),
    "a negative first second": _set_entry("first_bucket_ts", -100),
    "a negative extra rank": _set_record("extra_ranks", [-1]),
    "a negative instance": _set_record("instance", -1),
    # Shapes and ranges.
    "a total past 2^62": _set_total(2**63),
    "seven sums": _set_both("totals", {"0": [1, 2, 3, 4, 5, 6, 7]}),
    "an engine that is no DP rank": _set_both("totals", {"-1": [1, 2, 3, 4, 5, 6]}),
    "an engine with spaces": _set_both("totals", {" 1": [1, 2, 3, 4, 5, 6]}),
    "states nobody writes": _set_record("writer_states", "alive"),
    "too few proofs": _set_record("writer_last_ts", [T0]),
    "a vouched stretch backwards": _set_record("vouched", [[T0 + 10, T0]]),
    "overlapping vouched stretches": _set_record("vouched", [[T0, T0 + 10], [T0 + 5, T0 + 20]]),
    "a year-3000 instant": _set_record("start_ts", 32_503_680_000.0),
    "an instance that is a list": _set_entry("instance", ["tiny"]),
    "a run id that is no string": _set_record("run_id", {"id": 1}),
    "a short record": lambda index, lines: index["runs"][RUN_A].__setitem__("run", [1, 2]),
    "a record that is no list": lambda index, lines: index["runs"][RUN_A].__setitem__("run", 7),
    "spans out of order": _set_entry("spans", [[T0 + 100, T0 + 200], [T0, T0 + 10]]),
}


@pytest.mark.parametrize("damage", list(HOSTILE), ids=list(HOSTILE))
def test_a_value_the_reader_would_refuse_means_the_files_are_read(root: Path, damage: str) -> None:
    want = _without_summary(root)
    index, lines = _load(root)
    before = {name: json.dumps(e) for name, e in lines[RUN_A].items()}
    HOSTILE[damage](index, lines)
    _save(root, index, lines)
    runs = {s.run_id for s in _sources(root) if isinstance(s, SummaryRun)}
    assert RUN_A not in runs
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        build_report(ledgers)
        # Each file whose entry was refused is opened; a refused run record alone means its
        # files come from their entries.
        assert ledgers.opens == sum(json.dumps(e) != before[n] for n, e in lines[RUN_A].items())
    assert _reports([root]) == want


@pytest.mark.parametrize(
    "at",
    [[0, 10**12], [-1, 5], [5, 2], ["0", "10"], None, [0]],
    ids=["past the end", "negative", "backwards", "text", "null", "one number"],
)
def test_a_line_the_index_misplaces_is_refused(root: Path, at: Any) -> None:
    want = _without_summary(root)
    index, lines = _load(root)
    del index["runs"][RUN_A]["run"]  # its files are then taken from their entries
    _save(root, index, lines, at=at)
    assert _reports([root]) == want


def test_a_summary_replaced_after_its_index_was_read_is_not_mixed_with_it(root: Path) -> None:
    index = summary.read_index(root)
    # Another pass writes a summary whose lines lie elsewhere (here: a run fewer).
    old_index, lines = _load(root)
    del old_index["runs"]["20261118T010000Z-e"]
    _save(root, old_index, lines)
    assert index.entries(RUN_A) == {}  # not the new file's bytes at the old file's places
    assert summary.read_index(root).entries(RUN_A) != {}


def test_damaged_or_foreign_files_in_its_place_are_ignored(root: Path) -> None:
    want = _without_summary(root)
    path = root / summary.SUMMARY_NAME
    for text in (b"", b"{not json", b"[1, 2]\n", b'{"version": 2}\n', b"\xff\xfe\n{}"):
        path.write_bytes(text)
        assert _reports([root]) == want


# ---- a summary nested too deep to parse: ignored, then rewritten ------------------------------

DEEP_LINES = {
    "100000 arrays": b"[" * 100_000 + b"]" * 100_000,
    "100000 objects": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "100000 unclosed": b"[" * 100_000,
    "one past the bound": b"[" * (summary.MAX_NESTING + 1) + b"]" * (summary.MAX_NESTING + 1),
}


def _cli_figures(root: Path) -> dict[str, tuple[int, str, str]]:
    """What report, check, status and timeline print for ``root`` as of ``NOW`` (the machine's
    clock left out where a command prints it)."""
    at = ("--root", str(root), "--at", f"{NOW}", "--tz", "UTC")
    argvs = {
        "report": ("report", *at, "--by", "run"),
        "report --json": ("report", *at, "--json"),
        "check": ("check", "--root", str(root)),
        "status": ("status", *at, "--no-health"),
        "timeline": ("timeline", *at, "--window", "2d", "--step", "1h", "--json"),
    }
    out = {}
    for name, argv in argvs.items():
        code, text, err = run_cli(*argv)
        if name in ("report --json", "status"):
            doc = json.loads(text)
            doc.pop("generated_at" if name == "report --json" else "clock")
            text = json.dumps(doc, sort_keys=True)
        if name == "check":  # check takes no --at: a heartbeat's age is as of now
            text = re.sub(r"last heartbeat \d+ s ago", "last heartbeat N s ago", text)
        out[name] = (code, text, err)
    return out


def test_a_summary_nested_100000_deep_is_ignored_and_compact_rewrites_it(root: Path) -> None:
    """Before, every reader and ``compact`` itself ended in RecursionError: the root could not
    heal. Now the summary is ignored (the files are read: the same figures as without it), and
    ``compact`` writes a valid one."""
    path = root / summary.SUMMARY_NAME
    path.unlink()
    want = _cli_figures(root)
    assert [code for code, _, _ in want.values()] == [0, 0, 1, 0, 0]  # check: the crashed run
    assert "Traceback" not in repr(want) and "internal error" not in repr(want)
    path.write_bytes(DEEP_LINES["100000 arrays"] + b"\n")
    assert not summary.read_index(root)
    assert _cli_figures(root) == want
    code, out, err = run_cli("compact", "--root", str(root))
    assert (code, err) == (0, "")
    # (what it compacts depends on the machine's clock: compaction is lossless either way)
    assert re.fullmatch(
        rf"{re.escape(str(root))}: compacted \d file\(s\) \([\d,]+ per-second rows dropped\), "
        r"summary holds 7 finished file\(s\)\n",
        out,
    )
    index, _lines = _load(root)
    assert sorted(index["runs"]) == sorted({s.run_id for s in _sources(root)})
    assert len(summary.load(root)) == 7
    for line in path.read_bytes().splitlines():
        assert strictjson.depth(line) <= 6  # as written: far inside the bound
    # The rewritten summary is used and gives the (compacted) files' own figures.
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        build_report(ledgers)
        assert ledgers.opens == 0
    with_summary = _cli_figures(root)
    path.rename(root.parent / "aside.json")
    assert with_summary == _cli_figures(root)


@pytest.mark.parametrize("where", ["index", "run line"])
@pytest.mark.parametrize("deep", list(DEEP_LINES))
def test_a_line_nested_past_the_bound_means_the_files_are_read(
    root: Path, where: str, deep: str
) -> None:
    want = _without_summary(root)
    path = root / summary.SUMMARY_NAME
    if where == "index":
        path.write_bytes(DEEP_LINES[deep] + b"\n")
        opened = 7  # every file
    else:  # a sound index whose run A line is too deep: run A's files are read, no other
        index, lines = _load(root)
        del index["runs"][RUN_A]["run"]
        _save(root, index, lines)
        _head, _, body = path.read_bytes().partition(b"\n")
        start, end = index["runs"][RUN_A]["at"]
        body = body[:start] + DEEP_LINES[deep] + body[end:]
        shift = len(DEEP_LINES[deep]) - (end - start)
        for rec in index["runs"].values():
            rec["at"] = [a + shift if a > start else a for a in rec["at"]]
        path.write_bytes(json.dumps(index).encode() + b"\n" + body)
        assert summary.read_index(root).entries(RUN_A) == {}
        opened = 2  # run A's two files
    with LedgerSet.read([root], clock=lambda: NOW) as ledgers:
        build_report(ledgers)
        assert ledgers.opens == opened
    assert _reports([root]) == want
    summary.refresh(root, NOW)
    assert len(summary.load(root)) == 7


def test_the_nesting_bound_is_the_summarys_own(root: Path) -> None:
    """A line exactly at the bound is read (its values are then checked as any others are)."""
    at_bound = b"[" * summary.MAX_NESTING + b"]" * summary.MAX_NESTING
    assert summary._decoded(at_bound) == json.loads(at_bound)
    with pytest.raises(ValueError, match="nested deeper than 32"):
        summary._decoded(DEEP_LINES["one past the bound"])


def test_refresh_reuses_entries_and_writes_the_same_summary(root: Path) -> None:
    before = (root / summary.SUMMARY_NAME).read_bytes()
    entries, read = summary.refresh(root, NOW)
    assert (entries, read) == (7, 0)  # every file finished, none opened: all still match
    assert (root / summary.SUMMARY_NAME).read_bytes() == before
    assert len(summary.load(root)) == 7


# ---- any root: the same report with the summary as without it --------------------------------


@settings(max_examples=max(10, settings().max_examples // 5))
@given(sc=property_ledgers.scenarios, later_s=st.sampled_from([0.0, 3_600.5, 2 * 86_400.0]))
def test_any_root_reports_the_same_with_its_summary(
    sc: property_ledgers.Scenario, later_s: float
) -> None:
    """Random runs, writers and damage (as the ledger property writes them; permissions aside:
    they change no file's size or time, and the summary, like its entries, goes by those)."""
    sc = dataclasses.replace(
        sc, damage=tuple(d for d in sc.damage if d.kind not in property_ledgers.PERMISSION_KINDS)
    )
    base = Path(tempfile.mkdtemp(prefix="ledger-summary-", dir=property_ledgers.SCRATCH))
    try:
        root = base / "ledger"
        at, written = property_ledgers.write_scenario(root, sc)
        property_ledgers.apply_damage(written, sc.damage)
        summary.refresh(root, at)
        reports = {}
        for keep in (True, False):
            if not keep:
                (root / summary.SUMMARY_NAME).unlink()
            for when in (at, at + later_s, at - 5_000.25):
                for by in (None, "run", "instance", "engine"):
                    r = build_report([root], at_ts=when, clock=_clock(when), by=by)
                    reports[(keep, when, by)] = json_format.render(r)
        for (keep, when, by), text in reports.items():
            if keep:
                assert text == reports[(False, when, by)], (when, by)
    finally:
        shutil.rmtree(base, ignore_errors=True)
