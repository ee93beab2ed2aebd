"""`vllm-ledger observability`: the generated stack passes promtool and amtool, Prometheus
sends its alerts to an Alertmanager that routes them to a webhook, and the dashboard is a valid
Grafana model in the import format, every panel filtered by its variables. (The alert rules
themselves are tested in tests/unit/observe/test_alerts.py.)"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.credited_ledgers import Call, write_credited_ledger
from tests.e2e.prom import is_gpu_metric, metric_names, promtool
from tests.inproc import run_cli
from tests.ledgers import ev, write_ledger
from tests.vllm_source import vllm_metric_names
from vllm_ledger.notify.alerts import MAX_ALERTS
from vllm_ledger.observe.alerts import MINIMAL
from vllm_ledger.observe.dashboard import expressions, interpolate
from vllm_ledger.observe.exporter import LedgerCollector
from vllm_ledger.observe.families import families
from vllm_ledger.observe.gpu import GpuReading
from vllm_ledger.read.report import build_report

AMTOOL = shutil.which("amtool") or "/usr/bin/amtool"
VLLM_METRICS = REPO / "tests" / "data" / "vllm-0.32.0-metrics.txt"


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
    "alertmanager.yml",
    "compose.yaml",
    "grafana/provisioning/datasources/prometheus.yml",
    "grafana/provisioning/dashboards/vllm-ledger.yml",
    "grafana/dashboards/vllm-ledger.json",
]
PLACEHOLDER = "http://host.docker.internal:9095/alertmanager"


def _stack(tmp_path: Path, *args: str) -> Path:
    out = tmp_path / "stack"
    code, stdout, err = run_cli("observability", str(out), *args)
    assert code == 0, err
    assert stdout == ""
    wrote = [ln for ln in err.splitlines() if ln.startswith("wrote ")]
    assert wrote[: len(FILES)] == [f"wrote {out / f}" for f in FILES]
    return out


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


def test_prometheus_config_scrapes_every_target_and_alerts_to_alertmanager(
    tmp_path: Path,
) -> None:
    out = _stack(
        tmp_path,
        "--vllm", "10.0.0.1:8000", "--vllm", "10.0.0.2:8001=gpu2:8001",
        "--exporter", "10.0.0.1:9464",
    )  # fmt: skip
    cfg = _load(out / "prometheus.yml")
    assert cfg["global"] == {
        "scrape_interval": "15s",
        "evaluation_interval": "15s",
        # on every series it sends away: this host's name unless --prometheus-name says
        "external_labels": {"prometheus": socket.gethostname()},
    }
    assert "remote_write" not in cfg  # only with --remote-write
    assert cfg["rule_files"] == ["alerts.yml"]
    assert cfg["alerting"] == {
        "alertmanagers": [{"static_configs": [{"targets": ["alertmanager:9093"]}]}]
    }
    jobs = {j["job_name"]: j["static_configs"] for j in cfg["scrape_configs"]}
    assert jobs == {
        "vllm": [
            {"targets": ["10.0.0.1:8000"]},
            # named as the ledger names it: the instance label the dashboard and alerts use
            {"targets": ["10.0.0.2:8001"], "labels": {"instance": "gpu2:8001"}},
        ],
        "dcgm": [{"targets": ["dcgm-exporter:9400"]}],
        "vllm-ledger": [{"targets": ["10.0.0.1:9464"]}],
        "node": [{"targets": ["host.docker.internal:9100"]}],
        "cadvisor": [{"targets": ["cadvisor:8080"]}],
        "prometheus": [{"targets": ["localhost:9090"]}],  # itself
    }
    r = promtool("check", "config", str(out / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS: 1 rule files found" in r.stdout
    r = promtool("check", "rules", str(out / "alerts.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    # the default set: the three to start with (--alerts full writes every rule)
    assert f"SUCCESS: {len(MINIMAL)} rules found" in r.stdout


def test_targets_beside_vllm_carry_the_name_of_the_vllm_host_they_watch(tmp_path: Path) -> None:
    """The exporter, DCGM, the node exporter and cAdvisor of a vLLM's host are named by that
    host as the vLLM target is named, so the dashboard's $host (vLLM's hosts only) picks them
    all with one value: the compose file's own services watch the Docker host, a target on a
    vLLM's address its host; a named one stays as named, one on no vLLM's host as it is."""
    out = _stack(
        tmp_path,
        "--vllm", "host.docker.internal:8000=gpu1:8000", "--vllm", "10.0.0.2:8001=gpu2:8001",
        "--exporter", "10.0.0.2:9464", "--node-exporter", "10.0.0.3:9100",
        "--prometheus-name", "monitor1", "--remote-write", "http://10.0.0.9:8428/api/v1/write",
    )  # fmt: skip
    cfg = _load(out / "prometheus.yml")
    jobs = {j["job_name"]: j["static_configs"] for j in cfg["scrape_configs"]}
    assert jobs["vllm-ledger"] == [
        {"targets": ["10.0.0.2:9464"], "labels": {"instance": "gpu2:9464"}}
    ]
    assert jobs["dcgm"] == [
        {"targets": ["dcgm-exporter:9400"], "labels": {"instance": "gpu1:9400"}}
    ]
    assert jobs["cadvisor"] == [{"targets": ["cadvisor:8080"], "labels": {"instance": "gpu1:8080"}}]
    assert jobs["node"] == [{"targets": ["10.0.0.3:9100"]}]  # no vLLM there: as it is
    assert cfg["global"]["external_labels"] == {"prometheus": "monitor1"}
    assert cfg["remote_write"] == [{"url": "http://10.0.0.9:8428/api/v1/write"}]
    r = promtool("check", "config", str(out / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    named = _stack(tmp_path / "n", "--vllm", "host.docker.internal:8000=gpu1:8000",
                   "--node-exporter", "host.docker.internal:9100=other:9100")  # fmt: skip
    jobs = {
        j["job_name"]: j["static_configs"]
        for j in _load(named / "prometheus.yml")["scrape_configs"]
    }
    assert jobs["node"] == [
        {"targets": ["host.docker.internal:9100"], "labels": {"instance": "other:9100"}}
    ]
    assert jobs["vllm-ledger"] == [
        {"targets": ["host.docker.internal:9464"], "labels": {"instance": "gpu1:9464"}}
    ]
    # The dashboard's $host lists vLLM's hosts alone.
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    (host,) = [v for v in model["templating"]["list"] if v["name"] == "host"]
    assert host["query"] == 'label_values(up{job="vllm"}, instance)'


def test_a_bad_prometheus_name_is_refused_in_one_line(tmp_path: Path) -> None:
    code, _out, err = run_cli("observability", str(tmp_path / "s"), "--prometheus-name", 'a"b')
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            "--prometheus-name 'a\"b' is not a plain name: give e.g. --prometheus-name monitor1"
        )
    )


def _amtool_check(path: Path) -> None:
    if not os.path.exists(AMTOOL):
        pytest.skip("amtool is not installed (scripts/setup.sh installs it)")
    import subprocess

    r = subprocess.run(
        [AMTOOL, "check-config", str(path)], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "SUCCESS" in r.stdout and "1 receivers" in r.stdout


def _webhook(url: str, credentials_file: str) -> dict[str, Any]:
    return {
        "url": url,
        "send_resolved": True,
        "max_alerts": 100,  # what the notifier reads of one post (notify.alerts.MAX_ALERTS)
        "http_config": {"authorization": {"type": "Bearer", "credentials_file": credentials_file}},
    }


def test_alertmanager_routes_every_alert_to_the_webhook(tmp_path: Path) -> None:
    code, _out, err = run_cli("observability", str(tmp_path / "p"))
    assert code == 0
    assert f"note: alerts go to the placeholder {PLACEHOLDER}" in err
    am = _load(tmp_path / "p" / "alertmanager.yml")
    # the compose file's Alertmanager reads the token where compose mounts it
    assert am["receivers"] == [
        {"name": "notifier", "webhook_configs": [_webhook(PLACEHOLDER, "/etc/alertmanager/token")]}
    ]
    assert MAX_ALERTS == 100
    out = _stack(tmp_path, "--webhook-url", "http://192.168.1.5:9095/alertmanager")
    am = _load(out / "alertmanager.yml")
    assert am["route"]["receiver"] == "notifier"
    assert am["route"]["group_by"] == ["alertname", "instance", "ledger_instance", "model_name"]
    assert am["receivers"][0]["webhook_configs"] == [
        _webhook("http://192.168.1.5:9095/alertmanager", "/etc/alertmanager/token")
    ]
    _amtool_check(out / "alertmanager.yml")


def test_the_bearer_token_file_is_written_once_and_mounted(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    code, _out, err = run_cli("observability", str(out))
    assert code == 0, err
    token = out / "alertmanager-token"
    assert (token.stat().st_mode & 0o777) == 0o600
    first = token.read_text()
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}\n", first), first
    assert (
        f"wrote {token} (a new Alertmanager token, mode 0600; the container reads it "
        f"as nobody: sudo chown 65534 {token}): give the notifier the same token as its "
        "alertmanager_token_file (docs/observability.md)\n"
    ) in err
    am = _load(out / "compose.yaml")["services"]["alertmanager"]
    assert "./alertmanager-token:/etc/alertmanager/token:ro" in am["volumes"]
    # run again: the token is kept (never replaced), and nothing is said about it
    code, _out, err = run_cli("observability", str(out))
    assert code == 0 and token.read_text() == first and "Alertmanager token" not in err
    # an Alertmanager of your own reads the file named in alertmanager.yml, from its folder
    code, _out, err = run_cli("observability", str(out), "--alertmanager", "10.0.0.7:9093")
    assert code == 0 and token.read_text() == first
    hooks = _load(out / "alertmanager.yml")["receivers"][0]["webhook_configs"]
    assert hooks == [_webhook(PLACEHOLDER, "alertmanager-token")]
    _amtool_check(out / "alertmanager.yml")


def test_the_token_file_can_be_the_notifiers_own(tmp_path: Path, monkeypatch: Any) -> None:
    (tmp_path / "etc").mkdir()
    theirs = tmp_path / "etc" / "am_token"
    theirs.write_text("s3cret\n")
    monkeypatch.chdir(tmp_path)  # a relative FILE is from the current folder, made absolute
    flag = ("--alertmanager-token-file", "etc/am_token")
    code, _out, err = run_cli("observability", "s", *flag, "--alertmanager", "h:9093")
    assert code == 0, err
    hooks = _load(tmp_path / "s" / "alertmanager.yml")["receivers"][0]["webhook_configs"]
    assert hooks == [_webhook(PLACEHOLDER, str(theirs))]
    code, _out, err = run_cli("observability", "s", *flag)
    assert code == 0, err
    am = _load(tmp_path / "s" / "compose.yaml")["services"]["alertmanager"]
    assert f"{theirs}:/etc/alertmanager/token:ro" in am["volumes"]
    # kept as it was, nothing written beside the stack, nothing said
    assert "Alertmanager token" not in err and theirs.read_text() == "s3cret\n"
    assert not (tmp_path / "s" / "alertmanager-token").exists()


def test_a_folder_where_the_token_should_be_is_refused(tmp_path: Path) -> None:
    # docker compose makes a folder where a mounted file is missing
    (tmp_path / "s" / "alertmanager-token").mkdir(parents=True)
    code, out, err = run_cli("observability", str(tmp_path / "s"))
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: {tmp_path / 's' / 'alertmanager-token'} is not a regular file "
        "(docker compose makes a folder where a mounted file is missing): remove it and run "
        "again, or give --alertmanager-token-file FILE\n"
    )
    assert not (tmp_path / "s" / "alertmanager.yml").exists()  # refused before writing


def test_an_existing_alertmanager_is_scraped_not_run(tmp_path: Path) -> None:
    out = _stack(tmp_path, "--alertmanager", "10.0.0.7:9093")
    cfg = _load(out / "prometheus.yml")
    assert cfg["alerting"]["alertmanagers"][0]["static_configs"][0]["targets"] == ["10.0.0.7:9093"]
    assert "alertmanager" not in _load(out / "compose.yaml")["services"]


def test_compose_runs_prometheus_alertmanager_grafana_on_3300_and_dcgm(tmp_path: Path) -> None:
    out = _stack(tmp_path)
    services = _load(out / "compose.yaml")["services"]
    assert set(services) == {
        "prometheus",
        "alertmanager",
        "grafana",
        "dcgm-exporter",
        "node-exporter",
        "cadvisor",
    }
    assert services["grafana"]["ports"] == ["3300:3000"]
    assert "./prometheus.yml:/etc/prometheus/prometheus.yml:ro" in services["prometheus"]["volumes"]
    assert "./alerts.yml:/etc/prometheus/alerts.yml:ro" in services["prometheus"]["volumes"]
    am = services["alertmanager"]
    assert am["ports"] == ["9093:9093"]
    assert am["volumes"] == [
        "./alertmanager.yml:/etc/alertmanager/alertmanager.yml:ro",
        "./alertmanager-token:/etc/alertmanager/token:ro",
        "alertmanager-data:/alertmanager",
    ]
    assert "--config.file=/etc/alertmanager/alertmanager.yml" in am["command"]
    assert services["prometheus"]["depends_on"] == ["alertmanager"]
    dcgm = services["dcgm-exporter"]
    assert dcgm["ports"] == ["9400:9400"]
    assert dcgm["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}
    ]
    ds = _load(out / "grafana/provisioning/datasources/prometheus.yml")["datasources"]
    assert [(d["type"], d["url"], d["uid"], d["isDefault"]) for d in ds] == [
        ("prometheus", "http://prometheus:9090", "vllm-prometheus", True)
    ]
    providers = _load(out / "grafana/provisioning/dashboards/vllm-ledger.yml")["providers"]
    mounted = [v for v in services["grafana"]["volumes"] if v.startswith("./grafana/dashboards:")]
    assert mounted == [f"./grafana/dashboards:{providers[0]['options']['path']}:ro"]


def test_no_dcgm_and_an_external_dcgm(tmp_path: Path) -> None:
    out = _stack(tmp_path, "--no-dcgm")
    assert "dcgm-exporter" not in _load(out / "compose.yaml")["services"]
    jobs = [j["job_name"] for j in _load(out / "prometheus.yml")["scrape_configs"]]
    assert jobs == ["vllm", "vllm-ledger", "node", "cadvisor", "prometheus"]
    out2 = tmp_path / "ext"
    code, _o, _e = run_cli("observability", str(out2), "--dcgm", "10.0.0.9:9400=gpu1:9400")
    assert code == 0
    assert "dcgm-exporter" not in _load(out2 / "compose.yaml")["services"]
    cfg = _load(out2 / "prometheus.yml")
    assert cfg["scrape_configs"][1] == {
        "job_name": "dcgm",
        "static_configs": [{"targets": ["10.0.0.9:9400"], "labels": {"instance": "gpu1:9400"}}],
    }


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--vllm", "no-port"], "target 'no-port' is not HOST:PORT: e.g. 192.168.1.10:8000"),
        (["--vllm", "h:99999"], "target 'h:99999' is not HOST:PORT: e.g. 192.168.1.10:8000"),
        (["--vllm", "h:8000=gpu1"], "target 'gpu1' is not HOST:PORT: e.g. 192.168.1.10:8000"),
        (["--alertmanager", "am"], "target 'am' is not HOST:PORT: e.g. 192.168.1.10:8000"),
        (["--dcgm", "h:9400", "--no-dcgm"], "--dcgm and --no-dcgm contradict each other"),
        (["--webhook-url", "ftp://x/y"], "--webhook-url 'ftp://x/y' is not an http:// or"),
        (["--runbook-url", "a b"], "--runbook-url 'a b' is not a URL"),
        (["--runbook-url", "docs/runbook.md"], "--runbook-url 'docs/runbook.md' is not an http"),
        (["--runbook-url", "https://h/r.md#x"], "--runbook-url 'https://h/r.md#x' has a '#'"),
        (["--alerts", "some"], "argument --alerts: invalid choice: 'some'"),
        (["--max-model-len", "0"], "--max-model-len '0' is out of range"),
        (["--alertmanager-token-file", "a:b"], "--alertmanager-token-file 'a:b' is not a file"),
    ],
)
def test_bad_flags_are_one_line_errors(tmp_path: Path, args: list[str], message: str) -> None:
    code, out, err = run_cli("observability", str(tmp_path / "s"), *args)
    assert (code, out) == (2, "")
    assert err.startswith("vllm-ledger: error: ") and message in err, err
    assert len(err.splitlines()) == 1, err


def test_bad_threshold_is_refused_by_argparse(tmp_path: Path) -> None:
    code, _out, err = run_cli("observability", str(tmp_path / "s"), "--kv-cache-threshold", "90")
    assert code == 2
    assert err == (
        "vllm-ledger: error: --kv-cache-threshold '90' looks like a percentage: "
        "give a fraction, e.g. --kv-cache-threshold 0.9\n"
    )
    code, _out, err = run_cli("observability", str(tmp_path / "s"), "--ttft-for", "5 minutes")
    assert code == 2
    assert "is not a duration" in err


# ---------------------------------------------------------------- the dashboard

DS = {"type": "prometheus", "uid": "${datasource}"}
# The metrics that carry vLLM's or the ledger's `model_name`: a target selecting one must
# filter by $model_name. (vLLM's process and HTTP metrics, the ledger's coverage and writers
# and every GPU metric have no model.)
_NO_MODEL = re.compile(
    r"^(up|process_.*|http_.*|DCGM_.*|node_.*|container_.*|vllm_ledger_gpu_.*|vllm_ledger_writers.*|vllm_ledger_run_start_.*"
    r"|vllm_ledger_window_(uncovered_seconds|wall_seconds|complete|problems)"
    # whose tokens: by key and adapter, no model_name (the adapter is the body's model)
    r"|vllm_ledger_(window_)?(attributed|not_attributed|requests_aborted|attribution)_.*)$"
)
ALL = {"host": ".*", "instance": ".*", "model_name": ".*", "max_model_len": "32768"}


def _names(expr: str) -> set[str]:
    """The metric names an expression selects; ``$max_model_len`` is a number, not a name."""
    return metric_names(expr.replace("$max_model_len", "1"))


def _model(tmp_path: Path, *args: str) -> dict[str, Any]:
    out = _stack(tmp_path, *args)
    doc: dict[str, Any] = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    return doc


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


def _panels(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {p["title"]: p for p in model["panels"] if p["type"] != "row"}


def test_dashboard_is_a_valid_grafana_model(tmp_path: Path) -> None:
    model = _model(tmp_path)
    assert model["schemaVersion"] == 39 and isinstance(model["schemaVersion"], int)
    assert model["uid"] == "vllm-ledger" and model["title"]
    for key in ("time", "templating", "annotations", "panels"):
        assert key in model
    panels = model["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)) and all(isinstance(i, int) for i in ids)
    rows = [p for p in panels if p["type"] == "row"]
    assert [r["title"].split(":")[0] for r in rows] == [
        "Now", "Experience", "Headroom", "GPUs", "Host", "Ledger", "Whose tokens", "Fleet",
    ]  # fmt: skip
    boxes = []
    for p in panels:
        g = p["gridPos"]
        assert set(g) == {"h", "w", "x", "y"} and all(isinstance(v, int) for v in g.values())
        assert g["w"] > 0 and g["h"] > 0 and g["x"] >= 0 and g["x"] + g["w"] <= 24
        if p["type"] == "row":
            assert (g["w"], g["h"], g["x"]) == (24, 1, 0) and p["panels"] == []
            continue
        assert p["type"] in ("timeseries", "stat", "bargauge")
        assert p["datasource"] == DS
        assert p["targets"], p["title"]
        refs = [t["refId"] for t in p["targets"]]
        assert refs == [chr(ord("A") + i) for i in range(len(refs))]
        for t in p["targets"]:
            assert t["datasource"] == DS
            assert t["expr"].strip()
        boxes.append((g["x"], g["y"], g["x"] + g["w"], g["y"] + g["h"]))
    for i, a in enumerate(boxes):  # no two panels overlap
        for b in boxes[i + 1 :]:
            assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1], (a, b)
    ys = [p["gridPos"]["y"] for p in panels]
    assert ys == sorted(ys)  # rows and their panels in reading order


def test_dashboard_imports_through_grafanas_import_form(tmp_path: Path) -> None:
    """__inputs names the data source the import form asks for; ${DS_PROMETHEUS} is where the
    form's choice lands (the $datasource variable's default); __requires lists Grafana, the
    Prometheus plugin and every panel type used."""
    model = _model(tmp_path)
    assert model["__inputs"] == [
        {
            "name": "DS_PROMETHEUS",
            "label": "Prometheus",
            "description": "the Prometheus that scrapes vLLM, DCGM and the ledger exporter",
            "type": "datasource",
            "pluginId": "prometheus",
            "pluginName": "Prometheus",
        }
    ]
    text = json.dumps(model)
    inputs = set(re.findall(r"\$\{(DS_[A-Z_]+)\}", text))
    assert inputs == {"DS_PROMETHEUS"}  # every ${DS_...} used is declared, and vice versa
    requires = {(r["type"], r["id"]) for r in model["__requires"]}
    kinds = {p["type"] for p in model["panels"] if p["type"] != "row"}
    assert requires == {("grafana", "grafana"), ("datasource", "prometheus")} | {
        ("panel", k) for k in kinds
    }
    grafana = next(r for r in model["__requires"] if r["id"] == "grafana")
    assert tuple(int(x) for x in grafana["version"].split(".")) >= (10, 3, 0)  # schema 39
    assert "vllm-prometheus" not in text  # no provisioned uid baked in


def test_dashboard_variables(tmp_path: Path) -> None:
    model = _model(tmp_path, "--max-model-len", "8192")
    var = {v["name"]: v for v in model["templating"]["list"]}
    assert list(var) == ["datasource", "host", "instance", "model_name", "max_model_len"]
    ds = var["datasource"]
    assert (ds["type"], ds["query"], ds["current"]["value"]) == (
        "datasource",
        "prometheus",
        "${DS_PROMETHEUS}",
    )
    for name in ("host", "instance", "model_name"):
        v = var[name]
        assert (v["type"], v["multi"], v["includeAll"]) == ("query", True, True), name
        assert v["datasource"] == DS and v["refresh"] == 2
    assert var["host"]["query"] == 'label_values(up{job="vllm"}, instance)'  # vLLM's hosts
    assert var["model_name"]["query"].startswith("label_values(")
    assert var["model_name"]["query"].endswith(", model_name)")
    assert var["instance"]["query"].startswith("query_result(")
    assert "$host" in var["instance"]["query"]  # chained: the instances of the chosen hosts
    assert "allValue" not in var["instance"]
    assert var["host"]["allValue"] == var["model_name"]["allValue"] == ".*"
    assert (var["max_model_len"]["type"], var["max_model_len"]["query"]) == ("textbox", "8192")


def test_every_panel_is_filtered_by_the_variables(tmp_path: Path) -> None:
    model = _model(tmp_path)
    for p in model["panels"]:
        for t in p.get("targets", []):
            names = _names(t["expr"])
            if not names:
                assert t["expr"] == "vector($max_model_len)", p["title"]
                continue
            assert "$instance" in t["expr"] or "$host" in t["expr"], (p["title"], t["expr"])
            with_model = {n for n in names if not _NO_MODEL.match(n)}
            if with_model:
                assert "$model_name" in t["expr"], (p["title"], t["expr"])
            if all(is_gpu_metric(n) for n in names):  # a GPU belongs to a host
                assert "$host" in t["expr"], p["title"]


def test_per_instance_panels_beside_the_fleet_sums_and_units(tmp_path: Path) -> None:
    model = _model(tmp_path)
    panels = _panels(model)
    units = {title: p["fieldConfig"]["defaults"]["unit"] for title, p in panels.items()}
    assert {
        "Uptime": "s",
        "Request rate": "reqps",
        "Running batch size (requests running)": "short",
        "Tokens per second": "suffix: tokens/s",
        "Errors": "percentunit",
        "Time to first token": "s",
        "Time per output token": "s",
        "KV cache usage": "percentunit",
        "GPU utilisation": "percent",
        "GPU memory used": "percentunit",
        "GPU temperature": "celsius",
        "GPU power": "watt",
        "Uncovered time per instance": "s",
        "Tokens per second from the ledger": "suffix: tokens/s",
    }.items() <= units.items()
    # per instance and model, with the sum over the selection in the same panel
    for title in ("Request rate", "Running batch size (requests running)", "Requests waiting",
                  "Tokens per second", "Tokens per second from the ledger"):  # fmt: skip
        exprs = [t["expr"] for t in panels[title]["targets"]]
        per = ("sum by (instance, model_name)", "sum by (ledger_instance, model_name)")
        assert any(e.startswith(per) for e in exprs), title
        assert any(e.startswith("sum(") for e in exprs), title
    ttft = [t["expr"] for t in panels["Time to first token"]["targets"]]
    assert sum("sum by (instance, model_name, le)" in e for e in ttft) == 2  # P50, P99
    assert sum("sum by (le)" in e for e in ttft) == 1  # the selection's P99
    # the ledger row shows coverage per instance
    rows = _by_row(model)
    coverage = [t["expr"] for t in panels["Uncovered time per instance"]["targets"]]
    assert coverage[0].startswith("max by (ledger_instance, window)")
    assert panels["Uncovered time per instance"] in rows["Ledger"]
    # the fleet row: sums by host and by instance, the total, and who is incomplete
    fleet = [t["expr"] for p in rows["Fleet"] for t in p["targets"]]
    assert any(e.startswith("sum by (host) (label_replace(") for e in fleet)
    assert any(e.startswith("sum by (ledger_instance, model_name)") for e in fleet)
    assert any("vllm_ledger_window_complete" in e for e in fleet)


def test_dashboard_rows_answer_the_operators_questions(tmp_path: Path) -> None:
    model = _model(tmp_path)
    rows = _by_row(model)
    panels = _panels(model)

    def names(row: str) -> set[str]:
        return {n for p in rows[row] for t in p["targets"] for n in _names(t["expr"])}

    assert {
        "up",
        "process_start_time_seconds",
        "vllm:num_requests_running",
        "vllm:num_requests_waiting",
        "vllm:generation_tokens_total",
        "vllm:request_success_total",
        "http_requests_total",
    } <= names("Now")
    assert names("Experience") == {
        "vllm:time_to_first_token_seconds_bucket",
        "vllm:inter_token_latency_seconds_bucket",
    }
    assert {
        "vllm:kv_cache_usage_perc",
        "vllm:request_prompt_tokens_sum",
        "vllm:request_prompt_tokens_count",
        "vllm:request_generation_tokens_sum",
        "vllm:request_generation_tokens_count",
    } == names("Headroom")
    per_request = [
        t["expr"] for t in panels["Tokens per request against --max-model-len"]["targets"]
    ]
    # "feed the monitoring back into the launch flags"
    assert per_request[-1] == "vector($max_model_len)"
    assert {
        "DCGM_FI_DEV_GPU_UTIL",
        "DCGM_FI_DEV_FB_USED",
        "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE",
        "vllm_ledger_gpu_utilization_percent",
        "vllm_ledger_gpu_temperature_celsius",
        "vllm_ledger_gpu_power_watts",
    } <= names("GPUs")
    temp = [t["expr"] for t in panels["GPU temperature"]["targets"]]
    power = [t["expr"] for t in panels["GPU power"]["targets"]]
    assert all("TEMP" in e or "temperature" in e for e in temp)  # not sharing a panel
    assert all("POWER" in e or "power" in e for e in power)
    ledger = [t["expr"] for p in rows["Ledger"] for t in p["targets"]]
    assert any('window="today"' in e for e in ledger) and any('window="7d"' in e for e in ledger)
    assert {"vllm_ledger_window_uncovered_seconds", "vllm_ledger_window_cached_tokens"} <= names(
        "Ledger"
    )


def test_the_whose_row_shows_tokens_by_key_and_adapter_and_what_is_not_attributed(
    tmp_path: Path,
) -> None:
    model = _model(tmp_path)
    rows = _by_row(model)
    panels = _panels(model)
    whose = rows["Whose tokens"]
    assert [p["title"] for p in whose] == [
        "Tokens per second by key",
        "Tokens per second by adapter",
        "Not attributed, by reason",
        "Requests aborted per second by key",
        "Input tokens today by key",
        "Output tokens today by key",
    ]
    names = {n for p in whose for t in p["targets"] for n in _names(t["expr"])}
    assert names == {
        "vllm_ledger_attributed_prompt_tokens_total",
        "vllm_ledger_attributed_generation_tokens_total",
        "vllm_ledger_not_attributed_prompt_tokens_total",
        "vllm_ledger_not_attributed_generation_tokens_total",
        "vllm_ledger_requests_aborted_total",
        "vllm_ledger_window_attributed_input_tokens",
        "vllm_ledger_window_attributed_output_tokens",
    }
    by_key = [t["expr"] for t in panels["Tokens per second by key"]["targets"]]
    assert by_key == [
        'sum by (key) (rate(vllm_ledger_attributed_prompt_tokens_total{instance=~"$host:[0-9]+"}'
        "[5m]))",
        "sum by (key) (rate(vllm_ledger_attributed_generation_tokens_total"
        '{instance=~"$host:[0-9]+"}[5m]))',
    ]
    today = panels["Input tokens today by key"]["targets"][0]["expr"]
    assert 'window="today",by="key"' in today and today.startswith("sum by (key) (")
    reasons = [t["expr"] for t in panels["Not attributed, by reason"]["targets"]]
    assert all(e.startswith("sum by (reason) (rate(") for e in reasons)
    assert "user" not in json.dumps(whose)  # the user label is off by default: no panel reads it


def test_every_expression_parses(tmp_path: Path) -> None:
    """promtool parses each dashboard expression, its variables set as Grafana sets them (one
    value, several, all), as a recording rule."""
    model = _model(tmp_path)
    exprs = []
    for values in (
        ALL,
        {**ALL, "instance": ["gpu1:8000"], "model_name": ["qwen3-8b"], "host": ["gpu1"]},
        {**ALL, "instance": ["gpu1:8000", "gpu2.lan:8001"], "model_name": ["a", "b+c"]},
    ):
        for e in expressions(model):
            x = interpolate(e, values)
            assert "$" not in x.replace('"$1"', ""), x  # every variable substituted
            exprs.append(x)
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
    out = tmp_path / "stack"
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
    # Whose tokens: a real exporter read of a ledger with credits (and a cut stream).
    calls = [
        Call(t0 + 5, "team-a", "tiny", prompt=40, gen=7, cached=16),
        Call(t0 + 9, "team-a", "tiny", prompt=3, gen=1, aborted=True),
    ]
    write_credited_ledger(tmp_path / "w", "r1", start_ts=t0, end_ts=t0 + 60, calls=calls)
    # A run still open (the vLLM running): its start, the Uptime panel's fallback.
    write_ledger(
        tmp_path / "o",
        "r2",
        start_ts=t0 + 1,
        end_ts=t0 + 60,
        clean=False,
        events=[ev(t0 + 5, 8, 2)],
    )
    for root in (tmp_path / "w", tmp_path / "o"):
        collector = LedgerCollector([root], tz="UTC", clock=lambda: t0 + 61)
        for fam in collector.collect():
            for s in fam.samples:
                names.add(s.name)
    return names


def test_every_metric_name_is_one_vllm_dcgm_or_the_exporter_really_serves(tmp_path: Path) -> None:
    out = _stack(tmp_path, "--alerts", "full")
    model = json.loads((out / "grafana/dashboards/vllm-ledger.json").read_text())
    alerts = [r["expr"] for r in _load(out / "alerts.yml")["groups"][0]["rules"]]
    used = {n for e in [*expressions(model), *alerts] for n in _names(e)}
    vllm_names = vllm_metric_names()
    # what vLLM's API server serves besides its own vllm:* (process collector, the HTTP
    # instrumentator), as a real vLLM 0.32 /metrics showed it
    served = {
        line.split("{")[0].split(" ")[0]
        for line in VLLM_METRICS.read_text().splitlines()
        if line and not line.startswith("#")
    }
    exporter = _exporter_names(tmp_path)
    for name in sorted(used):
        if name.startswith("vllm:"):
            assert name in vllm_names, f"vLLM 0.32 exports no {name}"
        elif name.startswith("DCGM_"):
            assert name in DCGM_FIELDS, name
        elif name == "up":
            continue  # Prometheus's own, per target
        elif name.startswith(("node_", "container_")):
            continue  # the node exporter's and cAdvisor's: tests/test_host_monitoring.py
        elif name.startswith(("http_", "process_")):
            assert name in served, f"vLLM's /metrics has no {name}"
        else:
            assert name in exporter, f"the exporter serves no {name}"
    assert "vllm:gpu_cache_usage_perc" not in used  # the pre-0.32 name older guides use
    assert "vllm:time_per_output_token_seconds_bucket" not in used
    gpu_only = {
        e
        for e in [*expressions(model), *alerts]
        if _names(e) and all(is_gpu_metric(n) for n in _names(e))
    }
    # utilisation, memory (panel and alert), temperature (panel and alert), power
    assert len(gpu_only) == 6
