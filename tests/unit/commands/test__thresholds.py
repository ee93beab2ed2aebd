"""The alert-threshold flags of observability (commands/_thresholds.py): a flag per threshold,
its default the Thresholds' own, and the Thresholds they give back."""

from __future__ import annotations

import argparse
from dataclasses import fields

import pytest

from vllm_ledger.commands._thresholds import (
    add_threshold_flags,
    duration_flag,
    fraction_flag,
    thresholds_of,
)
from vllm_ledger.errors import BadArgument
from vllm_ledger.observe.alert_rule import Thresholds


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser()
    p.add_argument("--ledger-mountpoint", default=Thresholds().ledger_mountpoint)
    add_threshold_flags(p, Thresholds())
    return p


def test_no_flag_gives_the_default_thresholds() -> None:
    assert thresholds_of(_parser().parse_args([])) == Thresholds()


def test_every_threshold_but_the_mount_point_has_a_flag_of_its_own() -> None:
    group = next(g for g in _parser()._action_groups if g.title and "thresholds" in g.title)
    dests = {a.dest for a in group._group_actions}
    assert len(dests) == len(fields(Thresholds)) - 1 == 20
    assert "ledger_mountpoint" not in dests


def test_a_flag_reaches_its_threshold() -> None:
    args = _parser().parse_args(
        [
            "--kv-cache-threshold",
            "0.8",
            "--ttft-for",
            "90",
            "--memory-for",
            "7m",
            "--ledger-mountpoint",
            "/srv",
        ]
    )
    t = thresholds_of(args)
    assert (t.kv_cache_fraction, t.ttft_for, t.memory_for) == (0.8, "1m30s", "7m")
    assert t.ledger_mountpoint == "/srv"


def test_a_duration_is_written_as_prometheus_reads_it() -> None:
    parse = duration_flag("--x-for", 0, 3600, "5m")
    assert parse("5m") == "5m"
    assert parse("90") == "1m30s"
    assert parse("1.5s") == "1500ms"
    with pytest.raises(BadArgument):
        parse("2h")


def test_a_fraction_is_above_0_and_at_most_1() -> None:
    parse = fraction_flag("--x-threshold", "0.9")
    assert parse("0.9") == 0.9
    for bad in ("0", "1.5", "-0.1"):
        with pytest.raises(BadArgument):
            parse(bad)
