"""The bench's serve part (bench/parts/serve.py): a row per pair for each figure, then the median
of the pair ratios judged against its target, for one API process and for DP 2 x API 2, and the
notes of the spread and of what the medians can resolve."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from bench import results
from bench.parts import serve as part
from bench.serve import analyse


def _server(tokens_per_s: float) -> dict[str, Any]:
    return {
        "tokens_per_s": tokens_per_s,
        "api_cpu_ms_per_1k_tokens": 100.0,
        "api_ctx_switches_per_1k_tokens": 200.0,
        "api_cpu_ms_per_s": 100.0,
        "api_ctx_switches_per_s": 200.0,
        "quarters_tokens_per_s": [tokens_per_s] * 4,
        "other_work_cores": tokens_per_s / 10_000,
        "seconds": 40.0,
        "start_s": 30.0,
        "tokens": 40_960,
    }


def _doc(ratios: list[float], api_processes: int) -> dict[str, Any]:
    pairs = []
    for i, r in enumerate(ratios):
        pairs.append(
            {
                "pair": i + 1,
                "order": "off on" if i % 2 == 0 else "on off",
                "off": _server(1000.0),
                "on": _server(1000.0 * r),
                "ratio": r,
                "api_cpu_ratio": 1.0,
                "ctx_ratio": 1.0,
            }
        )
    return {
        "api_processes": api_processes,
        "requests": 640,
        "concurrency": 32,
        "pairs": pairs,
        "analysis": analyse(pairs),
    }


def test_rows_per_pair_then_the_median_against_its_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(results, "ROWS", [])
    monkeypatch.setattr(results, "DETAILS", {})
    monkeypatch.setattr(part, "DETAILS", results.DETAILS)
    results.begin("serve")
    docs = iter([_doc([0.97, 1.0, 0.99], 1), _doc([1.0, 0.95], 2)])
    monkeypatch.setattr(part, "ab_pairs", lambda *a, **k: next(docs))
    args = argparse.Namespace(pairs=3, pairs_dp2=2, serve_tokens=40_960, serve_concurrency=32)
    part.bench_serve(args)
    names = [r["what"] for r in results.ROWS]
    assert len(names) == 3 * 4 + 3 * 3
    assert names[:4] == [
        "  pair 1 (off on): ledger on",
        "  pair 2 (on off): ledger on",
        "  pair 3 (off on): ledger on",
        "serving throughput, ledger on, median of 3 pairs",
    ]
    assert "DP 2 x API 2: API processes' CPU per 1k tokens, ledger on" in names
    medians = [r for r in results.ROWS if "pair " not in r["what"]]
    assert [(r["ratio"], r["met"]) for r in medians[:3]] == [(0.99, True), (1.0, True), (1.0, True)]
    assert medians[3]["ratio"] == 0.975 and medians[3]["met"] is False
    notes = results.DETAILS["notes"]["serve"]
    assert [n.split(":")[0] for n in notes] == [
        "serve one API process",
        "serve one API process pair ratios (on/no plugin)",
        "serve one API process per second of load instead of per token",
        "serve one API process spread",
        "serve DP 2 x API 2",
        "serve DP 2 x API 2 pair ratios (on/no plugin)",
        "serve DP 2 x API 2 per second of load instead of per token",
        "serve DP 2 x API 2 spread",
        "serve DP 2 x API 2",
        "serve resolution",
    ]
    assert results.DETAILS["serve"]["api_processes"] == 1
