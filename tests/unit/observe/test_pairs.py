"""One read cut into (ledger_instance, model_name) pairs and per-file counts
(observe/pairs.py)."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger.observe.pairs import pair_rows, sighting
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000


def _two_instances(root: Path) -> None:
    write_ledger(root, "r1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, 40, 7, 16)])
    write_ledger(
        root, "r2", start_ts=T0, end_ts=T0 + 60, port=8001, model="big", events=[ev(T0 + 9, 3, 2)]
    )


def test_the_pairs_add_up_to_the_report(tmp_path: Path) -> None:
    _two_instances(tmp_path)
    with LedgerSet.read([tmp_path], clock=lambda: T0 + 61) as ledgers:
        report = build_report(ledgers, tz="UTC", by="instance")
        pairs = pair_rows(ledgers, report)
        seen = sighting(ledgers, report)
    assert [p.labels for p in pairs] == [("testhost:8000", "tiny"), ("testhost:8001", "big")]
    for name in ("today", "total"):
        prompt = sum(next(w for w in p.windows if w.name == name).input_tokens for p in pairs)
        assert prompt == report.window(name).input_tokens == 43
    assert sorted(f.labels for f in seen.files) == sorted(p.labels for p in pairs)
    assert not (seen.unreadable_files or seen.unreadable_runs or seen.unknown_unreadable)
