"""`vllm-ledger observability`: the generated stack passes promtool, its alerts fire where they
should and stay quiet where they should not, and the dashboard is a valid Grafana model."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import run_cli
from tests.e2e.prom import is_gpu_metric, metric_names, promtool
from tests.ledgers import ev, write_ledger
from vllm_ledger.observe.alerts import Thresholds, alert_rules
from vllm_ledger.observe.dashboard import expressions
from vllm_ledger.observe.exporter import families
from vllm_ledger.observe.gpu import GpuReading
from vllm_ledger.read.report import build_report


def _vllm_loggers() -> Path:
    """vLLM's metrics source, found without importing vLLM."""
    spec = importlib.util.find_spec("vllm")
    assert spec is not None and spec.submodule_search_locations
    return Path(next(iter(spec.submodule_search_locations))) / "v1" / "metrics" / "loggers.py"


DCGM_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_GPU_TEMP",
    "DCGM_FI_DEV_POWER_USAGE",
}
FILES = [
    "prometheus.yml",
    "alerts.yml",
    "compose.yaml",
    "grafana/provisioning/datasources/prometheus.yml",
    "grafana/provisioning/dashboards/vllm-ledger.yml",
    "grafana/dashboards/vllm-ledger.json",
]


def _stack(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "stack"
    code, stdout, err = run_cli("observability", str(out), *args)
    assert code == 0, err
    assert stdout.splitlines() == [str(out / f) for f in FILES]
    return out


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_prometheus_config_scrapes_every_target_every_15s(tmp_path: Path) -> None:
    out = _stack(
        tmp_path,
        "--vllm",
        "10.0.0.1:8000",
        "--vllm",
        "10.0.0.2:8001",
        "--exporter",
        "10.0.0.1:9464",
    )
    cfg = _load(out / "prometheus.yml")
    assert cfg["global"] == {"scrape_interval": "15s", "evaluation_interval": "15s"}
    assert cfg["rule_files"] == ["alerts.yml"]
    jobs = {j["job_name"]: j["static_configs"][0]["targets"] for j in cfg["scrape_configs"]}
    assert jobs == {
        "vllm": ["10.0.0.1:8000", "10.0.0.2:8001"],
        "dcgm": ["dcgm-exporter:9400"],
        "vllm-ledger": ["10.0.0.1:9464"],
    }
    r = promtool("check", "config", str(out / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 1 rule files found" in r.stdout
    r = promtool("check", "rules", str(out / "alerts.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 6 rules found" in r.stdout


def test_compose_runs_prometheus_grafana_on_3300_and_dcgm_with_all_gpus(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    services = _load(out / "compose.yaml")["services"]
    assert set(services) == {"prometheus", "grafana", "dcgm-exporter"}
    assert services["grafana"]["ports"] == ["3300:3000"]
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in services["prometheus"]["volumes"]
    assert "./alerts.yml:/etc/prometheus/alerts.yml:ro" in services["prometheus"]["volumes"]
    dcgm = services["dcgm-exporter"]
    assert dcgm["ports"] == ["9400:9400"]
    assert dcgm["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}
    ]
    ds = _load(out / "grafana/provisioning/datasources/prometheus.yml")["datasources"]
    assert [(d["type"], d["url"], d["uid"]) for d in ds] == [
        ("prometheus", "http://prometheus:9090", "vllm-prometheus")
    ]
    providers = _load(out / "grafana/provisioning/dashboards/vllm-ledger.yml")["providers"]
    mounted = [v for v in services["grafana"]["volumes"] if v.startswith("./grafana/dashboards:")]
    assert mounted == [f"./grafana/dashboards:{providers[0]['options']['path']}:ro"]


def test_no_dcgm_and_an_external_dcgm(tmp_path: Path) -> None:
    out = _stack(tmp_path, "--no-dcgm")
    assert "dcgm-exporter" not in _load(out / "compose.yaml")["services"]
    jobs = [j["job_name"] for j in _load(out / "prometheus.yml")["scrape_configs"]]
    assert jobs == ["vllm", "vllm-ledger"]
    out2 = tmp_path / "ext"
    code, _o, _e = run_cli("observability", str(out2), "--dcgm", "10.0.0.9:9400")
    assert code == 0
    assert "dcgm-exporter" not in _load(out2 / "compose.yaml")["services"]
    cfg = _load(out2 / "prometheus.yml")
    assert cfg["scrape_configs"][1] == {
        "job_name": "dcgm",
        "static_configs": [{"targets": ["10.0.0.9:9400"]}],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vllm", "no-port"], "target 'no-port' is not HOST:PORT: e.g. 192.168.1.10:8000"),
        (["--vllm", "h:99999"], "target 'h:99999' is not HOST:PORT: e.g. 192.168.1.10:8000"),
        (["--dcgm", "h:9400", "--no-dcgm"], "--dcgm and --no-dcgm contradict each other"),
    ],
)
def test_bad_flags_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = run_cli("observability", str(tmp_path / "s"), *args)
    assert (code, out) == (2, "")
    assert err.startswith(f"vllm-ledger: error: {message}")
    assert len(err.splitlines()) == 1


def test_bad_threshold_is_refused_by_argparse(tmp_path: Path) -> None:
    code, _out, err = run_cli("observability", str(tmp_path / "s"), "--kv-cache-threshold", "90")
    assert code == 2
    assert err == (
        "vllm-ledger: error: --kv-cache-threshold '90' looks like a percentage: "
        "give a fraction, e.g. --kv-cache-threshold 0.9\n"
    )
    code, _out, err = run_cli("observability", str(tmp_path / "s"), "--ttft-for", "5 minutes")
    assert code == 2
    assert "is not a Prometheus duration" in err


def test_alerts_carry_the_write_ups_thresholds_summary_and_action(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    rules = {r["alert"]: r for r in _load(out / "alerts.yml")["groups"][0]["rules"]}
    assert list(rules) == [
        "KVCacheNearFull",
        "TTFTP99High",
        "GPUMemNearFull",
        "QueueBuildUp",
        "LedgerWindowIncomplete",
        "LedgerWriterMissing",
    ]
    assert rules["KVCacheNearFull"]["expr"] == (
        "(avg_over_time(vllm:kv_cache_usage_perc[10m])) > 0.9"
    )
    assert rules["KVCacheNearFull"]["for"] == "10m"
    assert rules["TTFTP99High"]["expr"] == (
        "(histogram_quantile(0.99, sum by (le) "
        "(rate(vllm:time_to_first_token_seconds_bucket[5m])))) > 3"
    )
    assert rules["TTFTP99High"]["for"] == "5m"
    assert rules["GPUMemNearFull"]["expr"].startswith(
        "(DCGM_FI_DEV_FB_USED / (DCGM_FI_DEV_FB_USED + DCGM_FI_DEV_FB_FREE) or on (UUID) "
    )
    assert rules["GPUMemNearFull"]["expr"].endswith(") > 0.95")
    assert rules["GPUMemNearFull"]["for"] == "5m"
    assert rules["QueueBuildUp"]["expr"] == "(sum(vllm:num_requests_waiting)) > 0"
    assert rules["QueueBuildUp"]["for"] == "5m"
    for r in rules.values():
        assert set(r["annotations"]) == {"summary", "action"}
        assert r["annotations"]["action"].endswith(".")
    assert "max-model-len" in rules["KVCacheNearFull"]["annotations"]["action"]
    assert "rate-limit upstream" in rules["TTFTP99High"]["annotations"]["action"]
    assert "another process" in rules["GPUMemNearFull"]["annotations"]["action"]


def test_threshold_flags_reach_the_rules(tmp_path: Path) -> None:
    out = _stack(
        tmp_path,
        "--kv-cache-threshold",
        "0.8",
        "--kv-cache-for",
        "5m",
        "--ttft-p99-seconds",
        "1.5",
        "--gpu-mem-threshold",
        "0.9",
        "--queue-for",
        "1m",
        "--queue-waiting",
        "4",
        "--ledger-writer-for",
        "30s",
    )
    rules = {r["alert"]: r for r in _load(out / "alerts.yml")["groups"][0]["rules"]}
    assert rules["KVCacheNearFull"]["expr"] == (
        "(avg_over_time(vllm:kv_cache_usage_perc[5m])) > 0.8"
    )
    assert rules["KVCacheNearFull"]["for"] == "5m"
    assert rules["TTFTP99High"]["expr"].endswith(" > 1.5")
    assert rules["GPUMemNearFull"]["expr"].endswith(" > 0.9")
    assert "less than 10% memory free" in rules["GPUMemNearFull"]["annotations"]["summary"]
    assert rules["QueueBuildUp"]["expr"] == "(sum(vllm:num_requests_waiting)) > 4"
    assert rules["QueueBuildUp"]["for"] == "1m"
    assert rules["LedgerWriterMissing"]["for"] == "30s"


# ---------------------------------------------------------------- promtool test rules


def _expand(template: str, labels: dict[str, str]) -> str:
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels.get(m.group(1), ""), template)


def _expect(name: str, labels: dict[str, str], t: Thresholds) -> dict[str, Any]:
    rule = next(r for r in alert_rules(t) if r.name == name)
    return {
        "exp_labels": {**labels, "severity": rule.severity},
        "exp_annotations": {"summary": _expand(rule.summary, labels), "action": rule.action},
    }


def _series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


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
    led = {"job": "vllm-ledger", "instance": "e:9464"}
    w1, w2, w3 = ({**led, "ledger_instance": f"h:{p}"} for p in (8000, 8001, 8002))
    return [
        # KV cache: a at 95% trips after 10 min; b at 85% and c's 3-minute spike stay quiet.
        _case(
            [
                _series("vllm:kv_cache_usage_perc", kv_a, "0.95x30"),
                _series("vllm:kv_cache_usage_perc", kv_b, "0.85x30"),
                _series("vllm:kv_cache_usage_perc", kv_c, "0.5x10 0.99x3 0.5x16"),
            ],
            [
                ("5m", "KVCacheNearFull", []),  # pending, not yet firing
                ("25m", "KVCacheNearFull", [_expect("KVCacheNearFull", kv_a, t)]),
            ],
        ),
        # TTFT P99: every first token between 1 and 5 s trips (P99 about 4.96 s) ...
        _case(
            [
                _series(ttft, {"job": "vllm", "le": "1"}, "0x30"),
                _series(ttft, {"job": "vllm", "le": "5"}, "0+60x30"),
                _series(ttft, {"job": "vllm", "le": "+Inf"}, "0+60x30"),
            ],
            [("3m", "TTFTP99High", []), ("15m", "TTFTP99High", [_expect("TTFTP99High", {}, t)])],
        ),
        # ... every first token under 1 s does not.
        _case(
            [
                _series(ttft, {"job": "vllm", "le": "1"}, "0+60x30"),
                _series(ttft, {"job": "vllm", "le": "5"}, "0+60x30"),
                _series(ttft, {"job": "vllm", "le": "+Inf"}, "0+60x30"),
            ],
            [("15m", "TTFTP99High", [])],
        ),
        # GPU memory: DCGM's GPU-a at 98.75% trips once (its NVML twin at 10% is ignored),
        # GPU-b at 50% is quiet, GPU-c with only NVML readings at 97% trips.
        _case(
            [
                _series("DCGM_FI_DEV_FB_USED", gpu_a, "79000x20"),
                _series("DCGM_FI_DEV_FB_FREE", gpu_a, "1000x20"),
                _series("DCGM_FI_DEV_FB_USED", gpu_b, "40000x20"),
                _series("DCGM_FI_DEV_FB_FREE", gpu_b, "40000x20"),
                _series("vllm_ledger_gpu_memory_used_bytes", gpu_c, "97x20"),
                _series("vllm_ledger_gpu_memory_total_bytes", gpu_c, "100x20"),
                _series("vllm_ledger_gpu_memory_used_bytes", gpu_a_nvml, "10x20"),
                _series("vllm_ledger_gpu_memory_total_bytes", gpu_a_nvml, "100x20"),
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
        # Queue: two requests waiting for 10 minutes trips ...
        _case(
            [
                _series("vllm:num_requests_waiting", {**kv_a}, "2x30"),
                _series("vllm:num_requests_waiting", {**kv_b}, "0x30"),
            ],
            [("4m", "QueueBuildUp", []), ("10m", "QueueBuildUp", [_expect("QueueBuildUp", {}, t)])],
        ),
        # ... a three-minute burst does not.
        _case(
            [_series("vllm:num_requests_waiting", {**kv_a}, "3x3 0x27")],
            [("10m", "QueueBuildUp", [])],
        ),
        # Ledger: the total window losing a minute a minute trips; an old gap that does not
        # grow and a growing `today` (midnight before the first record) do not.
        _case(
            [
                _series(
                    "vllm_ledger_window_uncovered_seconds",
                    {**led, "window": "total"},
                    "0x10 0+60x20",
                ),
                _series(
                    "vllm_ledger_window_uncovered_seconds",
                    {**led, "instance": "f:9464", "window": "total"},
                    "5x30",
                ),
                _series(
                    "vllm_ledger_window_uncovered_seconds", {**led, "window": "today"}, "0+60x30"
                ),
            ],
            [
                ("9m", "LedgerWindowIncomplete", []),
                (
                    "20m",
                    "LedgerWindowIncomplete",
                    [_expect("LedgerWindowIncomplete", {**led, "window": "total"}, t)],
                ),
            ],
        ),
        # Writers: h:8000 expects 2 and has 1 alive; h:8001 has both; h:8002 closed (0 of 0).
        _case(
            [
                _series("vllm_ledger_writers_expected", w1, "2x10"),
                _series("vllm_ledger_writers_alive", w1, "1x10"),
                _series("vllm_ledger_writers_expected", w2, "2x10"),
                _series("vllm_ledger_writers_alive", w2, "2x10"),
                _series("vllm_ledger_writers_expected", w3, "0x10"),
                _series("vllm_ledger_writers_alive", w3, "0x10"),
            ],
            [
                ("1m", "LedgerWriterMissing", []),
                ("5m", "LedgerWriterMissing", [_expect("LedgerWriterMissing", w1, t)]),
            ],
        ),
    ]


def _promtool_test(out: Path, t: Thresholds, tests: list[dict[str, Any]]) -> str:
    doc = {"rule_files": ["alerts.yml"], "evaluation_interval": "1m", "tests": tests}
    (out / "alerts_test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = promtool("test", "rules", "alerts_test.yml", cwd=out)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_every_alert_fires_on_a_tripping_series_and_stays_quiet_otherwise(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    tests = _unit_tests(Thresholds())
    fired = {e["alertname"] for c in tests for e in c["alert_rule_test"] if e["exp_alerts"]}
    assert fired == {r.name for r in alert_rules()}
    assert "SUCCESS" in _promtool_test(out, Thresholds(), tests)


def test_promtool_unit_tests_can_fail(tmp_path: Path) -> None:
    """The harness above is not vacuous: expecting the quiet series to fire fails."""
    out = _stack(tmp_path)
    wrong = _case(
        [_series("vllm:num_requests_waiting", {"instance": "a"}, "3x3 0x27")],
        [("10m", "QueueBuildUp", [_expect("QueueBuildUp", {}, Thresholds())])],
    )
    doc = {"rule_files": ["alerts.yml"], "evaluation_interval": "1m", "tests": [wrong]}
    (out / "alerts_test.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    r = promtool("test", "rules", "alerts_test.yml", cwd=out)
    assert r.returncode == 1
    assert "alertname: QueueBuildUp" in r.stdout + r.stderr


def test_custom_thresholds_fire_where_the_defaults_stay_quiet(tmp_path: Path) -> None:
    t = Thresholds(kv_cache_fraction=0.8, kv_cache_for="5m")
    out = _stack(tmp_path, "--kv-cache-threshold", "0.8", "--kv-cache-for", "5m")
    labels = {"instance": "a:8000", "job": "vllm", "engine": "0", "model_name": "tiny"}
    case = _case(
        [_series("vllm:kv_cache_usage_perc", labels, "0.85x30")],
        [("12m", "KVCacheNearFull", [_expect("KVCacheNearFull", labels, t)])],
    )
    _promtool_test(out, t, [case])
    default_out = _stack(tmp_path / "d")
    quiet = _case(
        [_series("vllm:kv_cache_usage_perc", labels, "0.85x30")], [("12m", "KVCacheNearFull", [])]
    )
    _promtool_test(default_out, Thresholds(), [quiet])


# ---------------------------------------------------------------- the dashboard


def test_dashboard_is_a_valid_grafana_model(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    ds_uids = {
        d["uid"]
        for d in _load(out / "grafana/provisioning/datasources/prometheus.yml")["datasources"]
    }
    assert model["schemaVersion"] == 39 and isinstance(model["schemaVersion"], int)
    assert model["uid"] == "vllm-ledger" and model["title"]
    for key in ("time", "templating", "annotations", "panels"):
        assert key in model
    panels = model["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    rows = [p for p in panels if p["type"] == "row"]
    assert [r["title"].split(":")[0] for r in rows] == ["Now", "Experience", "Headroom", "Ledger"]
    boxes = []
    for p in panels:
        g = p["gridPos"]
        assert set(g) == {"h", "w", "x", "y"} and all(isinstance(v, int) for v in g.values())
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["x"] + g["w"] <= 24
        if p["type"] == "row":
            assert (g["w"], g["h"], g["x"]) == (24, 1, 0) and p["panels"] == []
            continue
        assert p["type"] in ("timeseries", "stat")
        assert p["datasource"] == {"type": "prometheus", "uid": next(iter(ds_uids))}
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert refs == [chr(ord("A") + i) for i in range(len(refs))]
        for t in p["targets"]:
            assert t["datasource"]["uid"] in ds_uids and t["datasource"]["type"] == "prometheus"
            assert t["expr"].strip()
        boxes.append((g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    for i, a in enumerate(boxes):  # no two panels overlap
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    ys = [p["gridPos"]["y"] for p in panels]
    assert ys == sorted(ys)  # rows and their panels in reading order


def _by_row(model: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    rows: dict[str, list[dict[str, Any]]] = {}
    current = ""
    for p in model["panels"]:
        if p["type"] == "row":
            current = p["title"].split(":")[0]
            rows[current] = []
        else:
            rows[current].append(p)
    return rows


def test_dashboard_rows_answer_the_write_ups_questions(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    rows = _by_row(model)

    def names(row: str) -> set[str]:
        return {n for p in rows[row] for t in p["targets"] for n in metric_names(t["expr"])}

    assert {
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:generation_tokens_total",
        "vllm:request_success_total",
    } <= names("Now")
    assert names("Experience") == {
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
    }
    exprs = [t["expr"] for p in rows["Experience"] for t in p["targets"]]
    assert sum("histogram_quantile(0.5," in e for e in exprs) == 2
    assert sum("histogram_quantile(0.99," in e for e in exprs) == 2
    assert {
        "vllm:kv_cache_usage_perc",
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_GPU_TEMP",
        "vllm_ledger_gpu_utilization_percent",
        "vllm_ledger_gpu_temperature_celsius",
    } <= names("Headroom")
    ledger = [t["expr"] for p in rows["Ledger"] for t in p["targets"]]
    assert any('window="today"' in e for e in ledger) and any('window="7d"' in e for e in ledger)
    assert {"vllm_ledger_window_uncovered_seconds", "vllm_ledger_window_cached_tokens"} <= names(
        "Ledger"
    )


def test_every_expression_parses(tmp_path: Path) -> None:
    """promtool parses each dashboard expression as a recording rule (alerts: check rules)."""
    out = _stack(tmp_path)
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    exprs = expressions(model)
    rules = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [
                    {"record": f"dashboard:expr_{i}", "expr": e} for i, e in enumerate(exprs)
                ],
            }
        ]
    }
    (out / "dashboard_rules.yml").write_text(yaml.safe_dump(rules))
    r = promtool("check", "rules", str(out / "dashboard_rules.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"SUCCESS: {len(exprs)} rules found" in r.stdout
    broken = {"groups": [{"name": "x", "rules": [{"record": "x:y", "expr": "sum(rate(x[1m])"}]}]}
    (out / "broken.yml").write_text(yaml.safe_dump(broken))
    assert promtool("check", "rules", str(out / "broken.yml")).returncode == 1


def _exporter_names(tmp_path: Path) -> set[str]:
    t0 = 1_800_000_000
    write_ledger(tmp_path / "l", "r1", start_ts=t0, end_ts=t0 + 60, events=[ev(t0 + 5, 40, 7, 16)])
    report = build_report([tmp_path / "l"], at_ts=t0 + 61, clock=lambda: t0 + 61)
    gpu = GpuReading(0, "GPU-x", "H200", 300.0, 50.0, 10, 100, 60.0)
    names = set()
    for fam in families(report, [gpu]):
        for s in fam.samples:
            names.add(s.name)
    return names


def test_every_metric_name_is_one_vllm_dcgm_or_the_exporter_really_serves(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    alerts = [r["expr"] for r in _load(out / "alerts.yml")["groups"][0]["rules"]]
    used = {n for e in [*expressions(model), *alerts] for n in metric_names(e)}
    source = _vllm_loggers().read_text()
    vllm_bases = set(re.findall(r'name="(vllm:[a-z_]+)"', source))
    vllm_names = (
        {b + "_total" for b in vllm_bases} | {b + "_bucket" for b in vllm_bases} | vllm_bases
    )
    exporter = _exporter_names(tmp_path)
    for name in sorted(used):
        if name.startswith("vllm:"):
            assert name in vllm_names, f"vLLM 0.32 exports no {name}"
        elif name.startswith("DCGM_"):
            assert name in DCGM_FIELDS, name
        else:
            assert name in exporter, f"the exporter serves no {name}"
    assert "vllm:gpu_cache_usage_perc" not in used  # the write-up's pre-0.32 name
    assert "vllm:time_per_output_token_seconds_bucket" not in used
    gpu_only = {
        e for e in [*expressions(model), *alerts] if all(is_gpu_metric(n) for n in metric_names(e))
    }
    assert len(gpu_only) == 5  # utilisation, memory (panel and alert), temperature, power
