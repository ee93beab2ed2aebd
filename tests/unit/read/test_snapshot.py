"""One ledger file as the read side sees it (read/snapshot.py): its sums per window, read
through the hours where the edges allow, and the sums themselves. Opening it (its facts, its
status) is tests/unit/read/test_open_ledger.py's."""

from __future__ import annotations

from pathlib import Path

from tests.faults.helpers import ALL_TIME
from tests.ledgers import closed_file, ev, write_ledger
from vllm_ledger.format import connect
from vllm_ledger.read.open_ledger import read_ledger
from vllm_ledger.read.snapshot import SUM_FIELDS, Sums
from vllm_ledger.read.windows import Window

HOUR0 = 1_795_996_800  # a whole UTC hour
T0 = float(HOUR0 + 600)


def test_window_sums_per_engine_over_half_open_windows(tmp_path: Path) -> None:
    path = closed_file(tmp_path, T0)
    e0 = Sums(input_tokens=10, output_tokens=2, cached_tokens=4)
    e1 = Sums(input_tokens=3, requests=1, decode_tokens=4, decode_us=250_000)
    cases = {
        ALL_TIME: {0: e0, 1: e1},
        Window("to the first event", 0, int(T0) + 5): {},
        Window("its second", int(T0) + 5, int(T0) + 6): {0: e0},
        Window("up to the second event", int(T0) + 6, int(T0) + 7): {},
        Window("to the end of the hour", int(T0) + 7, HOUR0 + 3600): {1: e1},
        Window("after both", int(T0) + 8, HOUR0 + 7200): {},
    }
    snap = read_ledger(path, list(cases))
    for w, want in cases.items():
        assert snap.window_sums(w) == want, w.name


def _five_events(root: Path) -> Path:
    events = [
        ev(HOUR0 + 100, prompt=1),
        ev(HOUR0 + 2000, prompt=10),
        ev(HOUR0 + 3599, prompt=100),
        ev(HOUR0 + 3600, prompt=1000),
        ev(HOUR0 + 5000, prompt=10000),
    ]
    write_ledger(root, "r", start_ts=HOUR0, end_ts=HOUR0 + 7200, events=events)
    return root / "r" / "w0.g0.ledger.sqlite"


def _input_per_window(path: Path, cases: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    windows = [Window(f"{a}-{b}", a, b) for a, b in cases]
    snap = read_ledger(path, windows)
    return {
        (w.start_ts, w.cutoff_ts): sum(s.input_tokens for s in snap.window_sums(w).values())
        for w in windows
    }


def test_long_edges_read_through_the_hour_match_the_seconds(tmp_path: Path) -> None:
    # More than half an hour of edge seconds is read as the hour's row less the rest of it.
    cases = {
        (HOUR0 + 101, HOUR0 + 7200): 11110,  # 3499 edge seconds to the hour, then an hour
        (HOUR0 + 101, HOUR0 + 3600): 110,  # the hour less its first 101 seconds
        (HOUR0 + 3600, HOUR0 + 5401): 11000,  # the hour less its last 1799 seconds
        (HOUR0 + 3600, HOUR0 + 5400): 11000,  # 1800 seconds: read as seconds
        (HOUR0 + 2000, HOUR0 + 3600): 110,
        (HOUR0 + 3599, HOUR0 + 5001): 11100,  # 1402 seconds across the hour: as seconds
        (HOUR0 + 1, HOUR0 + 5000): 1111,  # from before the first record: whole hours
    }
    assert _input_per_window(_five_events(tmp_path), cases) == cases


def test_long_edges_off_the_hour_match_the_seconds(tmp_path: Path) -> None:
    # Windows under two hours with no whole hour inside: e.g. "today" at 00:45 in a zone with
    # a half-hour offset, or a 1 h timeline step there (18:30 to 19:30 UTC).
    cases = {
        (HOUR0 + 101, HOUR0 + 3599): 10,  # inside one hour, neither edge on it (read 11)
        (HOUR0 + 2000, HOUR0 + 4600): 1110,  # across the hour, 2600 s (read 111)
    }
    assert _input_per_window(_five_events(tmp_path), cases) == cases


def test_any_window_reads_what_its_seconds_hold(tmp_path: Path) -> None:
    """Seeded sweep: the tiered read (seconds, hours, days, edge complements) of random windows
    equals a plain sum of the per-second rows."""
    import random

    path = _five_events(tmp_path)
    with connect.open_read_only(path) as conn:
        seconds = conn.execute("SELECT ts, prompt_tokens FROM buckets").fetchall()
    rnd = random.Random(7)
    lo, hi = HOUR0 - 7200, HOUR0 + 9000
    cases = {}
    for _ in range(300):
        a = rnd.randrange(lo, hi)
        b = a + rnd.choice([1, 59, 1799, 1801, 3599, 3600, 3601, 5000, 7300, 90000])
        cases[(a, b)] = sum(n for ts, n in seconds if a <= ts < b)
    assert _input_per_window(path, cases) == cases


def test_sums_add_every_field() -> None:
    # ``Sums.add`` names its fields one by one (it runs thousands of times per report).
    n = len(SUM_FIELDS)
    total = Sums(*range(1, n + 1))
    total.add(Sums(*range(10, 10 * n + 1, 10)))
    assert total.as_list() == [11 * i for i in range(1, n + 1)]
