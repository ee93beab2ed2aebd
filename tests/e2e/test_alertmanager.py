"""Alerts routed end to end: the generated prometheus.yml, alerts.yml and alertmanager.yml run
in a real Prometheus and a real Alertmanager (Debian's), and a firing alert reaches a webhook
receiver started by this test, with the labels that name its instance and the bearer token
that ``observability`` wrote beside the files (``credentials_file``, read by Alertmanager from
alertmanager.yml's folder).

The rule that fires is the generated "vLLM target down" rule against a vLLM target that is a
closed port on 127.0.0.1 (and "ledger exporter down" against a closed exporter port), with
``--down-for 0s`` so it fires at the first evaluation (a 1 s scrape and rule interval) instead
of after a minute. The only test-only edit is Alertmanager's group_wait, 30 s in the generated
file, set to 1 s here. Everything listens on 127.0.0.1 and is stopped by pid (the receiver is
a thread of this process, shut down at the end).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from devtools.ports import free_port
from tests.conftest import run_cli
from tests.e2e.prom import ALERTMANAGER, Alertmanager, Prometheus, promtool

pytestmark = pytest.mark.e2e

AMTOOL = "/usr/bin/amtool"


class Receiver:
    """A webhook receiver on 127.0.0.1: keeps every JSON body Alertmanager posts to /alerts."""

    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.authorizations: list[str | None] = []
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                received.paths.append(self.path)
                received.authorizations.append(self.headers.get("Authorization"))
                received.bodies.append(body)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/alerts"

    def alerts(self) -> list[dict[str, Any]]:
        return [a for b in self.bodies for a in b["alerts"]]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    r.thread.start()
    yield r
    r.server.shutdown()
    r.server.server_close()
    r.thread.join(10)


def _wait(what: str, check: Any, timeout_s: float = 45.0) -> Any:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.3)
    raise AssertionError(f"{what}: not seen within {timeout_s} s (last: {last!r})")


@pytest.mark.skipif(not os.path.exists(ALERTMANAGER), reason="needs prometheus-alertmanager")
def test_a_firing_rule_reaches_the_webhook_with_its_instance(
    tmp_path: Path, receiver: Receiver
) -> None:
    vllm_port, exporter_port, am_port = free_port(), free_port(), free_port()  # nothing listens
    stack = tmp_path / "stack"
    code, _out, err = run_cli(
        "observability",
        str(stack),
        "--vllm", f"127.0.0.1:{vllm_port}=gpu-test:8000",
        "--exporter", f"127.0.0.1:{exporter_port}",
        "--no-dcgm",
        "--alertmanager", f"127.0.0.1:{am_port}",
        "--webhook-url", receiver.url,
        "--scrape-interval", "1s",
        "--down-for", "0s",
        "--alerts", "full",  # the targets' health: beyond the three to start with
    )  # fmt: skip
    assert code == 0, err
    r = promtool("check", "config", str(stack / "prometheus.yml"))
    assert r.returncode == 0, r.stdout + r.stderr
    am_config = yaml.safe_load((stack / "alertmanager.yml").read_text())
    hook = am_config["receivers"][0]["webhook_configs"][0]
    assert hook["url"] == receiver.url and hook["max_alerts"] == 100
    assert hook["http_config"]["authorization"]["credentials_file"] == "alertmanager-token"
    token = (stack / "alertmanager-token").read_text().strip()
    am_config["route"]["group_wait"] = "1s"  # the one test-only edit: 30 s otherwise
    (stack / "alertmanager.yml").write_text(yaml.safe_dump(am_config))
    if os.path.exists(AMTOOL):
        r = subprocess.run(
            [AMTOOL, "check-config", str(stack / "alertmanager.yml")],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert r.returncode == 0, r.stdout + r.stderr

    am = Alertmanager(
        stack / "alertmanager.yml", tmp_path / "am", tmp_path / "alertmanager.log", port=am_port
    )
    prom = Prometheus(stack / "prometheus.yml", tmp_path / "tsdb", tmp_path / "prometheus.log")
    am.start()
    try:
        prom.start()
        try:
            want = {"VLLMTargetDown", "LedgerExporterDown"}

            def both_arrived() -> dict[str, dict[str, Any]] | None:
                got = {a["labels"]["alertname"]: a for a in receiver.alerts()}
                return got if want <= set(got) else None

            got = _wait("VLLMTargetDown and LedgerExporterDown at the webhook", both_arrived)
            # Prometheus sent them to Alertmanager, which holds them too.
            held = {a["labels"]["alertname"] for a in am.alerts()}
            assert want <= held
        finally:
            prom.stop()
    finally:
        am.stop()

    down = got["VLLMTargetDown"]
    assert down["status"] == "firing"
    assert down["labels"] == {
        "alertname": "VLLMTargetDown",
        "instance": "gpu-test:8000",  # the name given with --vllm ADDRESS=NAME
        "job": "vllm",
        "prometheus": socket.gethostname(),  # the stack's external label
        "severity": "critical",
    }
    assert down["annotations"]["summary"] == ("vLLM gpu-test:8000 has not answered a scrape for 0s")
    assert down["annotations"]["runbook_url"] == "docs/runbook.md#vllmtargetdown"
    exporter = got["LedgerExporterDown"]
    # on the vLLM's address: named by its vLLM host, as the dashboard's $host picks it
    assert exporter["labels"]["instance"] == f"gpu-test:{exporter_port}"
    assert exporter["labels"]["job"] == "vllm-ledger"
    body = receiver.bodies[0]
    assert body["receiver"] == "notifier" and body["version"] == "4"
    assert set(receiver.paths) == {"/alerts"}
    assert set(receiver.authorizations) == {f"Bearer {token}"}
    # grouped per alert and instance: one notification per (alertname, instance)
    groups = {tuple(sorted(b["groupLabels"].items())) for b in receiver.bodies}
    assert (("alertname", "VLLMTargetDown"), ("instance", "gpu-test:8000")) in groups
