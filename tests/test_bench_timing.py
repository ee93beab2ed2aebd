"""The bench's timed processes (bench/timing.py): every command once untimed, then round by
round beside the others, the samples kept in the results' details; medians and quartiles in ms."""

from __future__ import annotations

import pytest

from bench import results, timing


def test_each_command_is_timed_once_a_round(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(results, "DETAILS", {})
    monkeypatch.setattr(timing, "DETAILS", results.DETAILS)
    ran: list[str] = []

    def timed_run(argv: list[str]) -> float:
        ran.append(argv[0])
        return 0.5

    monkeypatch.setattr(timing, "_timed_run", timed_run)
    times = timing.interleaved({"a": ["a"], "b": ["b"], "c": ["c"]}, 3)
    assert ran == ["a", "b", "c", "a", "b", "c", "b", "c", "a", "c", "a", "b"]
    assert times == {"a": [0.5] * 3, "b": [0.5] * 3, "c": [0.5] * 3}
    assert results.DETAILS["timings_s"] == times


def test_a_fresh_process_is_timed_and_a_failure_stops_the_bench() -> None:
    assert timing._timed_run([timing.PY, "-c", "pass"]) > 0
    with pytest.raises(SystemExit, match="failed"):
        timing._timed_run([timing.PY, "-c", "raise SystemExit(3)"])


def test_medians_and_quartiles_in_milliseconds() -> None:
    xs = [0.010, 0.020, 0.030, 0.040, 0.050]
    assert timing.med_ms(xs) == 30.0
    assert timing.spread("r", xs) == "r: median 30.0 ms, quartiles 15.0-45.0 ms"
    assert timing.report_cmd(timing.REPO, "--since", "1")[1:5] == [
        "-m",
        "vllm_ledger",
        "report",
        "--json",
    ]
