"""The exporter's metric families of one scrape, pure (observe/families.py)."""

from __future__ import annotations

from pathlib import Path

from tests.ledgers import ev, write_ledger
from vllm_ledger import names
from vllm_ledger.observe.families import families
from vllm_ledger.observe.gpu import GpuReading
from vllm_ledger.read.report import build_report

T0 = 1_800_000_000


def test_a_report_alone_is_served_as_one_pair_with_its_counters(tmp_path: Path) -> None:
    write_ledger(tmp_path, "r1", start_ts=T0, end_ts=T0 + 60, events=[ev(T0 + 5, 40, 7, 16)])
    report = build_report([tmp_path], at_ts=T0 + 61, clock=lambda: T0 + 61)
    fams = {f.name: f for f in families(report, [], report_seconds=0.5)}
    assert fams[names.LEDGER_REPORT_OK].samples[0].value == 1.0
    assert fams[names.LEDGER_REPORT_SECONDS].samples[0].value == 0.5
    prompt = next(f for f in fams.values() if f.type == "counter" and "prompt" in f.name)
    assert [s.value for s in prompt.samples if s.name.endswith("_total")] == [40.0]
    assert fams[names.LEDGER_GPUS].samples[0].value == 0.0


def test_a_failed_read_serves_report_ok_0_and_no_counters() -> None:
    fams = families(None, [])
    ok = next(f for f in fams if f.name == names.LEDGER_REPORT_OK)
    assert ok.samples[0].value == 0.0
    assert not [f for f in fams if f.type == "counter"]


def test_a_gpu_reading_it_lacks_has_no_sample() -> None:
    gpu = GpuReading(0, "GPU-x", "H200", None, 50.0, 10, 100, 60.0)
    fams = {f.name: f for f in families(None, [gpu])}
    assert fams[names.LEDGER_GPU_POWER_WATTS].samples == []
    util = fams[names.LEDGER_GPU_UTILIZATION_PERCENT].samples[0]
    assert (tuple(util.labels.values()), util.value) == (("0", "GPU-x", "H200"), 50.0)
