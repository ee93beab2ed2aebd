"""The notifier end to end with a real sshd and a real Alertmanager on 127.0.0.1.

- "@bot status" from the fake chat platform: one reply with the deployment count (the refused
  entry counted and named), health for every instance and the five windows per instance,
  from real ledgers read through the forced status command of a real sshd. The config is the
  original exact shape (``{"usage": {PORT: {target, code_dir, data_dir}}}``, no ``host``): each
  instance's health comes from the status command's own probe of 127.0.0.1:PORT/health (one
  port has a stand-in server, the other has nothing listening). A replayed message id, a bad
  signature and an old timestamp get nothing.
- Debian's Alertmanager, configured by `vllm-ledger observability --webhook-url` to post to
  the notifier's /alertmanager, fed one real alert that fires and then resolves: the platform
  receives one notification for each.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, run_cli
from tests.e2e.notifier_fakes import (
    SECRET,
    FakePlatform,
    HealthStandIn,
    NotifierProc,
    send_command,
    wait_for,
    write_config,
)
from tests.e2e.prom import ALERTMANAGER, Alertmanager
from tests.e2e.sshd import ClientHost, Sshd, free_port, keygen, write_instance_ledger

pytestmark = pytest.mark.e2e

NOW = time.time()
EVENTS = [
    (NOW - 2 * 86400, 0, 7000, 300, 2000, ((150, 3.0),)),
    (NOW - 600, 0, 1200, 40, 600, ((40, 0.8),)),
]


def test_status_from_the_seed_config_over_sshd_with_health_for_every_instance(
    tmp_path: Path, platform: FakePlatform
) -> None:
    vllm_up = HealthStandIn().start()
    port_down = free_port()  # an instance whose vLLM is stopped: nothing listens
    ledgers = {vllm_up.port: tmp_path / "usage-a", port_down: tmp_path / "usage-b"}
    for i, (port, root) in enumerate(ledgers.items()):
        write_instance_ledger(root, port, EVENTS, run_id=f"run-{i}", host_name=f"gpu{i}")
    sshd = Sshd(tmp_path / "sshd")
    known = sshd.known_hosts(tmp_path / "known_hosts")
    hosts, lines, usage = [], [], {}
    for i, (port, root) in enumerate(ledgers.items()):
        key = keygen(tmp_path / f"key-{i}")
        rc, out, err = run_cli(
            "ssh-key-line", "--code-dir", str(REPO), "--data-dir", str(root), f"{key}.pub"
        )
        assert rc == 0, err
        lines.append(out)
        hosts.append(ClientHost(f"gpu{i}", sshd.port, key, known))
        usage[str(port)] = {"target": f"gpu{i}", "code_dir": str(REPO), "data_dir": str(root)}
    usage["19099"] = {"target": "-oProxyCommand=touch /tmp/x", "code_dir": "/a", "data_dir": "/b"}
    sshd.authorize(lines)
    ssh_config = sshd.client_config(tmp_path / "ssh_config", hosts)
    config = write_config(tmp_path / "private.json", usage, None)  # the original shape, exactly
    listen = free_port()
    n = NotifierProc(
        config,
        {
            "VLLM_LEDGER_COMMAND_SECRET": SECRET.decode(),
            "VLLM_LEDGER_WEBHOOK_URL": platform.hook_url,
        },
        listen,
    )
    n.start_args = ["--listen", f"127.0.0.1:{listen}", "--ssh-config", str(ssh_config)]
    sshd.start()
    try:
        n.start()
        try:
            assert send_command(listen, "q1", "@bot status")[0] == 202
            reply = wait_for("the status reply", lambda: platform.posts)[0]
            assert send_command(listen, "q1", "@bot status") == (200, {"status": "duplicate"})
            code, doc = send_command(listen, "q2", "@bot status", bad_signature=True)
            assert (code, doc) == (401, {"error": "bad_signature"})
            code, doc = send_command(listen, "q3", "@bot status", ts=int(time.time()) - 301)
            assert (code, doc) == (401, {"error": "old_timestamp"})
            time.sleep(1.0)
            assert len(platform.posts) == 1  # nothing for the replay, the forgery, the old one
        finally:
            n.stop()
    finally:
        sshd.stop()
        vllm_up.stop()
    assert platform.raw[0][1]["version"] == "1.0"  # the generic JSON webhook (apprise's body)
    assert reply.startswith("Status\ndeployments 3: healthy 1, down 1, refused 1\n"), reply
    assert f"── :{vllm_up.port} ──\nvLLM healthy · ledger: no live writer" in reply
    assert f"── :{port_down} ──\nvLLM not responding · ledger: no live writer" in reply
    assert "── 19099 ──\nrefused by the config: usage[19099].target; not queried" in reply
    for window in ("today", "24h", "3d", "7d", "total"):
        assert sum(line.startswith(window + " ") for line in reply.splitlines()) == 2, window
    assert reply.count("8.2K") >= 2  # 7000 + 1200 input tokens: each instance's total


@pytest.mark.skipif(not os.path.exists(ALERTMANAGER), reason="needs prometheus-alertmanager")
def test_a_real_alertmanager_alert_fires_and_resolves_once_each(
    tmp_path: Path, platform: FakePlatform
) -> None:
    listen, am_port = free_port(), free_port()
    stack = tmp_path / "stack"
    rc, _out, err = run_cli(
        "observability", str(stack), "--no-dcgm", "--alertmanager", f"127.0.0.1:{am_port}",
        "--webhook-url", f"http://127.0.0.1:{listen}/alertmanager",
    )  # fmt: skip
    assert rc == 0, err
    am_config = yaml.safe_load((stack / "alertmanager.yml").read_text())
    am_config["route"]["group_wait"] = "1s"  # test-only: 30 s and 5 min otherwise
    am_config["route"]["group_interval"] = "1s"
    (stack / "alertmanager.yml").write_text(yaml.safe_dump(am_config))
    closed = free_port()
    (tmp_path / "ssh_config").write_text(f"Host closed\n  HostName 127.0.0.1\n  Port {closed}\n")
    config = write_config(
        tmp_path / "private.json",
        {"19001": {"target": "closed", "code_dir": "/srv/c", "data_dir": "/srv/u"}},
        {"listen": f"127.0.0.1:{listen}", "platform": "wecom", "lang": "en",
         "ssh_config": "ssh_config"},
    )  # fmt: skip
    n = NotifierProc(
        config,
        {
            "VLLM_LEDGER_COMMAND_SECRET": SECRET.decode(),
            "VLLM_LEDGER_WEBHOOK_URL": platform.hook_url,
        },
        listen,
    ).start()
    am = Alertmanager(stack / "alertmanager.yml", tmp_path / "am", tmp_path / "am.log", am_port)
    am.start()
    try:
        starts = datetime.now(timezone.utc)
        alert: dict[str, object] = {
            "labels": {"alertname": "VLLMTargetDown", "instance": "gpu-test:8000",
                       "severity": "critical", "job": "vllm"},
            "annotations": {"summary": "vLLM gpu-test:8000 has not answered a scrape for 1m"},
            "startsAt": starts.isoformat(),
        }  # fmt: skip
        _post_alerts(am.url, [alert])
        wait_for("FIRING", lambda: platform.count("FIRING: VLLMTargetDown"), timeout_s=30)
        _post_alerts(am.url, [{**alert, "endsAt": datetime.now(timezone.utc).isoformat()}])
        wait_for("RESOLVED", lambda: platform.count("RESOLVED: VLLMTargetDown"), timeout_s=30)
        time.sleep(2.5)  # Alertmanager's next group intervals: nothing more arrives
    finally:
        am.stop()
        n.stop()
    assert platform.posts == [
        "FIRING: VLLMTargetDown\ninstance=gpu-test:8000 severity=critical job=vllm\n"
        "vLLM gpu-test:8000 has not answered a scrape for 1m\n",
        "RESOLVED: VLLMTargetDown\ninstance=gpu-test:8000 severity=critical job=vllm\n"
        "vLLM gpu-test:8000 has not answered a scrape for 1m\n",
    ]
    assert platform.raw[0][1]["msgtype"] == "text"  # WeCom's group bot format


def _post_alerts(url: str, alerts: list[dict[str, object]]) -> None:
    req = urllib.request.Request(
        url + "/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200
