"""The alert rules (`observe/alerts.py`) through the real promtool: every alert fires on a series
that should trip it, stays quiet on one that should not, and keeps the labels that name the
instance (and model) in what it fires; `--alerts minimal`, the thresholds and the runbook links
reach alerts.yml; each runbook link has its section in docs/runbook.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO
from tests.e2e.prom import promtool, rule_test_series
from tests.inproc import run_cli
from vllm_ledger.observe.alert_rule import Thresholds
from vllm_ledger.observe.alerts import MINIMAL, SEVERITIES, alert_rules

# The labels each fired alert must carry besides severity: the instance, and the model
# where the metric has one. promtool compares labels exactly, so these are proven present.
KEEPS = {
    "KVCacheNearFull": {"instance", "model_name"},
    "TTFTP99High": {"instance", "model_name"},
    "GPUMemNearFull": {"instance", "gpu", "UUID"},
    "VLLMTargetDown": {"instance"},
    "LedgerExporterDown": {"instance"},
    "GPUTemperatureHigh": {"instance", "gpu", "UUID"},
    "RequestErrorRateHigh": {"instance"},
    "QueueBuildUp": {"instance", "model_name"},
    "LedgerWindowIncomplete": {"instance", "ledger_instance"},
    "LedgerWriterMissing": {"instance", "ledger_instance"},
    "LedgerDiskNearFull": {"instance", "mountpoint", "device"},
    "HostMemoryPressure": {"instance"},
}


def _stack(tmp_path: Path, *args: str) -> Path:
    """The stack with every rule (--alerts full) unless ``args`` picks a set."""
    out = tmp_path / "stack"
    full = () if "--alerts" in args else ("--alerts", "full")
    code, _stdout, err = run_cli("observability", str(out), *full, *args)
    assert code == 0, err
    return out


def _rules(out: Path) -> dict[str, dict[str, Any]]:
    doc = yaml.safe_load((out / "alerts.yml").read_text())
    return {r["alert"]: r for r in doc["groups"][0]["rules"]}


def _expand(template: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)


def _expect(
    name: str, labels: dict[str, str], t: Thresholds, runbook: str = "docs/runbook.md"
) -> dict[str, Any]:
    rule = next(r for r in alert_rules(t, runbook=runbook) if r.name == name)
    return {
        "exp_labels": {**labels, "severity": rule.severity},
        "exp_annotations": {
            "summary": _expand(rule.summary, labels),
            "description": rule.description,
            "runbook_url": rule.runbook_url,
        },
    }


def _case(
    series: list[dict[str, str]], evals: list[tuple[str, str, list[dict[str, Any]]]]
) -> dict[str, Any]:
    return {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {"eval_time": at, "alertname": name, "exp_alerts": exp} for at, name, exp in evals
        ],
    }


def _unit_tests(t: Thresholds) -> list[dict[str, Any]]:
    kv = {"job": "vllm", "model_name": "tiny", "engine": "0"}
    kv_a, kv_b, kv_c = ({**kv, "instance": f"{h}:8000"} for h in "abc")
    dcgm = {"job": "dcgm", "instance": "h:9400", "modelName": "H200"}
    gpu_a = {**dcgm, "gpu": "0", "UUID": "GPU-a"}
    gpu_b = {**dcgm, "gpu": "1", "UUID": "GPU-b"}
    nvml = {"job": "vllm-ledger", "instance": "h2:9464", "modelName": "L4"}
    gpu_c = {**nvml, "gpu": "0", "UUID": "GPU-c"}
    gpu_a_nvml = {**nvml, "gpu": "0", "UUID": "GPU-a"}  # the same card DCGM reports
    ttft = "vllm:time_to_first_token_seconds_bucket"
    slow = {"job": "vllm", "instance": "a:8000", "model_name": "big", "engine": "0"}
    fast = {"job": "vllm", "instance": "b:8000", "model_name": "big", "engine": "0"}
    led = {"job": "vllm-ledger", "instance": "e:9464"}
    w1, w2, w3 = ({**led, "ledger_instance": f"h:{p}"} for p in (8000, 8001, 8002))
    http = {"job": "vllm", "handler": "/v1/completions", "method": "POST"}
    node_a, node_b, node_c = ({"job": "node", "instance": f"{h}:9100"} for h in "abc")
    root = {"mountpoint": "/", "device": "/dev/sda1", "fstype": "ext4"}
    fs_a, fs_b, fs_c = ({**n, **root} for n in (node_a, node_b, node_c))
    boot_a = {**node_a, "mountpoint": "/boot", "device": "/dev/sda2", "fstype": "ext4"}
    return [
        # KV cache: a at 95% trips after 10 min; b at 85% and c's 3-minute spike stay quiet.
        _case(
            [
                rule_test_series("vllm:kv_cache_usage_perc", kv_a, "0.95x30"),
                rule_test_series("vllm:kv_cache_usage_perc", kv_b, "0.85x30"),
                rule_test_series("vllm:kv_cache_usage_perc", kv_c, "0.5x10 0.99x3 0.5x16"),
            ],
            [
                ("5m", "KVCacheNearFull", []),  # pending, not yet firing
                ("25m", "KVCacheNearFull", [_expect("KVCacheNearFull", kv_a, t)]),
            ],
        ),
        # TTFT P99 per instance: a's first tokens between 1 and 5 s trip (P99 about 4.96 s);
        # b's, all under 1 s, do not, and do not dilute a's (no fleet-wide sum).
        _case(
            [
                rule_test_series(ttft, {**slow, "le": "1"}, "0x30"),
                rule_test_series(ttft, {**slow, "le": "5"}, "0+60x30"),
                rule_test_series(ttft, {**slow, "le": "+Inf"}, "0+60x30"),
                rule_test_series(ttft, {**fast, "le": "1"}, "0+6000x30"),
                rule_test_series(ttft, {**fast, "le": "5"}, "0+6000x30"),
                rule_test_series(ttft, {**fast, "le": "+Inf"}, "0+6000x30"),
            ],
            [
                ("3m", "TTFTP99High", []),
                (
                    "15m",
                    "TTFTP99High",
                    [_expect("TTFTP99High", {"instance": "a:8000", "model_name": "big"}, t)],
                ),
            ],
        ),
        # GPU memory: DCGM's GPU-a at 98.75% trips once (its NVML twin at 10% is ignored),
        # GPU-b at 50% is quiet, GPU-c with only NVML readings at 97% trips.
        _case(
            [
                rule_test_series("DCGM_FI_DEV_FB_USED", gpu_a, "79000x20"),
                rule_test_series("DCGM_FI_DEV_FB_FREE", gpu_a, "1000x20"),
                rule_test_series("DCGM_FI_DEV_FB_USED", gpu_b, "40000x20"),
                rule_test_series("DCGM_FI_DEV_FB_FREE", gpu_b, "40000x20"),
                rule_test_series("vllm_ledger_gpu_memory_used_bytes", gpu_c, "97x20"),
                rule_test_series("vllm_ledger_gpu_memory_total_bytes", gpu_c, "100x20"),
                rule_test_series("vllm_ledger_gpu_memory_used_bytes", gpu_a_nvml, "10x20"),
                rule_test_series("vllm_ledger_gpu_memory_total_bytes", gpu_a_nvml, "100x20"),
            ],
            [
                ("3m", "GPUMemNearFull", []),
                (
                    "10m",
                    "GPUMemNearFull",
                    [_expect("GPUMemNearFull", gpu_a, t), _expect("GPUMemNearFull", gpu_c, t)],
                ),
            ],
        ),
        # Targets: vLLM a down from the start trips after 1 minute; b, down for one scrape
        # and back, does not; the exporter down trips its own alert, not the vLLM one.
        _case(
            [
                rule_test_series("up", {"job": "vllm", "instance": "a:8000"}, "0x10"),
                rule_test_series("up", {"job": "vllm", "instance": "b:8000"}, "1 0 1x8"),
                rule_test_series("up", {"job": "vllm", "instance": "c:8000"}, "1x10"),
                rule_test_series("up", {"job": "vllm-ledger", "instance": "e:9464"}, "0x10"),
                rule_test_series("up", {"job": "vllm-ledger", "instance": "f:9464"}, "1x10"),
            ],
            [
                ("0m", "VLLMTargetDown", []),  # pending
                (
                    "3m",
                    "VLLMTargetDown",
                    [_expect("VLLMTargetDown", {"job": "vllm", "instance": "a:8000"}, t)],
                ),
                (
                    "3m",
                    "LedgerExporterDown",
                    [
                        _expect(
                            "LedgerExporterDown", {"job": "vllm-ledger", "instance": "e:9464"}, t
                        )
                    ],
                ),
            ],
        ),
        # GPU temperature: DCGM's GPU-a at 90 C trips (its NVML twin at 50 C is ignored), GPU-b
        # at 80 C and a 2-minute spike to 95 C on GPU-b do not; GPU-c (NVML only) at 88 C trips.
        _case(
            [
                rule_test_series("DCGM_FI_DEV_GPU_TEMP", gpu_a, "90x20"),
                rule_test_series("DCGM_FI_DEV_GPU_TEMP", gpu_b, "80x5 95x2 80x13"),
                rule_test_series("vllm_ledger_gpu_temperature_celsius", gpu_c, "88x20"),
                rule_test_series("vllm_ledger_gpu_temperature_celsius", gpu_a_nvml, "50x20"),
            ],
            [
                ("2m", "GPUTemperatureHigh", []),
                (
                    "7m",
                    "GPUTemperatureHigh",
                    [
                        _expect("GPUTemperatureHigh", gpu_a, t),
                        _expect("GPUTemperatureHigh", gpu_c, t),
                    ],
                ),
            ],
        ),
        # Errors: a answers 10% of its requests 5xx and trips; b 1% and c none do not.
        _case(
            [
                rule_test_series(
                    "http_requests_total",
                    {**http, "instance": "a:8000", "status": "2xx"},
                    "0+90x20",
                ),
                rule_test_series(
                    "http_requests_total",
                    {**http, "instance": "a:8000", "status": "5xx"},
                    "0+10x20",
                ),
                rule_test_series(
                    "http_requests_total",
                    {**http, "instance": "b:8000", "status": "2xx"},
                    "0+99x20",
                ),
                rule_test_series(
                    "http_requests_total", {**http, "instance": "b:8000", "status": "5xx"}, "0+1x20"
                ),
                rule_test_series(
                    "http_requests_total",
                    {**http, "instance": "c:8000", "status": "2xx"},
                    "0+50x20",
                ),
            ],
            [
                ("4m", "RequestErrorRateHigh", []),
                (
                    "15m",
                    "RequestErrorRateHigh",
                    [_expect("RequestErrorRateHigh", {"instance": "a:8000"}, t)],
                ),
            ],
        ),
        # Queue: two requests waiting on a for 10 minutes trips, for a alone ...
        _case(
            [
                rule_test_series("vllm:num_requests_waiting", kv_a, "2x30"),
                rule_test_series("vllm:num_requests_waiting", kv_b, "0x30"),
            ],
            [
                ("4m", "QueueBuildUp", []),
                (
                    "10m",
                    "QueueBuildUp",
                    [_expect("QueueBuildUp", {"instance": "a:8000", "model_name": "tiny"}, t)],
                ),
            ],
        ),
        # ... a three-minute burst does not.
        _case(
            [rule_test_series("vllm:num_requests_waiting", kv_a, "3x3 0x27")],
            [("10m", "QueueBuildUp", [])],
        ),
        # Ledger: h:8000's total window losing a minute a minute trips; h:8001's old gap that
        # does not grow, a growing `today`, and the whole root's series (no ledger_instance:
        # the sum, not an instance) do not.
        _case(
            [
                rule_test_series(
                    "vllm_ledger_window_uncovered_seconds",
                    {**w1, "window": "total"},
                    "0x10 0+60x20",
                ),
                rule_test_series(
                    "vllm_ledger_window_uncovered_seconds", {**w2, "window": "total"}, "5x30"
                ),
                rule_test_series(
                    "vllm_ledger_window_uncovered_seconds", {**w2, "window": "today"}, "0+60x30"
                ),
                rule_test_series(
                    "vllm_ledger_window_uncovered_seconds",
                    {**led, "window": "total"},
                    "0x10 0+60x20",
                ),
            ],
            [
                ("9m", "LedgerWindowIncomplete", []),
                (
                    "20m",
                    "LedgerWindowIncomplete",
                    [_expect("LedgerWindowIncomplete", {**w1, "window": "total"}, t)],
                ),
            ],
        ),
        # Writers: h:8000 expects 2 and has 1 alive; h:8001 has both; h:8002 closed (0 of 0).
        _case(
            [
                rule_test_series("vllm_ledger_writers_expected", w1, "2x10"),
                rule_test_series("vllm_ledger_writers_alive", w1, "1x10"),
                rule_test_series("vllm_ledger_writers_expected", w2, "2x10"),
                rule_test_series("vllm_ledger_writers_alive", w2, "2x10"),
                rule_test_series("vllm_ledger_writers_expected", w3, "0x10"),
                rule_test_series("vllm_ledger_writers_alive", w3, "0x10"),
            ],
            [
                ("1m", "LedgerWriterMissing", []),
                ("5m", "LedgerWriterMissing", [_expect("LedgerWriterMissing", w1, t)]),
            ],
        ),
        # The ledger's disk (mount point /): host a at 5% free trips after 10 min; host b at
        # 50%, a's /boot at 1% (another mount point) and c's 3-minute dip stay quiet.
        _case(
            [
                rule_test_series("node_filesystem_avail_bytes", fs_a, "5x30"),
                rule_test_series("node_filesystem_size_bytes", fs_a, "100x30"),
                rule_test_series("node_filesystem_avail_bytes", fs_b, "50x30"),
                rule_test_series("node_filesystem_size_bytes", fs_b, "100x30"),
                rule_test_series("node_filesystem_avail_bytes", boot_a, "1x30"),
                rule_test_series("node_filesystem_size_bytes", boot_a, "100x30"),
                rule_test_series("node_filesystem_avail_bytes", fs_c, "50x10 5x3 50x16"),
                rule_test_series("node_filesystem_size_bytes", fs_c, "100x30"),
            ],
            [
                ("5m", "LedgerDiskNearFull", []),  # pending
                ("25m", "LedgerDiskNearFull", [_expect("LedgerDiskNearFull", fs_a, t)]),
            ],
        ),
        # Host memory: a with 2% available trips after 5 min; b at 30% and c's 2-minute dip
        # stay quiet.
        _case(
            [
                rule_test_series("node_memory_MemAvailable_bytes", node_a, "2x20"),
                rule_test_series("node_memory_MemTotal_bytes", node_a, "100x20"),
                rule_test_series("node_memory_MemAvailable_bytes", node_b, "30x20"),
                rule_test_series("node_memory_MemTotal_bytes", node_b, "100x20"),
                rule_test_series("node_memory_MemAvailable_bytes", node_c, "30x5 1x2 30x13"),
                rule_test_series("node_memory_MemTotal_bytes", node_c, "100x20"),
            ],
            [
                ("3m", "HostMemoryPressure", []),  # pending
                ("15m", "HostMemoryPressure", [_expect("HostMemoryPressure", node_a, t)]),
            ],
        ),
    ]


def _promtool_test(out: Path, tests: list[dict[str, Any]]) -> str:
    doc = {"rule_files": ["alerts.yml"], "evaluation_interval": "1m", "tests": tests}
    (out / "alerts_test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = promtool("test", "rules", "alerts_test.yml", cwd=out)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_every_alert_fires_stays_quiet_and_keeps_the_instance(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    tests = _unit_tests(Thresholds())
    fired: dict[str, list[dict[str, str]]] = {}
    for case in tests:
        for e in case["alert_rule_test"]:
            for a in e["exp_alerts"]:
                fired.setdefault(e["alertname"], []).append(a["exp_labels"])
    assert set(fired) == {r.name for r in alert_rules()} == set(KEEPS)
    for name, label_sets in fired.items():
        for labels in label_sets:
            assert KEEPS[name] <= set(labels), (name, labels)
    assert "SUCCESS" in _promtool_test(out, tests)


def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    """The harness is not vacuous: a quiet series expected to fire fails, and so does a firing
    alert expected without its instance label."""
    out = _stack(tmp_path)
    labels = {"job": "vllm", "instance": "a:8000", "model_name": "m"}
    quiet = _case(
        [rule_test_series("vllm:num_requests_waiting", labels, "3x3 0x27")],
        [("10m", "QueueBuildUp", [_expect("QueueBuildUp", {"model_name": "m"}, Thresholds())])],
    )
    no_instance = _case(
        [rule_test_series("up", {"job": "vllm", "instance": "a:8000"}, "0x10")],
        [("5m", "VLLMTargetDown", [_expect("VLLMTargetDown", {"job": "vllm"}, Thresholds())])],
    )
    for wrong, name in ((quiet, "QueueBuildUp"), (no_instance, "VLLMTargetDown")):
        doc = {"rule_files": ["alerts.yml"], "evaluation_interval": "1m", "tests": [wrong]}
        (out / "alerts_test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
        r = promtool("test", "rules", "alerts_test.yml", cwd=out)
        assert r.returncode == 1
        assert f"alertname: {name}" in r.stdout + r.stderr


def test_custom_thresholds_fire_where_the_defaults_stay_quiet(tmp_path: Path) -> None:
    t = Thresholds(kv_cache_fraction=0.8, kv_cache_for="5m", gpu_temperature_celsius=75)
    out = _stack(
        tmp_path / "c",
        "--kv-cache-threshold", "0.8", "--kv-cache-for", "5m", "--gpu-temp-celsius", "75",
    )  # fmt: skip
    labels = {"instance": "a:8000", "job": "vllm", "engine": "0", "model_name": "tiny"}
    gpu = {"instance": "h:9400", "job": "dcgm", "gpu": "0", "UUID": "GPU-a"}
    series = [
        rule_test_series("vllm:kv_cache_usage_perc", labels, "0.85x30"),
        rule_test_series("DCGM_FI_DEV_GPU_TEMP", gpu, "80x30"),
    ]
    case = _case(
        series,
        [
            ("12m", "KVCacheNearFull", [_expect("KVCacheNearFull", labels, t)]),
            ("12m", "GPUTemperatureHigh", [_expect("GPUTemperatureHigh", gpu, t)]),
        ],
    )
    _promtool_test(out, [case])
    quiet = _case(series, [("12m", "KVCacheNearFull", []), ("12m", "GPUTemperatureHigh", [])])
    _promtool_test(_stack(tmp_path / "d"), [quiet])


def test_alerts_carry_thresholds_description_and_runbook_url(tmp_path: Path) -> None:
    rules = _rules(_stack(tmp_path))
    assert list(rules) == list(KEEPS)
    assert rules["KVCacheNearFull"]["expr"] == (
        "(avg_over_time(vllm:kv_cache_usage_perc[10m])) > 0.9"
    )
    assert rules["TTFTP99High"]["expr"] == (
        "(histogram_quantile(0.99, sum by (instance, model_name, le) "
        "(rate(vllm:time_to_first_token_seconds_bucket[5m])))) > 3"
    )
    assert rules["QueueBuildUp"]["expr"] == (
        "(sum by (instance, model_name) (vllm:num_requests_waiting)) > 0"
    )
    assert rules["VLLMTargetDown"]["expr"] == '(up{job="vllm"}) == 0'
    assert rules["LedgerExporterDown"]["expr"] == '(up{job="vllm-ledger"}) == 0'
    assert rules["GPUTemperatureHigh"]["expr"] == (
        "(DCGM_FI_DEV_GPU_TEMP or on (UUID) vllm_ledger_gpu_temperature_celsius) > 85"
    )
    assert rules["RequestErrorRateHigh"]["expr"].endswith(") > 0.05")
    assert 'status=~"5.."' in rules["RequestErrorRateHigh"]["expr"]
    assert {n: r.get("for") for n, r in rules.items()} == {
        "KVCacheNearFull": "10m",
        "TTFTP99High": "5m",
        "GPUMemNearFull": "5m",
        "VLLMTargetDown": "1m",
        "LedgerExporterDown": "1m",
        "GPUTemperatureHigh": "3m",
        "RequestErrorRateHigh": "5m",
        "QueueBuildUp": "5m",
        "LedgerWindowIncomplete": None,
        "LedgerWriterMissing": "2m",
        "LedgerDiskNearFull": "10m",
        "HostMemoryPressure": "5m",
    }
    assert rules["LedgerDiskNearFull"]["expr"] == (
        '(node_filesystem_avail_bytes{job="node",mountpoint="/"} / '
        'node_filesystem_size_bytes{job="node",mountpoint="/"}) < 0.1'
    )
    assert rules["HostMemoryPressure"]["expr"] == (
        '(node_memory_MemAvailable_bytes{job="node"} / node_memory_MemTotal_bytes{job="node"})'
        " < 0.05"
    )
    for name, r in rules.items():
        assert "sum(" not in r["expr"] and "sum by (le)" not in r["expr"], name  # no fleet sum
        a = r["annotations"]
        assert set(a) == {"summary", "description", "runbook_url"}
        assert a["description"].endswith(".")
        assert a["runbook_url"] == f"docs/runbook.md#{name.lower()}"
        assert "{{ $labels.instance }}" in a["summary"] or "ledger_instance" in a["summary"]
    assert "max-model-len" in rules["KVCacheNearFull"]["annotations"]["description"]
    assert "rate-limit upstream" in rules["TTFTP99High"]["annotations"]["description"]
    assert "another process" in rules["GPUMemNearFull"]["annotations"]["description"]


def test_every_runbook_link_has_its_section() -> None:
    text = (REPO / "docs" / "runbook.md").read_text()
    headings = [m.group(1) for m in re.finditer(r"^## (\S+)$", text, re.M)]
    assert headings == [r.name for r in alert_rules()]  # one section each, in the rules' order
    for r in alert_rules():
        assert r.runbook_url.split("#")[1] == r.name.lower() == r.anchor


def test_minimal_gives_the_three_to_start_with_and_runbook_url_reaches_them(tmp_path: Path) -> None:
    out = _stack(
        tmp_path,
        "--alerts", "minimal", "--runbook-url", "https://git.example.com/ops/runbook.md",
    )  # fmt: skip
    rules = _rules(out)
    assert tuple(rules) == MINIMAL == ("KVCacheNearFull", "TTFTP99High", "GPUMemNearFull")
    for name, r in rules.items():
        assert r["annotations"]["runbook_url"] == (
            f"https://git.example.com/ops/runbook.md#{name.lower()}"
        )
    checked = promtool("check", "rules", str(out / "alerts.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "SUCCESS: 3 rules found" in checked.stdout


def test_the_default_is_the_three_to_start_with_and_full_is_one_flag_away(tmp_path: Path) -> None:
    out = tmp_path / "default"
    code, _stdout, err = run_cli("observability", str(out))
    assert code == 0, err
    assert tuple(_rules(out)) == MINIMAL
    code, help_text, _err = run_cli("observability", "--help")
    assert code == 0
    flat = " ".join(help_text.split())
    assert "minimal (the default): the three to start with" in flat
    assert (
        "--alerts full: every rule, at three levels (info: early signs, warning, critical" in flat
    )


def test_three_levels_info_an_early_sign(tmp_path: Path) -> None:
    """Every rule is info, warning or critical; the queue building, the leading indicator,
    is info; each level has its own route in alertmanager.yml and a critical alert holds back
    its instance's warnings and infos (amtool: tests/unit/observe/test_stack.py)."""
    rules = _rules(_stack(tmp_path))
    levels = {n: r["labels"]["severity"] for n, r in rules.items()}
    assert set(levels.values()) == set(SEVERITIES) == {"info", "warning", "critical"}
    assert [n for n, s in levels.items() if s == "info"] == ["QueueBuildUp"]
    am = yaml.safe_load((tmp_path / "stack" / "alertmanager.yml").read_text())
    routes = am["route"]["routes"]
    assert [r["matchers"] for r in routes] == [[f'severity="{s}"'] for s in reversed(SEVERITIES)]
    assert [r.get("repeat_interval", am["route"]["repeat_interval"]) for r in routes] == [
        "1h", "4h", "24h",
    ]  # fmt: skip
    assert am["inhibit_rules"] == [
        {
            "source_matchers": ['severity="critical"'],
            "target_matchers": ['severity=~"warning|info"'],
            "equal": ["instance"],
        }
    ]


def test_threshold_flags_reach_the_rules(tmp_path: Path) -> None:
    out = _stack(
        tmp_path,
        "--kv-cache-threshold", "0.8", "--kv-cache-for", "5m", "--ttft-p99-seconds", "1.5",
        "--gpu-mem-threshold", "0.9", "--queue-for", "1m", "--queue-waiting", "4",
        "--ledger-writer-for", "30s", "--down-for", "30s", "--gpu-temp-celsius", "80",
        "--gpu-temp-for", "1m", "--error-threshold", "0.1", "--error-for", "2m",
    )  # fmt: skip
    rules = _rules(out)
    assert rules["KVCacheNearFull"]["expr"] == (
        "(avg_over_time(vllm:kv_cache_usage_perc[5m])) > 0.8"
    )
    assert rules["KVCacheNearFull"]["for"] == "5m"
    assert rules["TTFTP99High"]["expr"].endswith(" > 1.5")
    assert rules["GPUMemNearFull"]["expr"].endswith(" > 0.9")
    assert "less than 10% memory free" in rules["GPUMemNearFull"]["annotations"]["summary"]
    assert rules["QueueBuildUp"]["expr"].endswith(" > 4")
    assert rules["QueueBuildUp"]["for"] == "1m"
    assert rules["LedgerWriterMissing"]["for"] == "30s"
    assert rules["VLLMTargetDown"]["for"] == rules["LedgerExporterDown"]["for"] == "30s"
    assert rules["GPUTemperatureHigh"]["expr"].endswith(" > 80")
    assert rules["GPUTemperatureHigh"]["for"] == "1m"
    assert rules["RequestErrorRateHigh"]["expr"].endswith(" > 0.1")
    assert rules["RequestErrorRateHigh"]["for"] == "2m"


def test_host_flags_reach_the_rules_and_the_custom_mountpoint_fires(tmp_path: Path) -> None:
    out = _stack(
        tmp_path,
        "--ledger-mountpoint", "/srv", "--disk-free-threshold", "0.2", "--disk-for", "1m",
        "--memory-available-threshold", "0.1", "--memory-for", "2m",
    )  # fmt: skip
    rules = _rules(out)
    disk, mem = rules["LedgerDiskNearFull"], rules["HostMemoryPressure"]
    assert 'mountpoint="/srv"' in disk["expr"] and disk["expr"].endswith(" < 0.2")
    assert (disk["for"], mem["for"]) == ("1m", "2m")
    assert mem["expr"].endswith(" < 0.1")
    assert "less than 20% free for 1m" in disk["annotations"]["summary"]
    t = Thresholds(
        disk_free_fraction=0.2, disk_for="1m", ledger_mountpoint="/srv",
        memory_available_fraction=0.1, memory_for="2m",
    )  # fmt: skip
    srv = {"job": "node", "instance": "a:9100", "mountpoint": "/srv", "device": "/dev/sdb1"}
    root = {**srv, "mountpoint": "/", "device": "/dev/sda1"}
    node = {"job": "node", "instance": "a:9100"}
    case = _case(
        [
            rule_test_series("node_filesystem_avail_bytes", srv, "15x20"),  # 15%: under 20% here
            rule_test_series("node_filesystem_size_bytes", srv, "100x20"),
            rule_test_series("node_filesystem_avail_bytes", root, "1x20"),  # not the ledger's disk
            rule_test_series("node_filesystem_size_bytes", root, "100x20"),
            rule_test_series("node_memory_MemAvailable_bytes", node, "8x20"),  # 8%: under 10% here
            rule_test_series("node_memory_MemTotal_bytes", node, "100x20"),
        ],
        [
            ("5m", "LedgerDiskNearFull", [_expect("LedgerDiskNearFull", srv, t)]),
            ("5m", "HostMemoryPressure", [_expect("HostMemoryPressure", node, t)]),
        ],
    )
    _promtool_test(out, [case])
    # the defaults stay quiet on the same series (10% and 5%, and on / only)
    quiet = _case(
        case["input_series"],
        [
            ("15m", "LedgerDiskNearFull", [_expect("LedgerDiskNearFull", root, Thresholds())]),
            ("15m", "HostMemoryPressure", []),
        ],
    )
    _promtool_test(_stack(tmp_path / "d"), [quiet])
