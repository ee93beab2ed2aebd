"""The alert rules as data (observe/alert_table.py): one definition per alert, each reading
its thresholds."""

from __future__ import annotations

from dataclasses import fields

from vllm_ledger.observe.alert_rule import Thresholds
from vllm_ledger.observe.alert_table import RULES


def test_every_rule_has_its_own_name_and_a_known_severity() -> None:
    rules = [rule(Thresholds()) for rule in RULES]
    names = [r.name for r in rules]
    assert len(names) == len(set(names)) == 12
    assert {r.severity for r in rules} <= {"info", "warning", "critical"}
    assert all(r.runbook_url == "" for r in rules)  # the link is added by alerts.alert_rules


def test_each_rule_reads_its_trip_point_and_its_hold_from_the_thresholds() -> None:
    t = Thresholds(kv_cache_fraction=0.5, kv_cache_for="7m", disk_free_fraction=0.25)
    by_name = {r.name: r for r in (rule(t) for rule in RULES)}
    kv = by_name["KVCacheNearFull"]
    assert (kv.threshold, kv.for_) == (0.5, "7m")
    assert "50%" in kv.summary
    assert "[7m]" in kv.signal
    assert "25%" in by_name["LedgerDiskNearFull"].summary


def test_every_threshold_is_read_by_some_rule() -> None:
    default = [rule(Thresholds()) for rule in RULES]
    for f in fields(Thresholds):
        value = (
            "/srv"
            if f.name == "ledger_mountpoint"
            else ("17m" if f.name.endswith(("_for", "_range")) else 0.123)
        )
        changed = [rule(Thresholds(**{f.name: value})) for rule in RULES]  # type: ignore[arg-type]
        assert changed != default, f.name
