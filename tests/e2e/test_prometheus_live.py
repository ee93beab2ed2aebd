"""The generated stack against live parts: a real Prometheus scraping a real vLLM on CPU (DP 2 x
API 2, the attribution middleware on) and the ledger exporter while traffic runs, then across a
vLLM restart.

- every PromQL expression of the dashboard, with its variables set to each instance and model
  (and to "All") as Grafana would set them, and of the alerts (their signal, before the
  threshold) returns data, except those that read only GPU metrics, which parse and come back
  empty on a host with neither DCGM nor NVML; while the exporter serves no ``ledger_instance``
  on its counters yet, the expressions that select the ledger by it need only parse;
- the vLLM target is named as the ledger names its instance (``--vllm ADDRESS=NAME``), so one
  ``$instance`` value selects vLLM's series and the ledger's;
- ``sum(rate(vllm:generation_tokens_total[1m]))`` is non-zero during traffic;
- the exporter's counters equal ``vllm-ledger report --json`` totals and vLLM's own counters,
  and keep rising across a vLLM restart where vLLM's counters fall back to zero.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.ports import free_port
from devtools.traffic import send_mix
from tests.conftest import REPO, run_cli
from tests.e2e.prom import (
    Prometheus,
    is_gpu_metric,
    metric_names,
    node_exporter,
    promtool,
)
from tests.e2e.settle import settle
from vllm_ledger.format.identity import host_name
from vllm_ledger.observe.alerts import alert_rules
from vllm_ledger.observe.dashboard import (
    HOST_QUERY,
    INSTANCE_QUERY,
    MODEL_QUERY,
    expressions,
    interpolate,
)
from vllm_ledger.promtext import parse_samples, sum_metric

pytestmark = pytest.mark.e2e

# The multi-process shape, scaled down: two DP ranks, two API processes. vLLM's /metrics is then
# multiprocess and has no process_* series (the Uptime panel falls back to the ledger's run
# start); every panel must still answer.
DP2_API2 = ("--data-parallel-size", "2", "--api-server-count", "2")
# The attribution middleware on, as render writes it: the whose-tokens panels have data.
MIDDLEWARE = ("--middleware", "vllm_ledger.middleware.LedgerMiddleware")

FIGURES = {
    "input": "vllm_ledger_prompt_tokens_total",
    "output": "vllm_ledger_generation_tokens_total",
    "cached": "vllm_ledger_cached_tokens_total",
    "requests": "vllm_ledger_requests_total",
}


def wait_for(
    what: str, check: Callable[[], Any], timeout_s: float = 120.0, every_s: float = 0.5
) -> Any:
    """``check()``'s first truthy answer; fails naming ``what`` and the last answer."""
    deadline = time.monotonic() + timeout_s
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(every_s)
    raise AssertionError(f"{what}: not seen within {timeout_s} s (last: {last!r})")


@pytest.fixture
def exporter(tmp_path: Path) -> Iterator[Callable[[Path], int]]:
    procs: list[subprocess.Popen[bytes]] = []

    def start(root: Path) -> int:
        port = free_port()
        env = dict(os.environ, PYTHONPATH=str(REPO))
        log = open(tmp_path / "exporter.log", "ab")  # noqa: SIM115
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vllm_ledger",
                    "exporter",
                    "--root",
                    str(root),
                    "--listen",
                    f"127.0.0.1:{port}",
                    "--tz",
                    "UTC",
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
        wait_for("exporter /metrics", lambda: _exporter_text(port), timeout_s=30)
        return port

    yield start
    for p in procs:
        os.kill(p.pid, signal.SIGTERM)
        p.wait(20)


def _exporter_text(port: int) -> str | None:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as r:
            return r.read().decode()
    except OSError:
        return None


def _exporter_totals(port: int) -> dict[str, int]:
    samples = parse_samples(_exporter_text(port) or "")
    return {k: int(sum_metric(samples, name)) for k, name in FIGURES.items()}


def _report_totals(root: Path) -> dict[str, int]:
    code, out, err = run_cli("report", "--root", str(root), "--json")
    assert code == 0, err
    total = json.loads(out)["windows"]["total"]
    return {k: total[k] for k in FIGURES}


def _agreed(root: Path, port: int, want: dict[str, int]) -> dict[str, int]:
    """Exporter == report --json == want, once the ledger's last commit has landed."""

    def check() -> dict[str, int] | None:
        exp, rep = _exporter_totals(port), _report_totals(root)
        return exp if exp == rep == want else None

    return wait_for(f"exporter == report --json == {want}", check, timeout_s=30)


class Traffic:
    """send_mix rounds in a thread until stopped."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.rounds = 0
        self.error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                send_mix(self.url, "tiny")
                self.rounds += 1
        except BaseException as exc:  # surfaced by stop()
            self.error = exc

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(300)
        if self.error is not None:
            raise self.error


def _signals(stack: Path) -> list[str]:
    """The alerts' signals, checked to be exactly what the generated alerts.yml compares."""
    rules = yaml.safe_load((stack / "alerts.yml").read_text())["groups"][0]["rules"]
    lib = alert_rules()
    assert [r["expr"] for r in rules] == [r.expr for r in lib]
    return [r.signal for r in lib]


def _gpu_only(expr: str) -> bool:
    names = metric_names(expr.replace("$max_model_len", "1"))
    return bool(names) and all(is_gpu_metric(n) for n in names)


def _container_only(expr: str) -> bool:
    """cAdvisor's series: no cAdvisor runs here (no package of it), so these stay empty."""
    names = metric_names(expr)
    return bool(names) and all(n.startswith("container_") for n in names)


def _variable_values(prom: Prometheus) -> dict[str, list[str]]:
    """$host, $instance and $model_name's options, found as Grafana's variable queries find
    them (label_values through the series API, query_result through an instant query)."""
    host_selector = re.match(r"label_values\((.*), instance\)$", HOST_QUERY)
    assert host_selector is not None  # up{job="vllm"}: vLLM's hosts alone
    ups = prom.api("label/instance/values", **{"match[]": host_selector.group(1)})["data"]
    hosts = sorted({m.group(1) for v in ups if (m := re.match(r"^(.+):[0-9]+$", v))})
    inner = interpolate(INSTANCE_QUERY, {"host": ".*"})
    inner = inner[len("query_result(") : -1]
    instances = sorted({r["metric"]["instance"] for r in prom.vector(inner)})
    selector = re.match(r"label_values\((.*), model_name\)$", MODEL_QUERY)
    assert selector is not None
    models = prom.api("label/model_name/values", **{"match[]": selector.group(1)})["data"]
    return {"host": hosts, "instance": instances, "model_name": sorted(models)}


def _value_sets(v: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Each instance with each model (its host chosen), then "All" of each."""
    sets: list[dict[str, Any]] = [
        {
            "host": [i.rsplit(":", 1)[0]],
            "instance": [i],
            "model_name": [m],
            "max_model_len": "32768",
        }
        for i in v["instance"]
        for m in v["model_name"]
    ]
    sets.append({"host": ".*", "instance": v["instance"], "model_name": ".*",
                 "max_model_len": "32768"})  # fmt: skip
    return sets


def _evaluate(prom: Prometheus, exprs: list[str]) -> dict[str, list[Any]]:
    results = {}
    for e in exprs:
        doc = prom.query(e)
        assert doc["status"] == "success", (e, doc)
        results[e] = doc["data"]["result"]
    return results


def test_stack_against_live_vllm_exporter_and_prometheus(
    vllm_server, exporter, tmp_path: Path
) -> None:
    root = tmp_path / "ledger"
    vport = free_port()
    s1 = vllm_server(root, port=vport, extra_args=(*DP2_API2, *MIDDLEWARE))
    eport = exporter(root)
    dcgm_port = free_port()  # no DCGM here: its job is down, the GPU expressions are empty
    cadvisor_port = free_port()  # no cAdvisor either: the container expressions are empty
    host = host_name()  # as the plugin names this host in the ledger
    # A real node exporter (Debian's), named as this host: the Host row's node queries answer.
    nport = free_port()
    with node_exporter(nport, tmp_path / "node-exporter.log"):
        stack = tmp_path / "stack"
        code, _out, err = run_cli(
            "observability",
            str(stack),
            "--vllm", f"127.0.0.1:{vport}={host}:{vport}",
            "--exporter", f"127.0.0.1:{eport}={host}:{eport}",
            "--dcgm", f"127.0.0.1:{dcgm_port}={host}:{dcgm_port}",
            "--node-exporter", f"127.0.0.1:{nport}={host}:{nport}",
            "--cadvisor", f"127.0.0.1:{cadvisor_port}={host}:{cadvisor_port}",
            "--alertmanager", f"127.0.0.1:{free_port()}",  # none: alerts are not sent here
            "--scrape-interval", "1s",
            "--alerts", "full",  # every rule's signal on live data
        )  # fmt: skip
        assert code == 0, err
        r = promtool("check", "config", str(stack / "prometheus.yml"))
        assert r.returncode == 0, r.stdout + r.stderr
        prom = Prometheus(stack / "prometheus.yml", tmp_path / "tsdb", tmp_path / "prometheus.log")
        prom.start()
        try:
            _run_checks(
                prom, root, stack, s1, vllm_server, host, vport, eport, dcgm_port,
                (nport, cadvisor_port),
            )  # fmt: skip
        finally:
            prom.stop()


def _run_checks(
    prom: Prometheus,
    root: Path,
    stack: Path,
    s1: Any,
    vllm_server: Any,
    host: str,
    vport: int,
    eport: int,
    dcgm_port: int,
    other_ports: tuple[int, int],  # the node exporter's (up) and cAdvisor's (none: down)
) -> None:
    model = json.loads((stack / "grafana/dashboards/vllm-ledger.json").read_text())
    dash_exprs = expressions(model)
    alert_exprs = [r.expr for r in alert_rules()]
    signals = _signals(stack)
    raw = list(dict.fromkeys([*dash_exprs, *signals]))
    gpu_raw = {e for e in raw if _gpu_only(e)}
    # utilisation, memory, temperature, power (panels); memory and temperature (alerts)
    assert len(gpu_raw) == 6
    name = f"{host}:{vport}"  # the instance as the ledger and the vLLM target are named
    labelled = "ledger_instance=" in next(
        (line for line in (_exporter_text(eport) or "").splitlines()
         if line.startswith("vllm_ledger_prompt_tokens_total")), ""
    )  # fmt: skip

    with Traffic(s1.url) as traffic:
        rate = wait_for(
            "sum(rate(vllm:generation_tokens_total[1m])) > 0 during traffic",
            lambda: prom.scalar("sum(rate(vllm:generation_tokens_total[1m]))"),
        )
        assert rate > 0

        # The variables' values, as Grafana's queries find them.
        variables = wait_for(
            f"$instance offers {name}",
            lambda: (v := _variable_values(prom)) and name in v["instance"] and v,
            timeout_s=60,
        )
        assert variables["host"] == sorted({host})  # every target is named on this host
        assert "tiny" in variables["model_name"]
        # Each dashboard expression with each instance and model chosen, and with "All";
        # the alerts' signals as they are.
        every: dict[str, str] = {e: e for e in signals}
        for values in _value_sets(variables):
            every.update({interpolate(e, values): e for e in dash_exprs})
        gpu_only = {e for e, r in every.items() if r in gpu_raw}
        container_only = {e for e, r in every.items() if _container_only(r)}

        def needs_data(e: str) -> bool:
            return (
                e not in gpu_only
                and e not in container_only
                and (labelled or "ledger_instance" not in every[e])
            )

        # Every expression, retried until the slowest (rates over the exporter's counters,
        # which need two scrapes of a changed value) has data.
        def all_have_data() -> dict[str, list[Any]] | None:
            res = _evaluate(prom, list(every))
            return res if all(res[e] for e in every if needs_data(e)) else None

        results = wait_for(
            "data for every non-GPU expression", all_have_data, timeout_s=90, every_s=2
        )
        # Two rounds at least, so that the second launch's single round is smaller.
        wait_for("two rounds of traffic", lambda: traffic.rounds >= 2, timeout_s=300)
        full = _evaluate(prom, alert_exprs)  # the thresholded forms parse and evaluate too
        assert set(full) == set(alert_exprs)
        gpus = prom.scalar_when_any("sum(vllm_ledger_gpus)")
        assert gpus is not None
        empty = {e for e, res in results.items() if not res}
        if gpus == 0:  # no NVML; DCGM is down: the GPU-only expressions are empty
            assert gpu_only <= empty
        else:  # a GPU host: the NVML fallback fills the hardware row
            assert not gpu_only & empty
        assert container_only and container_only <= empty  # no cAdvisor here
        assert {e for e in empty if needs_data(e)} == set()  # the node queries answer too
        node_port, cadvisor_port = other_ports
        prom.wait_targets(
            {
                f"vllm/{name}": "up",
                f"dcgm/{host}:{dcgm_port}": "down",
                f"vllm-ledger/{host}:{eport}": "up",
                f"node/{host}:{node_port}": "up",
                f"cadvisor/{host}:{cadvisor_port}": "down",
                # itself, where the compose file runs it (this test's Prometheus is elsewhere)
                "prometheus/localhost:9090": "down",
            }
        )

        # The rules Prometheus loaded from alerts.yml evaluate without error on live data.
        def rules_evaluated() -> list[Any] | None:
            rules = prom.api("rules")["data"]["groups"][0]["rules"]
            done = all(r.get("lastEvaluation", "").startswith("20") for r in rules)
            return rules if done else None

        rules = wait_for("every rule evaluated", rules_evaluated, timeout_s=30)
        assert [(r["name"], r["health"], r.get("lastError", "")) for r in rules] == [
            (a.name, "ok", "") for a in alert_rules()
        ]

    # Quiet: vLLM's counters, the ledger, report --json and the exporter all agree.
    counters1 = settle(s1)
    code, out, err = run_cli("report", "--root", str(root), "--by", "instance")
    assert code == 0, err
    assert name in out  # the name the vLLM target was given is the ledger's
    first = _agreed(root, eport, counters1)
    assert first["output"] > 0 and first["cached"] > 0
    wait_for(
        "Prometheus has the exporter's counter",
        lambda: prom.scalar("sum(vllm_ledger_generation_tokens_total)") == first["output"],
    )
    wait_for(
        "Prometheus has vLLM's counter",
        lambda: prom.scalar("sum(vllm:generation_tokens_total)") == counters1["output"],
    )

    # Restart vLLM on the same port and ledger: its counters start again from zero.
    s1.stop()
    s2 = vllm_server(root, port=vport, extra_args=DP2_API2)
    wait_for(
        "vLLM's counter back to 0 in Prometheus",
        lambda: prom.scalar("sum(vllm:generation_tokens_total)") == 0,
    )
    assert prom.scalar_when_any("sum(vllm_ledger_generation_tokens_total)") == first["output"]
    send_mix(s2.url, "tiny")
    counters2 = settle(s2)
    assert counters2["output"] < first["output"]  # vLLM alone would show a fall
    second = _agreed(root, eport, {k: counters1[k] + counters2[k] for k in FIGURES})
    for k in FIGURES:
        assert second[k] > first[k], k
    wait_for(
        "Prometheus has the risen exporter counter",
        lambda: prom.scalar("sum(vllm_ledger_generation_tokens_total)") == second["output"],
    )
    wait_for(
        "Prometheus has vLLM's counter after the restart",
        lambda: prom.scalar("sum(vllm:generation_tokens_total)") == counters2["output"],
    )
    # Prometheus saw vLLM's counter reset; the ledger's never did.
    assert (prom.scalar("sum(resets(vllm:generation_tokens_total[10m]))") or 0) >= 1
    assert prom.scalar("sum(resets(vllm_ledger_generation_tokens_total[10m]))") == 0
    assert prom.scalar("sum(resets(vllm_ledger_prompt_tokens_total[10m]))") == 0
