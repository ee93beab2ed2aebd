"""`declare-stop` at the edges of what the ledger knows: a stretch that starts before the
instance's first recorded second (or lies wholly before it) is refused with one line naming that
second, and nothing is written; a stretch after its run is accepted. Times are echoed with the
offset of the zone the one rule picks (--tz, $VLLM_LEDGER_TZ)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.inproc import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.format.declarations import DECLARATIONS_NAME

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z: 2023-11-15 06:13:20 in Asia/Shanghai
END = T0 + 1800


@pytest.fixture
def root(tmp_path: Path) -> Path:
    root = tmp_path / "usage"
    write_ledger(root, "run-a", start_ts=T0, end_ts=END, port=19001, events=[ev(T0 + 5, 10, 2)])
    return root


def _declare(root: Path, start: int, end: int, *extra: str) -> tuple[int, str, str]:
    return run_cli(
        "declare-stop",
        "--root",
        str(root),
        "--instance",
        "testhost:19001",
        "--from",
        str(start),
        "--until",
        str(end),
        "--reason",
        "upgrade",
        *extra,
    )


@pytest.mark.parametrize(
    ("start", "end"),
    [(T0 - 3600, T0 - 1800), (T0 - 600, T0 - 1)],
    ids=["wholly-before", "ends-at-the-first-second"],
)
def test_a_stop_before_the_first_recorded_second_is_refused(
    root: Path, start: int, end: int
) -> None:
    code, out, err = _declare(root, start, end)
    assert (code, out) == (2, "")
    first = "2023-11-15 06:13:20 +08:00"  # T0 in the default zone, Asia/Shanghai
    assert err.splitlines() == [
        f"vllm-ledger: error: --from {_sh(start)} is before the first recorded second of "
        f"testhost:19001 ({first}): a declared stop covers time it was stopped, not before it "
        f"ever ran; give --from {first} or later"
    ]
    assert not (root / DECLARATIONS_NAME).exists()


def test_a_stop_after_the_run_is_accepted_and_echoed_in_the_zone(root: Path) -> None:
    code, out, err = _declare(root, END + 60, END + 3600, "--tz", "America/New_York")
    assert (code, err) == (0, "")
    assert out.startswith(
        "declared: testhost:19001 stopped 2023-11-14 17:44:20 -05:00 -> "
        "2023-11-14 18:43:20 -05:00 (3540 s): upgrade; in "
    )
    assert (root / DECLARATIONS_NAME).is_file()


def _sh(ts: int) -> str:
    from zoneinfo import ZoneInfo

    from vllm_ledger.units import format_instant

    return format_instant(ts, ZoneInfo("Asia/Shanghai"))
