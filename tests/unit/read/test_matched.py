"""Whether a view over the roots matched anything, and if not why."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.matched import nothing_matched

T0 = 1_796_000_000.0


def _ledger(root: Path) -> None:
    write_ledger(root, "run-a", start_ts=T0, end_ts=T0 + 120, events=[ev(T0 + 10, prompt=3)])


def test_a_root_with_no_ledger_is_no_ledger(tmp_path: Path) -> None:
    with LedgerSet.read([tmp_path], clock=lambda: T0) as ls:
        nm = nothing_matched(ls)
    assert nm is not None
    assert nm.reason == "no_ledger"
    assert nm.roots == (str(tmp_path),)


def test_an_instance_the_roots_do_not_hold_is_no_match_and_names_what_they_hold(
    tmp_path: Path,
) -> None:
    _ledger(tmp_path)
    with LedgerSet.read([tmp_path], clock=lambda: T0 + 600) as ls:
        assert nothing_matched(ls) is None
        assert nothing_matched(ls, instance=8000) is None
        nm = nothing_matched(ls, instance=9000)
    assert nm is not None
    assert nm.reason == "no_match"
    assert nm.instances == ("testhost:8000",)
    assert nm.models == ("tiny",)


def test_a_period_no_run_recorded_in_is_no_run_in_period(tmp_path: Path) -> None:
    _ledger(tmp_path)
    with LedgerSet.read([tmp_path], clock=lambda: T0 + 600) as ls:
        assert nothing_matched(ls, since_ts=T0, until_ts=T0 + 60) is None
        nm = nothing_matched(ls, since_ts=T0 - 7200, until_ts=T0 - 3600)
    assert nm is not None
    assert nm.reason == "no_run_in_period"
