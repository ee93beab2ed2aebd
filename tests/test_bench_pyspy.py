"""The profile's reading of py-spy's raw output (bench/pyspy.py): samples per thread, and per
part of the code for the recorder, the maintenance thread and the main thread, where the
probe's package and clock count as the clock only as the innermost frame."""

from __future__ import annotations

from bench.pyspy import parse_raw

PROBE = "wrapper (vllm_ledger_bench_probe/timers.py:40)"
CLOCK = "wrap_call (vllm_ledger_bench_mwclock.py:162)"
MW = "__call__ (vllm_ledger/write/middleware.py:156)"


def _line(tid: int, name: str, frames: list[str], n: int) -> str:
    return f"thread ({tid}): {name};{';'.join(frames)} {n}"


def test_samples_are_counted_per_thread_and_per_part() -> None:
    raw = "\n".join(
        [
            _line(1, "vllm-ledger-recorder", ["_run (x.py:1)", "commit_batch (w.py:2)"], 3),
            _line(1, "vllm-ledger-recorder", ["_run (x.py:1)", "_take_in (x.py:9)"], 2),
            _line(2, "vllm-ledger-maintenance", ["run (m.py:1)", "compact_file (c.py:3)"], 4),
            _line(
                3, "MainThread", ["loop (a.py:1)", PROBE, "PrometheusStatLogger.record (p:1)"], 5
            ),
            _line(3, "MainThread", ["loop (a.py:1)", "LedgerStatLogger.record (l:1)", PROBE], 6),
            _line(3, "MainThread", ["loop (a.py:1)", MW, "loads (json/decoder.py:1)"], 7),
            _line(3, "MainThread", ["loop (a.py:1)", "NullMiddleware.__call__ (x:1)", PROBE], 8),
            _line(3, "MainThread", ["loop (a.py:1)", CLOCK, "app (vllm/api.py:1)"], 9),
            _line(3, "MainThread", ["loop (a.py:1)", "serve (vllm/engine.py:1)"], 10),
            "not a sample line",
        ]
    )
    d = parse_raw(raw)
    assert d["threads"] == {
        "MainThread": 45,
        "vllm-ledger-recorder": 5,
        "vllm-ledger-maintenance": 4,
    }
    assert d["recorder"] == {"flush: commit_batch (SQLite)": 3, "take in / accumulate events": 2}
    assert d["maintenance"] == {"compact finished files": 4}
    assert d["main"] == {
        "vLLM's PrometheusStatLogger.record()": 5,
        "ledger record() (plugin hot path)": 6,
        "ledger middleware (its own frames)": 7,
        "the probe's middleware clock and control": 8,
        "everything else (vLLM serving)": 19,
    }
