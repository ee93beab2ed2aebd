"""Exporter counters never go down while it runs: a run folder that goes, a file that shrinks or
breaks, a compaction. Real ledgers, a real exporter on 127.0.0.1, scraped over HTTP."""

from __future__ import annotations

import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger import maintenance
from vllm_ledger.observe.counters import CounterMemory, FileCounts, Sighting
from vllm_ledger.observe.exporter import LedgerCollector, start
from vllm_ledger.promtext import parse_samples

T0 = 1_800_000_000  # 2027-01-15 08:00 UTC
COUNTERS = (
    "vllm_ledger_prompt_tokens_total",
    "vllm_ledger_generation_tokens_total",
    "vllm_ledger_cached_tokens_total",
    "vllm_ledger_requests_total",
)
Samples = list[tuple[str, dict[str, str], float]]


class Exporter:
    """A real exporter on a free port of 127.0.0.1, reading with a fake clock, no cache."""

    def __init__(self, roots: list[Path], clock: FakeClock) -> None:
        self.said: list[str] = []
        self.collector = LedgerCollector(
            roots, tz="UTC", clock=clock, cache_seconds=0.0, say=self.said.append
        )
        self.server = start(self.collector, host="127.0.0.1", port=0)

    def scrape(self) -> Samples:
        url = f"http://127.0.0.1:{self.server.port}/metrics"
        with urllib.request.urlopen(url, timeout=30) as r:
            return parse_samples(r.read().decode())


@pytest.fixture
def exporter() -> Iterator[type[Exporter]]:
    started: list[Exporter] = []

    class Started(Exporter):
        def __init__(self, roots: list[Path], clock: FakeClock) -> None:
            super().__init__(roots, clock)
            started.append(self)

    yield Started
    for e in started:
        e.server.stop()


def _value(samples: Samples, name: str, **labels: str | None) -> float | None:
    """The one sample of ``name`` with ``labels`` (a label given as None must be absent)."""
    hits = [
        v
        for n, lab, v in samples
        if n == name and all(lab.get(k) == want for k, want in labels.items())
    ]
    assert len(hits) <= 1, (name, labels, hits)
    return hits[0] if hits else None


def _counters(samples: Samples) -> tuple[float | None, ...]:
    return tuple(_value(samples, n) for n in COUNTERS)


def _held(samples: Samples) -> dict[str, float | None]:
    return {
        r: _value(samples, "vllm_ledger_files_held", reason=r)
        for r in ("vanished", "unreadable", "shrank")
    }


def _two_runs(root: Path) -> None:
    write_ledger(
        root,
        "run-1",
        start_ts=T0,
        end_ts=T0 + 100,
        events=[
            ev(T0 + 10, prompt=120, gen=30, cached=64, finished=[(30, 1.5)]),
            ev(T0 + 50, prompt=40, gen=9, cached=0, finished=[(9, 0.5)]),
        ],
    )
    write_ledger(
        root,
        "run-2",
        start_ts=T0 + 200,
        end_ts=T0 + 300,
        events=[ev(T0 + 210, prompt=10, gen=5, cached=0, finished=[(5, 0.25)])],
    )


def test_a_run_folder_moved_away_keeps_its_counts_and_back_is_counted_once(
    tmp_path: Path, exporter: type[Exporter]
) -> None:
    root, archive = tmp_path / "ledger", tmp_path / "archive"
    archive.mkdir()
    _two_runs(root)
    e = exporter([root], FakeClock(T0 + 301))
    first = e.scrape()
    assert _counters(first) == (170, 44, 64, 3)
    assert _value(first, "vllm_ledger_runs_vanished") == 0
    assert _held(first) == {"vanished": 0, "unreadable": 0, "shrank": 0}

    shutil.move(str(root / "run-1"), str(archive / "run-1"))  # archived
    gone = e.scrape()
    assert all(b >= a for a, b in zip(_counters(first), _counters(gone), strict=True))  # type: ignore[operator]
    assert _counters(gone) == (170, 44, 64, 3)
    # The report of the root no longer holds run-1: its window says so, the counters do not fall.
    assert _value(gone, "vllm_ledger_window_input_tokens", window="total") == 10
    assert _value(gone, "vllm_ledger_runs_vanished") == 1
    assert _held(gone) == {"vanished": 1, "unreadable": 0, "shrank": 0}
    whole = {"window": "total", "ledger_instance": None}
    assert _value(gone, "vllm_ledger_window_problems", problem="run_vanished", **whole) == 1
    assert _value(gone, "vllm_ledger_window_complete", **whole) == 0
    # The instance whose run went says so in its own coverage too.
    inst = {"window": "total", "ledger_instance": "testhost:8000"}
    assert _value(gone, "vllm_ledger_window_problems", problem="run_vanished", **inst) == 1
    assert _value(gone, "vllm_ledger_window_complete", **inst) == 0
    assert e.said == [
        "run run-1 is no longer under the roots; the counters keep what it counted (run_vanished)"
    ]
    assert _counters(e.scrape()) == (170, 44, 64, 3)  # still, and said once
    assert len(e.said) == 1

    # A new run while run-1 is away adds exactly its own counts.
    write_ledger(
        root, "run-3", start_ts=T0 + 400, end_ts=T0 + 500, events=[ev(T0 + 410, prompt=7, gen=2)]
    )
    e.collector.clock.t = T0 + 501  # type: ignore[attr-defined]
    assert _counters(e.scrape()) == (177, 46, 64, 3)

    shutil.move(str(archive / "run-1"), str(root / "run-1"))  # moved back
    back = e.scrape()
    assert _counters(back) == (177, 46, 64, 3)  # counted once, not twice
    assert _value(back, "vllm_ledger_window_input_tokens", window="total") == 177
    assert _value(back, "vllm_ledger_runs_vanished") == 0
    assert _held(back) == {"vanished": 0, "unreadable": 0, "shrank": 0}
    assert (
        _value(back, "vllm_ledger_window_problems", window="total", problem="run_vanished") is None
    )
    assert e.said[1:] == ["run run-1 is back under the roots; it is counted once"]


def test_a_run_moved_to_another_watched_root_is_no_loss(
    tmp_path: Path, exporter: type[Exporter]
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    b.mkdir()
    _two_runs(a)
    e = exporter([a, b], FakeClock(T0 + 301))
    assert _counters(e.scrape()) == (170, 44, 64, 3)
    shutil.move(str(a / "run-1"), str(b / "run-1"))
    moved = e.scrape()
    assert _counters(moved) == (170, 44, 64, 3)
    assert _value(moved, "vllm_ledger_runs_vanished") == 0
    assert e.said == []


def test_a_file_replaced_by_a_smaller_copy_does_not_lower_the_counters(
    tmp_path: Path, exporter: type[Exporter]
) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    # The same writer's file as an older copy would hold it: only the first event.
    older = tmp_path / "older"
    write_ledger(
        older,
        "run-1",
        start_ts=T0,
        end_ts=T0 + 30,
        events=[ev(T0 + 10, prompt=120, gen=30, cached=64, finished=[(30, 1.5)])],
    )
    e = exporter([root], FakeClock(T0 + 301))
    assert _counters(e.scrape()) == (170, 44, 64, 3)
    name = "w0.g0.ledger.sqlite"
    for suffix in ("", ".seq"):
        shutil.copyfile(older / "run-1" / (name + suffix), root / "run-1" / (name + suffix))
    shrunk = e.scrape()
    assert _value(shrunk, "vllm_ledger_window_input_tokens", window="total") == 130  # the copy
    assert _counters(shrunk) == (170, 44, 64, 3)  # the largest seen
    assert _held(shrunk) == {"vanished": 0, "unreadable": 0, "shrank": 1}
    assert _value(shrunk, "vllm_ledger_runs_vanished") == 0
    assert e.said == [
        "run run-1 writer 0 generation 0 holds fewer counts than before; "
        "the counters keep the larger figures"
    ]


def test_a_file_damaged_between_scrapes_keeps_its_counts(
    tmp_path: Path, exporter: type[Exporter]
) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    e = exporter([root], FakeClock(T0 + 301))
    assert _counters(e.scrape()) == (170, 44, 64, 3)
    path = root / "run-1" / "w0.g0.ledger.sqlite"
    path.write_bytes(b"this is not a ledger".ljust(path.stat().st_size, b"\xff"))
    broken = e.scrape()
    assert _counters(broken) == (170, 44, 64, 3)
    assert _held(broken) == {"vanished": 0, "unreadable": 1, "shrank": 0}
    assert _value(broken, "vllm_ledger_runs_vanished") == 0  # there, only unreadable
    assert _value(broken, "vllm_ledger_files_unreadable") == 1
    assert (
        _value(
            broken,
            "vllm_ledger_window_problems",
            window="total",
            problem="ledger_unreadable",
            ledger_instance=None,
        )
        == 1
    )


def test_compaction_between_scrapes_changes_no_figure(
    tmp_path: Path, exporter: type[Exporter]
) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    now = T0 + 10 * 86400  # both runs are finished and older than the compaction horizon
    e = exporter([root], FakeClock(now))
    before = e.scrape()
    result = maintenance.run(root, clock=lambda: now)
    assert [c.status for c in result.compacted] == ["compacted", "compacted"]
    assert result.summary_entries == 2
    after = e.scrape()

    def figures(samples: Samples) -> Samples:
        return [s for s in samples if s[0] != "vllm_ledger_report_seconds"]

    assert figures(after) == figures(before)
    assert _counters(after) == (170, 44, 64, 3)
    assert _held(after) == {"vanished": 0, "unreadable": 0, "shrank": 0}
    assert e.said == []


# ---------------------------------------------------------------- the memory alone (pure)


def _file(run: str, rank: int, counts: tuple[int, ...], last: float) -> FileCounts:
    return FileCounts(run, rank, 0, (*counts, 0, 0), last - 10, last)


def test_memory_is_bounded_by_folding_the_oldest_runs() -> None:
    memory = CounterMemory(max_files=8)
    files = [_file(f"run-{r}", w, (r + 1, 1, 0, 1), 1000.0 * r) for r in range(6) for w in range(2)]
    held = memory.observe(Sighting(files))
    assert held.counts == (2 * 21, 12, 0, 12, 0, 0)
    assert held.tracked_files <= 8 * 3 // 4
    assert held.folded_runs == 3  # the three oldest runs, each now one total
    # The same files again: nothing doubled; a folded run that is gone is still held.
    again = memory.observe(Sighting([f for f in files if f.run_id != "run-0"]))
    assert again.counts == held.counts
    assert [v.run_id for v in again.vanished_runs] == ["run-0"]
    assert again.files_held["vanished"] == 2
    # A folded run that grows is followed.
    grown = [*files, _file("run-0", 2, (5, 0, 0, 0), 50.0)]
    assert memory.observe(Sighting(grown)).counts[0] == 2 * 21 + 5


def test_nothing_is_called_vanished_while_a_root_cannot_be_listed() -> None:
    memory = CounterMemory()
    memory.observe(Sighting([_file("run-1", 0, (10, 2, 0, 1), 100.0)]))
    blind = memory.observe(Sighting([], unknown_unreadable=True))
    assert blind.counts == (10, 2, 0, 1, 0, 0)
    assert blind.vanished_runs == ()
    assert blind.files_held == {"vanished": 0, "unreadable": 1, "shrank": 0}
    denied = memory.observe(Sighting([], unreadable_runs=frozenset({"run-1"})))
    assert denied.files_held["unreadable"] == 1 and denied.vanished_runs == ()
    assert memory.observe(Sighting([])).newly_vanished == ("run-1",)


def test_a_failed_read_after_a_good_one_serves_the_counters_held(
    tmp_path: Path, exporter: type[Exporter]
) -> None:
    root = tmp_path / "ledger"
    _two_runs(root)
    e = exporter([root], FakeClock(T0 + 301))
    assert _counters(e.scrape()) == (170, 44, 64, 3)
    e.collector.tz = "Mars/Olympus"  # every read fails from now on
    failed = e.scrape()
    assert _value(failed, "vllm_ledger_report_ok") == 0
    assert _counters(failed) == (170, 44, 64, 3)  # no gap, no fall
    assert _value(failed, "vllm_ledger_window_input_tokens", window="total") is None
    assert e.said == [
        "cannot read the ledgers: time zone 'Mars/Olympus' is not a known time zone: "
        "use an IANA Region/City name or UTC such as Asia/Shanghai"
    ]
