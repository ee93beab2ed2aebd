"""The part ``serve``: a real vLLM with the ledger on against vLLM with no plugin loaded, in
interleaved pairs of fresh servers (``bench/serve.py``): a row per pair for each figure, the
median of the pair ratios against its target, and what the spread is made of. How the
servers are set up and what is read from ``/proc`` is in docs/performance.md.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

from bench.load import MAX_TOKENS, WARMUP_REQUESTS
from bench.results import DETAILS, f3, note, row
from bench.serve import ab_pairs

# The figures of each pair and their targets: (key in a server's figures, pair-ratio key, unit,
# target text, is the median ratio within it, pair row label, median row label).
SERVE_FIGURES: tuple[tuple[str, str, str, str, Callable[[float], bool], str, str], ...] = (
    (
        "tokens_per_s",
        "ratio",
        "tokens/s",
        ">= 0.98 of no plugin",
        lambda r: r >= 0.98,
        "ledger on",
        "serving throughput, ledger on, median of {n} pairs",
    ),
    (
        "api_cpu_ms_per_1k_tokens",
        "api_cpu_ratio",
        "ms",
        "<= 1.03 of no plugin",
        lambda r: r <= 1.03,
        "API CPU per 1k tokens, on",
        "  API process CPU per 1k tokens, ledger on",
    ),
    (
        "api_ctx_switches_per_1k_tokens",
        "ctx_ratio",
        "",
        "<= 1.2 of no plugin",
        lambda r: r <= 1.2,
        "API context switches per 1k tokens, on",
        "  API process context switches per 1k tokens, on",
    ),
)


def _serve_rows(d: dict[str, Any], prefix: str) -> None:
    """A row per pair for each figure, then the median of the pair ratios against its target."""
    pairs, a = d["pairs"], d["analysis"]
    for key, ratio, unit, target, ok, pair_label, median_label in SERVE_FIGURES:
        for p in pairs:
            row(
                f"  {prefix}pair {p['pair']} ({p['order']}): {pair_label}",
                p["on"][key],
                unit,
                "-",
                p["off"][key],
                "no plugin",
                p[ratio],
                None,
            )
        f = a[key]
        name = median_label.format(n=len(pairs))
        if d["api_processes"] > 1:
            name = name.replace("API process ", "API processes' ")
        row(
            f"{prefix}{name.strip()}" if prefix else name,
            f["on"],
            unit,
            target,
            f["off"],
            "no plugin (ratio: median of pairs)",
            f["ratio_median"],
            ok(f["ratio_median"]),
        )


def _serve_notes(d: dict[str, Any], label: str) -> None:
    a, n = d["analysis"], len(d["pairs"])
    t, c, x = a["tokens_per_s"], a["api_cpu_ms_per_1k_tokens"], a["api_ctx_switches_per_1k_tokens"]
    lo, hi = a["load_seconds_range"]
    note(
        f"serve {label}: {n} pairs, orders alternating (A B B A ...), every server fresh with the "
        f"same settings; {WARMUP_REQUESTS} warm-up requests, then {d['requests']} "
        f"requests x {MAX_TOKENS} tokens ({a['tokens_per_server']:,} generated "
        f"tokens per server), {d['concurrency']} in flight throughout; the measured load took "
        f"{lo:.0f}-{hi:.0f} s per server, start-up {a['start_seconds_range'][0]:.0f}-"
        f"{a['start_seconds_range'][1]:.0f} s"
    )
    note(
        f"serve {label} pair ratios (on/no plugin): tokens/s {t['ratio_min']:.3f}-"
        f"{t['ratio_max']:.3f} (standard error {t['ratio_se']:.3f}); API CPU per 1k tokens "
        f"{c['ratio_min']:.3f}-{c['ratio_max']:.3f} (se {c['ratio_se']:.3f}); context switches "
        f"per 1k tokens {x['ratio_min']:.3f}-{x['ratio_max']:.3f} (se {x['ratio_se']:.3f})"
    )
    cs, xs = a["api_cpu_ms_per_s"], a["api_ctx_switches_per_s"]
    note(
        f"serve {label} per second of load instead of per token: API CPU {cs['off']:.0f} ms/s "
        f"(no plugin) and {cs['on']:.0f} ms/s (on), median pair ratio "
        f"{f3(cs['ratio_median'])} ({f3(cs['ratio_min'])}-{f3(cs['ratio_max'])}); context "
        f"switches {xs['off']:.0f}/s and {xs['on']:.0f}/s, median pair ratio "
        f"{f3(xs['ratio_median'])} ({f3(xs['ratio_min'])}-{f3(xs['ratio_max'])}); between "
        f"servers of a side API CPU per second varies by {cs['between_servers_cv']['off']:.1%}"
        f" / {cs['between_servers_cv']['on']:.1%} (CV), per 1k tokens by "
        f"{c['between_servers_cv']['off']:.1%} / {c['between_servers_cv']['on']:.1%}: much of "
        "the API process's work comes with time, not tokens, so its figures per token also "
        "follow each server's throughput"
    )
    cv = t["between_servers_cv"]
    note(
        f"serve {label} spread: tokens/s within a server (quarters of the load) vary by "
        f"{a['within_server_cv']:.1%} (CV), servers of the same side by {cv['off']:.1%} (no "
        f"plugin) and {cv['on']:.1%} (on); API CPU per 1k tokens between servers "
        f"{c['between_servers_cv']['off']:.1%} / {c['between_servers_cv']['on']:.1%}; median "
        f"throughput ratio with the ledger server first {f3(a['ratio_when_on_first'])}, second "
        f"{f3(a['ratio_when_off_first'])}; other work on the machine took "
        f"{a['other_work_cores_range'][0]:.2f}-{a['other_work_cores_range'][1]:.2f} cores during "
        f"the loads (correlation with tokens/s {f3(a['corr_other_work_vs_tokens_per_s'])})"
    )


def bench_serve(args: argparse.Namespace) -> None:
    t = time.monotonic()
    d1 = ab_pairs(args.pairs, tokens=args.serve_tokens, concurrency=args.serve_concurrency)
    DETAILS["serve"] = d1
    print(f"  serve: one API process, {len(d1['pairs'])} pairs in {time.monotonic() - t:.0f} s")
    d2 = None
    if args.pairs_dp2:
        t = time.monotonic()
        d2 = ab_pairs(
            args.pairs_dp2,
            dp=2,
            tokens=args.serve_tokens,
            concurrency=args.serve_concurrency,
            label="DP 2 x API 2 ",
        )
        DETAILS["serve_dp2"] = d2
        print(f"  serve: DP 2 x API 2, {len(d2['pairs'])} pairs in {time.monotonic() - t:.0f} s")
    _serve_rows(d1, "")
    if d2 is not None:
        _serve_rows(d2, "DP 2 x API 2: ")
    _serve_notes(d1, "one API process")
    if d2 is not None:
        _serve_notes(d2, "DP 2 x API 2")
        if len(d2["pairs"]) < args.pairs:
            note(
                f"serve DP 2 x API 2: {len(d2['pairs'])} pairs, fewer than the "
                f"{len(d1['pairs'])} with one API process: each of its servers took "
                f"{d2['analysis']['start_seconds_range'][0]:.0f}-"
                f"{d2['analysis']['start_seconds_range'][1]:.0f} s to start on this machine, "
                "and the serving section is kept near 20 minutes"
            )
    _resolution_note(d1)


def _resolution_note(d1: dict[str, Any]) -> None:
    """How small a cost the medians of one API process's pairs could show."""
    a1 = d1["analysis"]
    res = a1["tokens_per_s"]["ratio_se"]
    note(
        f"serve resolution: with one API process the pair ratios' standard errors are "
        f"{res:.3f} (tokens/s), {a1['api_cpu_ms_per_1k_tokens']['ratio_se']:.3f} (API CPU per "
        f"1k tokens) and {a1['api_ctx_switches_per_1k_tokens']['ratio_se']:.3f} (context "
        f"switches per 1k tokens), so the medians of {len(d1['pairs'])} pairs cannot tell a "
        f"cost under about {2 * res:.0%}, {2 * a1['api_cpu_ms_per_1k_tokens']['ratio_se']:.0%} "
        f"and {2 * a1['api_ctx_switches_per_1k_tokens']['ratio_se']:.0%} from the noise on "
        "this machine; the profile part measures the ledger's own CPU and wakeups inside the "
        "API process directly"
    )
