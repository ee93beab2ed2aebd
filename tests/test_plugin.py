"""The plugin class, built against vLLM's real VllmConfig and real stats objects."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from vllm.config import ParallelConfig, VllmConfig
from vllm.v1.metrics.loggers import AggregateStatLoggerBase
from vllm.v1.metrics.stats import IterationStats

from tests.faults.vllm_stats import iteration
from vllm_ledger.plugin import LedgerStatLogger
from vllm_ledger.read.report import build_report


def _config(count: int, rank: int) -> VllmConfig:
    return VllmConfig(
        parallel_config=ParallelConfig(_api_process_count=count, _api_process_rank=rank)
    )


def _iteration(
    ts: float, prompt: int, cached: int, gen: int, finished: list[tuple[int, float]]
) -> IterationStats:
    # A recognisable request id: the privacy test looks for it in the ledger files.
    return iteration(ts, prompt, cached, gen, tuple(finished), request_id="req-secret-42")


@pytest.fixture
def ledger_env(ledger_env: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """tests/conftest.py's root, with the rank-0 maintenance pass left on: it is what the entry
    point adds to the write side's logger."""
    monkeypatch.delenv("VLLM_LEDGER_MAINTENANCE", raising=False)
    return ledger_env


def test_is_an_aggregate_stat_logger() -> None:
    assert issubclass(LedgerStatLogger, AggregateStatLoggerBase)


def test_identity_from_real_config(ledger_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = LedgerStatLogger(_config(2, 1), [0, 1])
    assert p.recorder is not None
    ident = p.recorder.identity
    assert (ident.run_id, ident.writer_rank, ident.expected_writers) == ("run-a", 1, 2)
    assert ident.engine_indexes == (0, 1)
    p.shutdown()
    monkeypatch.setenv("VLLM_LEDGER_WRITERS", "8")
    p8 = LedgerStatLogger(_config(2, 0), [0, 1])
    assert p8.recorder is not None and p8.recorder.identity.expected_writers == 8
    p8.shutdown()


def test_run_id_is_shared_by_siblings_and_new_per_launch(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("VLLM_LEDGER_RUN_ID", raising=False)
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(tmp_path))
    # Two API processes of one launch are siblings: same parent, same run id.
    code = (
        "import os,sys; sys.path.insert(0, %r)\n"
        "from vllm_ledger.write.plugin import identity_from_config\n"
        "class P: _api_process_count=2; _api_process_rank=int(sys.argv[1])\n"
        "class C: parallel_config=P(); model_config=None\n"
        "print(identity_from_config(C(), [0], os.environ).run_id)\n"
    ) % str(Path(__file__).resolve().parent.parent)
    launcher = (
        "import subprocess,sys\n"
        f"outs=[subprocess.run([sys.executable,'-c',{code!r},str(i)],capture_output=True,text=True).stdout"
        " for i in range(2)]\n"
        "print(outs[0].strip()); print(outs[1].strip())\n"
    )
    first = subprocess.run(
        [sys.executable, "-c", launcher], capture_output=True, text=True
    ).stdout.split()
    second = subprocess.run(
        [sys.executable, "-c", launcher], capture_output=True, text=True
    ).stdout.split()
    assert len(first) == 2 and first[0] == first[1]
    assert len(second) == 2 and second[0] == second[1]
    assert first[0] != second[0]


def test_records_real_stats_exactly(ledger_env: Path) -> None:
    p = LedgerStatLogger(_config(1, 0), [0, 1])
    t0 = time.time() - 5
    p.record(None, _iteration(t0, 100, 64, 3, []), engine_idx=0)
    p.record(None, _iteration(t0 + 1, 40, 0, 5, [(10, 0.5), (1, 0.01)]), engine_idx=1)
    p.record(None, None, engine_idx=0)  # scheduler-only calls carry no tokens
    p.shutdown()
    assert p.faults_total == 0
    r = build_report([ledger_env], by="engine")
    total = r.window("total")
    assert (total.input_tokens, total.cached_tokens, total.output_tokens) == (140, 64, 8)
    assert (total.requests, total.decode_tokens) == (2, 9)
    assert total.decode_seconds == pytest.approx(0.51)
    assert {row.key: row.windows[-1].input_tokens for row in r.breakdown} == {"0": 100, "1": 40}
    raw = b"".join(f.read_bytes() for f in ledger_env.rglob("*") if f.is_file())
    assert b"req-secret-42" not in raw


def test_disable_switch(ledger_env: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("VLLM_LEDGER_DISABLE", "1")
    p = LedgerStatLogger(_config(1, 0), [0])
    assert p.recorder is None
    p.record(None, _iteration(time.time(), 10, 0, 1, []))
    p.shutdown()
    assert not ledger_env.exists()


class _Weird:
    iteration_timestamp = "now"


@pytest.mark.parametrize(
    "bad",
    [
        object(),
        _Weird(),
        "not stats",
        42,
    ],
)
def test_record_never_raises_on_garbage(ledger_env: Path, bad: object) -> None:
    p = LedgerStatLogger(_config(1, 0), [0])
    p.record(None, bad)
    p.record(bad, bad, bad, engine_idx=bad)  # type: ignore[arg-type]
    assert p.faults_total == 2
    assert p.recorder is not None and p.recorder.rejected_total == 2
    p.shutdown()


def test_record_rejects_out_of_range_numbers(ledger_env: Path) -> None:
    p = LedgerStatLogger(_config(1, 0), [0])
    now = time.time()
    neg = _iteration(now, 10, 0, 1, [])
    neg.num_generation_tokens = -5
    huge = _iteration(now, 10, 0, 1, [])
    huge.num_generation_tokens = 2**80
    nan = _iteration(now, 10, 0, 1, [(3, float("nan"))])
    for it in (neg, huge, nan):
        p.record(None, it)
    p.shutdown()  # a finished request's numbers are judged on the recorder's thread
    assert p.recorder is not None and p.recorder.rejected_total == 3
    total = build_report([ledger_env], at_ts=now + 2).window("total")
    assert total.output_tokens == 0
    assert total.problems.get("rejected_input") == 3
    assert total.complete is False


def test_loads_through_vllms_own_plugin_loader_from_a_bundle(plugin_bundle: Path) -> None:
    code = (
        "from vllm.v1.metrics.loggers import load_stat_logger_plugin_factories as f\n"
        "print([c.__module__ + '.' + c.__name__ for c in f()])\n"
    )
    env = {"PYTHONPATH": str(plugin_bundle), "PATH": "/usr/bin:/bin"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert "vllm_ledger.plugin.LedgerStatLogger" in out.stdout, out.stderr[-2000:]


def test_an_installed_plugin_records_only_where_a_root_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Switching the ledger on is explicit: without VLLM_LEDGER_DIR the plugin (found through its
    entry point in every `vllm serve` of the environment it is installed in) writes nothing,
    not even to the default root."""
    monkeypatch.delenv("VLLM_LEDGER_DIR", raising=False)
    monkeypatch.delenv("VLLM_LEDGER_DISABLE", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    p = LedgerStatLogger(_config(1, 0), [0])
    assert p.recorder is None
    p.record(None, _iteration(time.time(), 10, 0, 1, []))
    p.shutdown()
    assert not (tmp_path / "xdg").exists() and not (tmp_path / "home").exists()
