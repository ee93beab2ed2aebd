"""doctor/agreement.py, pure: what ``verify`` found, as the agreement row. The check against a
real /metrics is tests/test_doctor.py's."""

from __future__ import annotations

from vllm_ledger.doctor.agreement import agreement_fix, agreement_row
from vllm_ledger.read.verify import Difference, OtherServer, VerifyResult

URL = "http://127.0.0.1:8000/metrics"
FIGURES = {"input": 1065, "output": 121, "cached": 576, "requests": 12}


def test_equal_figures_pass_and_are_named() -> None:
    row = agreement_row(VerifyResult("run-a", FIGURES, FIGURES, (), 0.0), URL)
    assert (row.check, row.passed, row.fix) == ("agreement", True, "")
    assert row.checked == (
        f"run run-a: input 1,065, output 121, cached 576, requests 12, equal to {URL}"
    )


def test_a_difference_that_stayed_is_named_with_its_sign() -> None:
    diff = Difference("output", "vllm:generation_tokens_total", 121, 1121)
    row = agreement_row(VerifyResult("run-a", FIGURES, FIGURES, (diff,), 10.2), URL)
    assert not row.passed
    assert row.checked == (
        "run run-a after 10 s: output: ledger 121 vs vllm:generation_tokens_total 1,121 "
        "(diff -1,000)"
    )
    assert row.fix.startswith("run it again when traffic is quiet")


def test_another_servers_metrics_is_not_a_difference() -> None:
    other = OtherServer(created_ts=1_800_003_600.0, run_start_ts=1_800_000_000.0)
    row = agreement_row(VerifyResult("run-a", FIGURES, FIGURES, (), 0.0, other), URL)
    assert not row.passed
    assert row.checked == f"run run-a: {other.explain()}"
    assert ", 3,600 s after this run started (" in row.checked
    assert row.fix == "point --metrics-url at the vLLM whose ledger is under --root"


def test_the_fix_for_an_unreachable_metrics_names_the_url() -> None:
    assert agreement_fix(URL) == (
        f"check that vLLM serves {URL} and that --root is the ledger root it writes "
        "(VLLM_LEDGER_DIR)"
    )
