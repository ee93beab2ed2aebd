"""formats/advise.py: the text and JSON of an Advice built by hand (nothing sampled); a reading
from an answer the store called partial is marked INCOMPLETE and the answer named."""

from __future__ import annotations

import dataclasses
import json

from vllm_ledger.formats.advise import render_json, render_text
from vllm_ledger.plan.advise import RULES, Advice, Verdict, advise
from vllm_ledger.plan.advise_readings import Readings
from vllm_ledger.plan.prom import Said

KV, COMPUTE, PREFILL, POWER = RULES
FULL = Readings(
    seconds=20.0,
    kv_cache_usage=0.95123456,
    num_waiting=3.0,
    num_running=7.5,
    gpu_util_percent=98.25,
    ttft_p99_seconds=5.123456789,
    num_ttft=20,
    power_watts=430.0,
    power_limit_watts=450.0,
    gen_tokens_per_s=1234.56789,
    gen_tokens_per_s_halves=(1200.0, 1210.0),
    source="test",
)
EMPTY = Readings(10.0, None, None, None, None, None, 0, None, None, None, None, "nothing")


def test_text_lists_the_readings_and_a_met_rule_with_its_action() -> None:
    advice = Advice(FULL, (Verdict(KV, "met", "why kv"), Verdict(PREFILL, "missed", "why not")))
    assert render_text(advice) == (
        "readings over 20.0 s from test\n"
        "  KV-cache usage    95.1 %\n"
        "  waiting requests  3.00\n"
        "  running requests  7.50\n"
        "  GPU utilisation   98.2 %\n"
        "  TTFT P99          5.123 s (20 requests)\n"
        "  power             430 W of 450 W limit\n"
        "  throughput        1234.6 generation tokens/s (halves 1200.0 -> 1210.0)\n"
        "\n"
        f"[met] kv-capacity: {KV.when} (why kv)\n"
        f"    diagnosis: {KV.diagnosis}; action: {KV.action}\n"
        f"[not triggered] scheduling-prefill: {PREFILL.when} (why not)\n"
        "\n"
        "met: kv-capacity\n"
    )


def test_text_says_n_a_and_names_what_cannot_be_judged() -> None:
    advice = Advice(
        EMPTY, (Verdict(COMPUTE, "not judgeable", "no x"), Verdict(POWER, "missed", "low"))
    )
    text = render_text(advice)
    assert text.count(" n/a\n") == 7
    assert text.endswith("met: none of the judged rules\nnot judgeable: compute-bound (no x)\n")
    power = dataclasses.replace(EMPTY, power_watts=300.0)
    assert "  power             300 W\n" in render_text(Advice(power))


def test_json_rounds_the_readings_and_lists_every_rule() -> None:
    advice = Advice(FULL, (Verdict(KV, "met", "why kv"), Verdict(PREFILL, "missed", "why not")))
    doc = json.loads(render_json(advice))
    assert (doc["source"], doc["seconds"], doc["met"]) == ("test", 20.0, ["kv-capacity"])
    assert doc["readings"] == {
        "kv_cache_usage": 0.9512,
        "num_waiting": 3.0,
        "num_running": 7.5,
        "gpu_util_percent": 98.25,
        "ttft_p99_seconds": 5.123457,
        "num_ttft": 20,
        "power_watts": 430.0,
        "power_limit_watts": 450.0,
        "gen_tokens_per_s": 1234.5679,
        "gen_tokens_per_s_halves": [1200.0, 1210.0],
    }
    assert doc["rules"][1] == {
        "rule": "scheduling-prefill",
        "state": "missed",
        "why": "why not",
        "diagnosis": PREFILL.diagnosis,
        "action": PREFILL.action,
    }
    empty = json.loads(render_json(Advice(EMPTY)))
    assert empty["readings"]["kv_cache_usage"] is None
    assert empty["readings"]["gen_tokens_per_s_halves"] is None
    assert (empty["rules"], empty["met"]) == ([], [])
    assert doc["partial_answers"] == {} == empty["partial_answers"]


def test_readings_from_partial_answers_are_marked_and_named() -> None:
    said = {
        "kv_cache_usage": Said(partial=True),
        "power_limit_watts": Said(warnings=("store a did not answer",)),
    }
    r = dataclasses.replace(FULL, said={**said, "num_waiting": Said(infos=("i",))})
    advice = advise(r)
    text = render_text(advice)
    assert "  KV-cache usage    95.1 % (INCOMPLETE)\n" in text
    assert "  waiting requests  3.00\n" in text  # an info says nothing is missing
    assert "  power             430 W of 450 W limit (INCOMPLETE)\n" in text
    assert f"[not judgeable] kv-capacity: {KV.when} (a partial answer for KV-cache usage)\n" in text
    assert text.endswith(
        "not judgeable: kv-capacity (a partial answer for KV-cache usage), power-efficiency "
        "(a partial answer for power limit)\n"
        "\n"
        "INCOMPLETE: the readings marked come from answers the store called partial or gave a "
        "warning with; no rule is judged on them\n"
        "  the store's answer to the KV-cache usage query is partial (isPartial): some of its "
        "storage nodes did not answer, so an engine's or a GPU's series may be missing "
        "(docs/cost-and-capacity.md#a-partial-answer)\n"
        "  the store's answer to the power limit query came with a warning: store a did not "
        "answer\n"
    )
    doc = json.loads(render_json(advice))
    assert doc["partial_answers"] == {
        "kv_cache_usage": {"is_partial": True, "warnings": [], "warnings_left_out": 0},
        "power_limit_watts": {
            "is_partial": False,
            "warnings": ["store a did not answer"],
            "warnings_left_out": 0,
        },
    }
    assert doc["readings"] == json.loads(render_json(advise(FULL)))["readings"]
    assert {v["rule"]: v["state"] for v in doc["rules"]}["kv-capacity"] == "not judgeable"
