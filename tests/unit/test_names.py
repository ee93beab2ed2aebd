"""names.py: every metric name is one its source really serves, the thresholds two parts share
are one object, the docs state them, and no other module spells a vLLM or DCGM name itself."""

from __future__ import annotations

import ast
import functools
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

from tests.ledgers import ev, write_ledger
from tests.vllm_source import vllm_metric_names
from vllm_ledger import names
from vllm_ledger.bot import message, poll
from vllm_ledger.format import overbudget
from vllm_ledger.observe import alert_rule
from vllm_ledger.observe.budgets import BudgetWatch
from vllm_ledger.observe.exporter import LedgerCollector
from vllm_ledger.observe.families import families
from vllm_ledger.observe.gpu import GpuReading
from vllm_ledger.plan import advise, ramp, ramp_load
from vllm_ledger.plan.budgets import load_budgets
from vllm_ledger.read import writer_state
from vllm_ledger.read.report import build_report

ROOT = Path(__file__).resolve().parents[2]
PKG = ROOT / "vllm_ledger"
DOCS = ROOT / "docs"
VLLM_METRICS = ROOT / "tests" / "data" / "vllm-0.32.0-metrics.txt"


def _constants() -> dict[str, Any]:
    return {k: v for k, v in vars(names).items() if k.isupper()}


def _strings(prefix: str) -> dict[str, str]:
    return {k: v for k, v in _constants().items() if isinstance(v, str) and v.startswith(prefix)}


# ---- the names ---------------------------------------------------------------------------------


def test_every_vllm_name_is_one_the_installed_vllm_serves() -> None:
    served = vllm_metric_names()
    ours = _strings("vllm:")
    assert len(ours) >= 12
    for const, name in sorted(ours.items()):
        if const == "VLLM_GPU_CACHE_USAGE_PERC_OLD":
            # The older releases' name, read only as a fallback: the installed vLLM has none.
            assert name not in served, f"{const}: vLLM serves {name} again"
            continue
        assert name in served, f"{const}: the installed vLLM serves no {name}"


def test_the_api_servers_other_names_are_on_a_real_vllm_metrics_page() -> None:
    page = {
        line.split("{")[0].split(" ")[0]
        for line in VLLM_METRICS.read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert names.PROCESS_START_TIME_SECONDS in page
    assert any(n.startswith(names.HTTP_REQUESTS_TOTAL) for n in page)
    for label in (names.MODEL_NAME_LABEL, names.ENGINE_LABEL, names.FINISHED_REASON_LABEL):
        assert f"{label}=" in VLLM_METRICS.read_text(), label


def test_the_two_time_per_output_token_histograms_are_told_apart() -> None:
    # The dashboard's TPOT is the inter-token latency; ramp's is vLLM's per-request mean.
    assert (
        names.VLLM_INTER_TOKEN_LATENCY_SECONDS != names.VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS
    )
    from vllm_ledger.observe.panels_vllm import TPOT

    assert TPOT == names.VLLM_INTER_TOKEN_LATENCY_SECONDS + "_bucket"
    source = inspect.getsource(ramp_load.server_counters)
    assert "VLLM_REQUEST_TIME_PER_OUTPUT_TOKEN_SECONDS" in source


def test_kv_usage_is_read_by_the_current_name_first() -> None:
    assert names.KV_CACHE_USAGE_METRICS[0] == names.VLLM_KV_CACHE_USAGE_PERC


def test_dcgm_names_are_dcgm_fields() -> None:
    ours = _strings("DCGM_")
    assert len(ours) == 7
    assert all(re.fullmatch(r"DCGM_FI_DEV_[A-Z_]+", v) for v in ours.values())


def _served_by_the_exporter(tmp_path: Path) -> set[str]:
    t0 = 1_800_000_000
    write_ledger(tmp_path / "l", "r1", start_ts=t0, end_ts=t0 + 60, events=[ev(t0 + 5, 40, 7, 16)])
    report = build_report([tmp_path / "l"], at_ts=t0 + 61, clock=lambda: t0 + 61)
    gpu = GpuReading(0, "GPU-x", "H200", 300.0, 50.0, 10, 100, 60.0)
    # Whose tokens and budgets: the collector's own read adds them (observe/whose.py,
    # observe/budgets.py), the enforcer's file's age where there is one.
    budgets = tmp_path / "budgets.toml"
    budgets.write_text('[[budget]]\nkey = "team-a"\ntokens = 100\n')
    overbudget.write(tmp_path / "l", [], written_ts=t0 + 60)
    watch = BudgetWatch.of(load_budgets(budgets), "UTC")
    whose = LedgerCollector(
        [tmp_path / "l"], tz="UTC", clock=lambda: t0 + 61, budgets=watch
    ).collect()
    return {
        fam.name + "_total" if fam.type == "counter" else fam.name
        for fam in (*families(report, [gpu]), *whose)
    }


def test_the_exporters_names_are_exactly_those_it_serves(tmp_path: Path) -> None:
    ours = _strings(names.EXPORTER_PREFIX + "_")
    assert set(ours) == {
        k for k in _constants() if k.startswith("LEDGER_") and not k.endswith("_LABEL")
    }
    served = _served_by_the_exporter(tmp_path)
    # Read by advise from an exporter that has it; this one's NVML gauges carry no power limit.
    not_served = {names.LEDGER_GPU_POWER_LIMIT_WATTS}
    assert set(ours.values()) - not_served == served
    assert not_served.isdisjoint(served)


def test_the_exporters_gpu_labels_are_dcgms(tmp_path: Path) -> None:
    t0 = 1_800_000_000
    write_ledger(tmp_path / "l", "r1", start_ts=t0, end_ts=t0 + 60, events=[ev(t0 + 5, 40, 7, 16)])
    report = build_report([tmp_path / "l"], at_ts=t0 + 61, clock=lambda: t0 + 61)
    gpu = GpuReading(0, "GPU-x", "H200", 300.0, 50.0, 10, 100, 60.0)
    power = next(f for f in families(report, [gpu]) if f.name == names.LEDGER_GPU_POWER_WATTS)
    assert tuple(power.samples[0].labels) == names.GPU_LABELS


# ---- the thresholds ----------------------------------------------------------------------------


def _default(fn: Any, param: str) -> Any:
    return inspect.signature(fn).parameters[param].default


def test_kv_cache_full_is_one_number_for_alerts_advise_and_ramp() -> None:
    full = names.KV_CACHE_FULL_FRACTION
    assert alert_rule.Thresholds().kv_cache_fraction is full
    assert advise.Thresholds().kv_usage is full
    assert _default(ramp.find_knee, "kv") is full


def test_slow_ttft_is_one_number_for_alerts_and_advise() -> None:
    slow = names.TTFT_P99_SLOW_SECONDS
    assert alert_rule.Thresholds().ttft_p99_seconds is slow
    assert advise.Thresholds().ttft_p99_seconds is slow


def test_a_poll_result_goes_stale_after_the_one_poll_threshold() -> None:
    assert _default(poll.CacheEntry.stale, "stale_after_s") is names.POLL_STALE_AFTER_S
    assert _default(message.render_message, "stale_after_s") is names.POLL_STALE_AFTER_S


@pytest.mark.parametrize(
    ("silent_s", "state"),
    [(names.HEARTBEAT_STALE_AFTER_S, "alive"), (names.HEARTBEAT_STALE_AFTER_S + 0.001, "stale")],
)
def test_a_writer_goes_stale_after_the_heartbeat_threshold(silent_s: float, state: str) -> None:
    got = writer_state.writer_state(
        clean_close_ts=None, last_proof_ts=1000.0, at_ts=1000.0 + silent_s, latest_run=True
    )
    assert got == state


def test_the_three_staleness_thresholds_measure_three_things() -> None:
    ages = (
        names.HEARTBEAT_STALE_AFTER_S,
        names.EXPORTER_SAMPLE_STALE_AFTER_S,
        names.POLL_STALE_AFTER_S,
    )
    assert len(set(ages)) == 3


def _g(x: float) -> str:
    return f"{x:g}"


@pytest.mark.parametrize(
    ("page", "text"),
    [
        ("observability.md", f"`--kv-cache-threshold {names.KV_CACHE_FULL_FRACTION:.2f}`"),
        ("observability.md", f"`--ttft-p99-seconds {_g(names.TTFT_P99_SLOW_SECONDS)}`"),
        ("runbook.md", f"averaged above {names.KV_CACHE_FULL_FRACTION * 100:.0f} %"),
        (
            "cost-and-capacity.md",
            f"KV-cache usage > {names.KV_CACHE_FULL_FRACTION * 100:.0f} % and waiting > 0",
        ),
        (
            "cost-and-capacity.md",
            f"whose KV-cache usage (max of the samples) reached "
            f"{names.KV_CACHE_FULL_FRACTION * 100:.0f} %",
        ),
        (
            "cost-and-capacity.md",
            f'"TTFT P99 high" is above {_g(names.TTFT_P99_SLOW_SECONDS)} s',
        ),
        ("ledger.md", f"more than {_g(names.HEARTBEAT_STALE_AFTER_S)} s old"),
        ("fleet.md", f"(default {_g(names.EXPORTER_SAMPLE_STALE_AFTER_S)} s)"),
        ("bot-status.md", f"marked stale after {_g(names.POLL_STALE_AFTER_S)} s"),
    ],
)
def test_the_docs_state_the_thresholds(page: str, text: str) -> None:
    flat = " ".join((DOCS / page).read_text().split())
    assert text in flat, f"docs/{page} no longer says {text!r}"


# ---- no name spelled out elsewhere -------------------------------------------------------------


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (
                body
                and isinstance(body[0], ast.Expr)
                and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)
            ):
                out.add(id(body[0].value))
    return out


@functools.cache
def _literals() -> tuple[tuple[str, int, str], ...]:
    """Every string constant of the package outside names.py, docstrings left out (prose may
    name a metric; code must not spell one). Parsed once for the tests below."""
    out = []
    for path in sorted(PKG.rglob("*.py")):
        if path == PKG / "names.py":
            continue
        tree = ast.parse(path.read_text())
        skip = _docstrings(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in skip:
                continue
            if isinstance(node.value, str):
                out.append((str(path.relative_to(ROOT)), node.lineno, node.value))
    return tuple(out)


# vLLM's prefix and DCGM's: a metric name never has a digit after "vllm:", a host and port
# (http://vllm-0.vllm:9464/status, a pod of a service named vllm) always has.
_METRIC_PREFIX = re.compile(r"vllm:(?!\d)|DCGM_FI_")


def test_no_module_but_names_spells_a_vllm_or_dcgm_metric_name() -> None:
    assert _METRIC_PREFIX.search(names.VLLM_PROMPT_TOKENS_TOTAL)
    assert _METRIC_PREFIX.search(names.DCGM_GPU_UTIL)
    assert not _METRIC_PREFIX.search("e.g. http://vllm-0.vllm:9464/status")
    spelled = [
        f"{where}:{line}: {text!r}"
        for where, line, text in _literals()
        if _METRIC_PREFIX.search(text)
    ]
    assert spelled == []


# Still spelled out: plan/fleet.py's reason for a failing host names the series (it is to read
# names.LEDGER_REPORT_OK; then this goes).
SPELLED_FOR_NOW: set[str] = set()


def test_no_module_but_names_spells_one_of_the_exporters_names() -> None:
    ours = set(_strings(names.EXPORTER_PREFIX + "_").values())
    counters = {n.removesuffix("_total") for n in ours if n.endswith("_total")}
    spelled = {
        f"{where}: {token}"
        for where, _line, text in _literals()
        for token in re.findall(r"vllm_ledger_[a-z_]+", text)
        if token in ours or token in counters
    }
    assert spelled - SPELLED_FOR_NOW == set()
