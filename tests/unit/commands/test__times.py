"""The flags that take a time (commands/_times.py)."""

from __future__ import annotations

import argparse

import pytest

from vllm_ledger.commands._times import add_since_until, resolve_flag, since_until_flags, time_flag
from vllm_ledger.errors import BadArgument


def test_a_time_flag_resolves_in_the_zone() -> None:
    spec = time_flag("--since")("2026-12-01")
    assert resolve_flag(spec, "--since", "UTC") == 1796083200
    assert resolve_flag(spec, "--since", "Asia/Shanghai") == 1796083200 - 8 * 3600
    assert resolve_flag(None, "--since", "UTC") is None


def test_a_bad_time_names_its_flag() -> None:
    p = argparse.ArgumentParser()
    add_since_until(p, "count")
    with pytest.raises(BadArgument, match=r"^--until 'soon' is not a time"):
        p.parse_args(["--since", "7d", "--until", "soon"])


def test_a_refusal_once_resolved_is_worded_with_the_flags() -> None:
    with pytest.raises(BadArgument) as got, since_until_flags():
        raise BadArgument("until 2026-11-01 is not after since 2026-12-01", argument="until")
    assert got.value.what == "--until 2026-11-01 is not after --since 2026-12-01"
