"""One alert rule as data (observe/alert_rule.py): its expression, its rule and its link."""

from __future__ import annotations

from vllm_ledger.observe.alert_rule import (
    AlertRule,
    Thresholds,
    percent,
    plain_number,
    runbook_link,
)


def _rule(for_: str = "5m", threshold: float = 0.9) -> AlertRule:
    return AlertRule("SomethingHigh", "up", ">", threshold, for_, "warning", "s", "d")


def test_a_threshold_is_written_as_plainly_as_it_reads() -> None:
    assert plain_number(3) == "3"
    assert plain_number(3.0) == "3"
    assert plain_number(0.9) == "0.9"
    assert percent(0.05) == "5%"
    assert percent(0.875) == "87.5%"


def test_the_expression_compares_the_signal_with_the_threshold() -> None:
    assert _rule().expr == "(up) > 0.9"
    assert _rule(threshold=0).expr == "(up) > 0"


def test_a_rule_that_fires_at_once_has_no_for() -> None:
    assert _rule().to_rule()["for"] == "5m"
    assert "for" not in _rule("0s").to_rule()
    assert "for" not in _rule("0m").to_rule()


def test_the_rule_carries_its_severity_labels_and_words() -> None:
    rule = AlertRule("X", "up", "==", 0, "1m", "critical", "sum", "desc", "rb#x", {"team": "a"})
    assert rule.to_rule() == {
        "alert": "X",
        "expr": "(up) == 0",
        "for": "1m",
        "labels": {"severity": "critical", "team": "a"},
        "annotations": {"summary": "sum", "description": "desc", "runbook_url": "rb#x"},
    }


def test_the_runbook_link_is_the_headings_anchor() -> None:
    assert _rule().anchor == "somethinghigh"
    assert (
        runbook_link("https://wiki/runbook", "SomethingHigh")
        == "https://wiki/runbook#somethinghigh"
    )


def test_the_default_thresholds_watch_the_root_file_system() -> None:
    assert Thresholds().ledger_mountpoint == "/"
