"""One source for the ledger exporter's address: the stack that `observability` writes scrapes
it where `render --units`, compose mode and Kubernetes put it (observe/stack.py), each read
from what the commands write, not from the constants."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import yaml

from tests.conftest import REPO, run_cli
from vllm_ledger.hostport import host_port

DATA = REPO / "tests" / "data" / "render"
HOST_FILE = DATA / "gpu-node.json"


def _scrape_target(tmp_path: Path) -> tuple[str, int]:
    """The ledger exporter's target in the default stack, and how its Prometheus reaches it."""
    out = tmp_path / "stack"
    rc, _, err = run_cli("observability", str(out))
    assert rc == 0, err
    cfg = yaml.safe_load((out / "prometheus.yml").read_text())
    (job,) = [j for j in cfg["scrape_configs"] if j["job_name"] == "vllm-ledger"]
    (target,) = job["static_configs"][0]["targets"]
    host, port = host_port(target)
    prometheus = yaml.safe_load((out / "compose.yaml").read_text())["services"]["prometheus"]
    # the Prometheus container reaches that name as the Docker host
    assert f"{host}:host-gateway" in prometheus["extra_hosts"]
    return host, port


def _unit_listen(tmp_path: Path) -> tuple[str, int]:
    out = tmp_path / "units"
    rc, _, err = run_cli("render", "--host", str(HOST_FILE), "--units", str(out))
    assert rc == 0, err
    text = (out / "vllm-primary-ledger-exporter.service").read_text()
    joined = text.replace("\\\n", " ")  # systemd's continuation lines, as it joins them
    (line,) = [ln for ln in joined.splitlines() if ln.startswith("ExecStart=")]
    argv = shlex.split(line.removeprefix("ExecStart="))
    return host_port(argv[argv.index("--listen") + 1])


def _compose_exporter(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "compose.yaml"
    rc, _, err = run_cli(
        "render", "--host", str(HOST_FILE), "--mode", "compose", "--usage", "--output", str(out)
    )
    assert rc == 0, err
    services = yaml.safe_load(out.read_text())["services"]
    exporter: dict[str, Any] = services["ledger-exporter"]
    return exporter


def _kubernetes_port(tmp_path: Path) -> int:
    out = tmp_path / "k8s.yaml"
    rc, _, err = run_cli(
        "render", "--host", str(HOST_FILE), "--mode", "kubernetes", "--usage", "--output", str(out)
    )
    assert rc == 0, err
    docs = [d for d in yaml.safe_load_all(out.read_text()) if d]
    (deployment,) = [d for d in docs if d["kind"] in ("Deployment", "StatefulSet")]
    containers = deployment["spec"]["template"]["spec"]["containers"]
    (sidecar,) = [c for c in containers if c["name"] == "ledger-exporter"]
    listen = sidecar["args"][sidecar["args"].index("--listen") + 1]
    (port,) = [p["containerPort"] for p in sidecar["ports"]]
    assert host_port(listen)[1] == port
    return int(port)


def test_the_stack_scrapes_the_exporter_where_the_unit_compose_and_kubernetes_put_it(
    tmp_path: Path,
) -> None:
    gateway, port = _scrape_target(tmp_path)
    assert gateway == "host.docker.internal"
    # render --units: on every address of the host (the Docker gateway among them, which a
    # 127.0.0.1 listener would refuse), at the port the stack scrapes
    assert _unit_listen(tmp_path) == ("0.0.0.0", port)
    # compose mode: the exporter service beside vLLM, published there on the host, reading the
    # same ledger folder read-only
    exporter = _compose_exporter(tmp_path)
    (published,) = exporter["ports"]
    assert (published["host_ip"], int(published["published"])) == ("0.0.0.0", port)
    listen = exporter["command"][exporter["command"].index("--listen") + 1]
    assert host_port(listen)[1] == published["target"]
    ledger = [v for v in exporter["volumes"] if v["target"] == "/vllm-ledger/usage"]
    assert ledger == [
        {
            "type": "bind",
            "source": "/srv/artifacts/usage",
            "target": "/vllm-ledger/usage",
            "read_only": True,
        }
    ]
    # Kubernetes: the sidecar serves the same port (its ServiceMonitor scrapes the pod)
    assert _kubernetes_port(tmp_path) == port
