"""The dashboard's rows on vLLM itself (observe/panels_vllm.py)."""

from __future__ import annotations

from vllm_ledger.names import VLLM_INTER_TOKEN_LATENCY_SECONDS, VLLM_TIME_TO_FIRST_TOKEN_SECONDS
from vllm_ledger.observe.panels_vllm import TPOT, TTFT, VLLM_ROWS


def test_the_rows_in_order() -> None:
    assert [title for title, _panels in VLLM_ROWS] == [
        "Now: how is it doing",
        "Experience: how fast it feels",
        "Headroom: how much is left",
    ]


def test_the_latency_panels_read_the_histograms_buckets() -> None:
    assert f"{VLLM_TIME_TO_FIRST_TOKEN_SECONDS}_bucket" == TTFT
    assert f"{VLLM_INTER_TOKEN_LATENCY_SECONDS}_bucket" == TPOT
    experience = dict(VLLM_ROWS)["Experience: how fast it feels"]
    assert [t.count(TTFT) for p in experience[:1] for t, _legend in p.targets] == [1, 1, 1]
    assert [t.count(TPOT) for p in experience[1:] for t, _legend in p.targets] == [1, 1, 1]


def test_every_target_is_filtered_by_the_chosen_instances() -> None:
    for _title, panels in VLLM_ROWS:
        for p in panels:
            for expr, _legend in p.targets:
                assert "$instance" in expr or expr == "vector($max_model_len)", p.title
