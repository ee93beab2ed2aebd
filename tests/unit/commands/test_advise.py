"""``vllm-ledger advise``: the flags it refuses before reading anything (a baseline without a
Prometheus, --emit-flags without a baseline or with --json, too many samples); readings from an
answer the store called partial, named in the text and the JSON, no rule judged on them, and a
baseline from one proposes no threshold; the exit status still 0 (advise has none for it).
The decision table is tests/unit/plan/test_advise.py's, the baseline
tests/unit/plan/test_baseline.py's."""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest

from tests.inproc import run_cli
from tests.unit.plan.test_advise_readings import partial_store
from tests.unit.plan.test_baseline import END, whole_store
from vllm_ledger import cli
from vllm_ledger.commands import advise as advise_command
from vllm_ledger.commands.advise import MAX_SAMPLES
from vllm_ledger.plan.advise_readings import take_readings
from vllm_ledger.plan.baseline import read_baseline


def test_cli_errors() -> None:
    code, out, err = run_cli("advise", "--baseline", "3d", "--metrics-url", "http://127.0.0.1:1/m")
    assert (code, out) == (2, "")
    assert "--baseline reads history from a Prometheus: add --prometheus URL" in err
    code, out, err = run_cli("advise", "--metrics-url", "http://127.0.0.1:1/m", "--emit-flags")
    assert (code, out) == (2, "")
    assert "--emit-flags prints a baseline's thresholds: add --baseline 3d" in err
    code, out, err = run_cli(
        "advise", "--baseline", "3d", "--prometheus", "http://127.0.0.1:1", "--json", "--emit-flags"
    )
    assert (code, out) == (2, "")
    assert "give --emit-flags or --json, not both" in err
    code, out, err = run_cli("advise", "--baseline", "10m", "--prometheus", "http://127.0.0.1:1")
    assert (code, out) == (2, "")
    assert "--baseline" in err and "out of range" in err


def test_more_samples_than_held_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert MAX_SAMPLES == 3600
    argv = ["advise", "--metrics-url", "http://127.0.0.1:1/metrics", "--sample-for", "1h"]
    assert cli.main([*argv, "--interval", "0.5"]) == 2  # 7200 samples
    assert capsys.readouterr().err == (
        "vllm-ledger: error: --sample-for 1h at --interval 500ms is more than 3600 samples: use "
        "a larger --interval, e.g. --interval 1s\n"
    )


def test_readings_from_a_partial_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    fetch = partial_store({"vllm:num_requests_waiting": {"warnings": ["store a did not answer"]}})
    monkeypatch.setattr(
        advise_command, "take_readings", functools.partial(take_readings, fetch=fetch)
    )
    code, out, _err = run_cli("advise", "--prometheus", "http://v:8481")
    assert code == 0
    assert "  waiting requests  1.00 (INCOMPLETE)\n" in out
    assert "[not judgeable] kv-capacity: " in out
    assert out.endswith(
        "INCOMPLETE: the readings marked come from answers the store called partial or gave a "
        "warning with; no rule is judged on them\n"
        "  the store's answer to the waiting requests query came with a warning: store a did "
        "not answer\n"
    )
    code, out, _err = run_cli("advise", "--prometheus", "http://v:8481", "--json")
    doc = json.loads(out)
    assert code == 0 and list(doc["partial_answers"]) == ["num_waiting"]
    assert doc["rules"][0]["why"] == "a partial answer for waiting requests"


def test_a_baseline_from_a_partial_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    def read(beside: dict[str, dict[str, Any]]) -> None:
        fetch = whole_store(beside)
        baseline = functools.partial(read_baseline, fetch=fetch, clock=lambda: float(END))
        monkeypatch.setattr(advise_command, "read_baseline", baseline)

    argv = ("advise", "--baseline", "3d", "--prometheus", "http://v:8481", "--tz", "UTC")
    read({})
    code, out, err = run_cli(*argv, "--emit-flags")
    assert (code, out, err) == (0, "vllm-ledger observability --ttft-p99-seconds 2.25 "
                                   "--kv-cache-threshold 0.7 --queue-waiting 3\n", "")  # fmt: skip
    read({"time_to_first_token": {"warnings": ["store 10.0.0.7:10901 did not answer"]}})
    code, out, err = run_cli(*argv)
    assert code == 0 and "as flags" not in out
    assert out.endswith(
        "\nno thresholds: the store called its answer to the TTFT P99 query partial or gave a "
        "warning with it (a server's series may be missing): keep observability's defaults and "
        "ask again once every node of the store answers\n"
        "  the store's answer to the TTFT P99 query came with a warning: store 10.0.0.7:10901 "
        "did not answer\n"
    )
    code, out, err = run_cli(*argv, "--emit-flags")
    assert (code, out) == (0, "vllm-ledger observability\n")  # no flag: the defaults stay
    assert err.splitlines()[1:] == [
        "vllm-ledger advise: the store's answer to the TTFT P99 query came with a warning: "
        "store 10.0.0.7:10901 did not answer"
    ]
    code, out, err = run_cli(*argv, "--json")
    assert code == 0 and list(json.loads(out)["partial_answers"]) == ["ttft_p99_seconds"]
