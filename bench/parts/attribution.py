"""The cost of whose tokens (docs/attribution.md), each figure beside its baseline from the same
run: the parts ``join``, ``middleware`` and ``attrdisk`` of ``bench/run.py``.

* ``join``: ``record()`` with the attribution join on a batch-256 ``IterationStats`` with 8
  finished requests, half of them tagged by the real middleware, against vLLM's
  ``PrometheusStatLogger.record()`` on the same iterations (``bench/joinpath.py``);
* ``middleware``: the real ``LedgerMiddleware``'s CPU per request against the app alone, for a
  1 KB chat body and 400 KB ones in 64 KiB chunks, beside the API process's own CPU for such a
  request (``bench/mwcost.py``);
* ``attrdisk``: a ledger file's growth in a day of 1,000 keys x 1,000 users at 10 requests/s,
  and what stays after compaction, against the same day without attribution
  (``bench/attrdisk.py``).

Each part takes the bench's ``row`` and ``note`` (``bench/results.py``) and returns nothing; the
figures also go to ``details`` under the part's name.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
MODEL = REPO / "build" / "tiny-model"
Row = Callable[..., None]
Note = Callable[[str], None]


def _child(py: str, script: str, *args: str) -> dict[str, Any]:
    """Run a bench child (``bench/SCRIPT``) on the venv's python; its last line of JSON."""
    p = subprocess.run(
        [py, str(REPO / "bench" / script), str(REPO), *args], capture_output=True, text=True
    )
    if p.returncode != 0:
        print(p.stderr[-3000:])
        raise SystemExit(f"bench/{script} failed")
    doc: dict[str, Any] = json.loads(p.stdout.strip().splitlines()[-1])
    return doc


# ---- join: record() with the join ---------------------------------------------------------


def bench_join(py: str, row: Row, note: Note, details: dict[str, Any]) -> None:
    d = _child(py, "joinpath.py", str(MODEL))
    details["join"] = d
    led, prom, take = d["ledger_us"], d["prom_us"], d["take_in_us_per_event"]
    ratio = led / prom
    row(
        "record() with the join (batch 256, 8 finished, 4 tagged)",
        led,
        "us",
        "<= 5 us and <= 1/30 of baseline",
        prom,
        "PrometheusStatLogger.record()",
        ratio,
        led <= 5 and ratio <= 1 / 30,
    )
    row(
        "  the recorder thread's take-in and join of that event",
        take,
        "us",
        "-",
        prom,
        "PrometheusStatLogger.record()",
        take / prom,
        None,
    )
    row(
        "  record() + its take-in and join, per call (both threads)",
        led + take,
        "us",
        "-",
        prom,
        "PrometheusStatLogger.record()",
        (led + take) / prom,
        None,
    )
    want = d["calls"] * 4
    got = d["requests"]
    row(
        "  finished requests credited by the join (4 a call)",
        got.get("credited", 0),
        "requests",
        "every tagged one; the rest untagged",
        want,
        "tagged by the middleware",
        got.get("credited", 0) / want,
        got.get("credited") == want and got.get("untagged") == want and d["drops"] == 0,
    )
    note(
        f"join: medians of {d['calls'] // 1000} rounds of 1000 calls, CPU time of the calling "
        "thread (thread_time), the two loggers' rounds alternating on the same fresh iterations; "
        f"quartiles: ledger {d['ledger_quartiles_us'][0]:.2f}-{d['ledger_quartiles_us'][1]:.2f} "
        f"us, PrometheusStatLogger {d['prom_quartiles_us'][0]:.0f}-"
        f"{d['prom_quartiles_us'][1]:.0f} us; this machine ran sum(range(1000)) in "
        f"{d['reference_us']:.1f} us during the run (about 10 us on an idle modern core)"
    )
    note(
        "join: each call's 8 finished requests carry request_id (chatcmpl- and the 32 hex of "
        "their X-Request-Id), num_prompt_tokens 128, num_cached_tokens 64; 4 of them are in "
        "flight through the real LedgerMiddleware (tagged in the process's BOOK, their app "
        "waiting) while record() runs, and answered after the round. After each ledger round "
        "the recorder thread is woken and takes the round in (the join) before the next round "
        f"starts: {d['take_in_us_per_event']:.1f} us of its CPU per event, "
        f"{d['events_taken']:.0f} events; the ledger read back: {got}; "
        f"{d['drops']} events dropped, {d['middleware_faults']} middleware faults"
    )


# ---- middleware: CPU per request -----------------------------------------------------------


def bench_middleware(py: str, row: Row, note: Note, details: dict[str, Any]) -> None:
    d = _child(py, "mwcost.py", str(MODEL))
    details["middleware"] = d
    us = 1e6
    small = d["1 KB chat"]
    row(
        "middleware CPU per request, 1 KB chat body",
        small["added_s"] * us,
        "us",
        "<= 30 us more than the app",
        small["app_s"] * us,
        "the app alone (reads the body)",
        None,
        small["added_s"] * us <= 30,
    )
    _parts_rows(small, row)
    row(
        "middleware CPU per request with budgets on, 1 KB chat body",
        small["budgets_added_s"] * us,
        "us",
        "<= 10 us more than budgets off",
        small["mw_app_s"] * us,
        "the middleware + app, budgets off",
        None,
        small["budgets_added_s"] * us <= 10 and small["budgets_refused"] == 0,
    )
    for name in ("400 KB chat (prose)", "400 KB chat (code)"):
        b = d[name]
        api = b["api"]
        base = b["app_s"] + api["parse_s"] + api["template_s"] + api["tokenize_s"]
        row(
            f"middleware CPU per request, {name.replace(' chat (', ' ').rstrip(')')} chat",
            b["added_s"] * us,
            "us",
            "<= 1% of the API process's",
            base * us,
            "read, parse, template, tokenize",
            b["added_s"] / base,
            b["added_s"] / base <= 0.01,
        )
        parse = b["app_s"] + api["parse_s"] + api["template_s"]
        row(
            "  against the API process's CPU before tokenizing",
            b["added_s"] * us,
            "us",
            "-",
            parse * us,
            "read, json.loads + validate, template",
            b["added_s"] / parse,
            None,
        )
        _parts_rows(b, row)
    _middleware_notes(d, note)


def _parts_rows(b: dict[str, Any], row: Row) -> None:
    us = 1e6
    row(
        "  of which the body scan, timed alone",
        b["scan_s"] * us,
        "us",
        "-",
        b["added_s"] * us,
        "the middleware's whole cost",
        b["scan_s"] / b["added_s"],
        None,
    )
    row(
        "  the probe's clock on the middleware's own code",
        b["clock_own_s"] * us,
        "us",
        "-",
        b["added_s"] * us,
        "A/B difference (this row's check)",
        b["clock_own_s"] / b["added_s"],
        None,
    )


def _rest(b: dict[str, Any]) -> str:
    """The middleware's time past the scan and the key, or, where the parts timed alone add
    up to more than the whole (rounds of a few requests), a word that says so."""
    rest = b["added_s"] - b["scan_s"] - b["key_s"]
    return f"{rest * 1e6:.1f} us" if rest > 0 else "within the rounds' spread"


def _middleware_notes(d: dict[str, Any], note: Note) -> None:
    for name in ("1 KB chat", "400 KB chat (prose)", "400 KB chat (code)"):
        b = d[name]
        q = b["added_quartiles_s"]
        api = b.get("api")
        note(
            f"middleware, {name}: {b['bytes']:,} bytes in {b['chunks']} chunk(s), "
            f"{b['escaped_quotes']:,} escaped quotes; medians of {b['rounds']} rounds of "
            f"{b['requests_per_round']} requests per variant (app alone, middleware + app, "
            f"middleware + app under the probe's clock), rounds interleaved; added CPU per "
            f"round's pair quartiles {q[0] * 1e6:.1f}-{q[1] * 1e6:.1f} us; body scan alone "
            f"{b['scan_s'] * 1e6:.1f} us ({b['scan_steps']:.0f} structural steps), naming the "
            f"key (HMAC) {b['key_s'] * 1e6:.1f} us, the rest (the request's entry, its id, the "
            f"wrapped receive and send) {_rest(b)}; "
            f"json.loads of the whole body, for scale, {b['loads_s'] * 1e6:.1f} us; the clock's "
            "share per stretch "
            f"{b['clock_bias_s'] * 1e6:.2f} us, taken off; {b['tagged']:,} requests tagged, "
            f"{b['faults']} faults"
            + (
                f"; the API process's own CPU for it: json.loads + ChatCompletionRequest "
                f"{api['parse_s'] * 1e3:.2f} ms, chat template {api['template_s'] * 1e3:.2f} ms, "
                f"the tiny model's tokenizer {api['tokenize_s'] * 1e3:.0f} ms for "
                f"{api['tokens']:,} tokens"
                if api
                else ""
            )
        )
    note(
        "middleware: the real LedgerMiddleware (key, adapter, user on) around a minimal ASGI "
        "app that reads every chunk and joins them as Starlette's Request.body() does, driven "
        "in-process on one asyncio loop; the requests carry a bearer key and no X-Request-Id "
        "(the middleware makes one); CPU time of the thread (thread_time) per request. The API "
        "process's own CPU for a 400 KB request is taken in the same run: json.loads and vLLM's "
        "ChatCompletionRequest validation, the tiny model's chat template and tokenizer (vLLM's "
        "get_tokenizer); a real vLLM cannot take the request here (the tiny model's "
        "max_model_len is 1024), so sampling, detokenizing and the response are not in it"
    )


# ---- attrdisk: a file's growth in a day -----------------------------------------------------


def bench_attrdisk(row: Row, note: Note, details: dict[str, Any]) -> None:
    from bench import attrdisk

    days: dict[str, dict[str, Any]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-attrdisk-"))
    try:
        for i, pairing in enumerate(("independent", "user behind one key", "no attribution")):
            days[pairing] = attrdisk.write_day(tmp / str(i), pairing)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    details["attrdisk"] = days
    none = days["no attribution"]
    mb = 1e6
    for pairing in ("independent", "user behind one key"):
        d = days[pairing]
        label = "key and user drawn apart" if pairing == "independent" else "each user one key"
        row(
            f"ledger file after a day, 1,000 keys x 1,000 users ({label})",
            d["day"]["bytes"] / mb,
            "MB",
            "stated, bounded",
            none["day"]["bytes"] / mb,
            "the same day, no attribution",
            d["day"]["bytes"] / none["day"]["bytes"],
            None,
        )
        kept, kept_none = _in_use(d["kept"]), _in_use(none["kept"])
        per_request = (kept - kept_none) / d["requests"]
        row(
            "  what stays of that day past the 8-day horizon (pages in use)",
            kept / mb,
            "MB",
            "<= 3 rows a request",
            kept_none / mb,
            "no attribution",
            kept / kept_none,
            _rows_kept(d) <= 3 * d["requests"],
        )
        row(
            "  kept per request, for good",
            per_request,
            "bytes",
            "-",
            None,
            "",
            None,
            None,
        )
    _attrdisk_notes(days, note)


def _in_use(m: dict[str, Any]) -> int:
    return int(m["bytes"] - m["free_bytes"])


def _rows_kept(d: dict[str, Any]) -> int:
    rows = d["kept"]["rows"]
    return int(rows["attr_dims"] + rows["attr_hourly"] + rows["attr_daily"])


def _attrdisk_notes(days: dict[str, dict[str, Any]], note: Note) -> None:
    from bench import attrdisk

    for pairing, d in days.items():
        r0, r1 = d["day"]["rows"], d["kept"]["rows"]
        note(
            f"attrdisk, {pairing}: {d['requests']:,} finished requests in a day "
            f"({attrdisk.RATE_PER_S}/s), written in {d['write_s']:.0f} s; after the day "
            f"{d['day']['bytes']:,} bytes, rows {r0}; compacted at 10 days of age "
            f"({d['compaction']}): the file {d['kept']['bytes']:,} bytes of which "
            f"{d['kept']['free_bytes']:,} free pages, rows {r1}; faults {d['faults']}, "
            f"rejected {d['rejected']}"
        )
    note(
        "attrdisk: the bound: each finished request adds at most one row to attr_seconds "
        "(dropped past the 8-day horizon), attr_hourly and attr_daily (kept), and names at most "
        "one new attr_dims row (kept); the per-hour fold keeps at most 1,000 keys, 1,000 users "
        "and 1,000 tenants by name per file, so rows per hour are at most the hour's requests "
        "and at most 1,000 x 1,000 x 1,000 x the adapters: the requests bound it at any "
        "realistic rate, not the fold. The file's size does not shrink after compaction: the "
        "freed pages stay in the file (free pages, reused by later writes)"
    )
