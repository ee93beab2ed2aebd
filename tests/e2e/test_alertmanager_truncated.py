"""Alerts past Alertmanager's ``max_alerts`` are never dropped unseen: a real Alertmanager
(Debian's), configured by the files ``vllm-ledger observability`` generates (its route, its
``max_alerts: 100`` and its bearer token from ``credentials_file``), posts a group of 130
alerts to a real notifier, which posts to a chat platform stand-in on 127.0.0.1.

The chat gets exactly the 100 alerts Alertmanager sent and one note saying 30 were not shown,
with where to see them (Alertmanager's UI and an ``amtool`` command, run here against the same
Alertmanager: it lists all 130); ``notifier status`` counts it, in text and JSON. Alertmanager's
repeat of the same notification adds nothing. The only test-only edits of the generated
alertmanager.yml are its timings (group wait and interval 1 s, repeat interval 3 s). The bearer
scheme is read in any case over the real endpoint; a wrong token is still refused.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import urllib.request
from datetime import datetime, timezone
from pathlib import Path

import pytest
import yaml

from devtools.ports import free_port
from tests.conftest import run_cli
from tests.e2e.notifier_fakes import (
    SECRET,
    FakePlatform,
    NotifierProc,
    post_json,
    wait_for,
    write_config,
)
from tests.e2e.prom import ALERTMANAGER, Alertmanager

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.skipif(not os.path.exists(ALERTMANAGER), reason="needs prometheus-alertmanager"),
]

AMTOOL = "/usr/bin/amtool"
GROUP = {"alertname": "GpuXidError", "instance": "gpu-test:8000", "severity": "warning"}


def _stack(tmp_path: Path, listen: int, am_port: int) -> Path:
    """The generated Alertmanager files, pointed at the notifier; the timings shortened."""
    stack = tmp_path / "stack"
    rc, _out, err = run_cli(
        "observability", str(stack), "--no-dcgm", "--alertmanager", f"127.0.0.1:{am_port}",
        "--webhook-url", f"http://127.0.0.1:{listen}/alertmanager",
    )  # fmt: skip
    assert rc == 0, err
    am_config = yaml.safe_load((stack / "alertmanager.yml").read_text())
    assert am_config["receivers"][0]["webhook_configs"][0]["max_alerts"] == 100
    am_config["route"].update(group_wait="1s", group_interval="1s", repeat_interval="3s")
    (stack / "alertmanager.yml").write_text(yaml.safe_dump(am_config))
    return stack


def _notifications(am: Alertmanager) -> float:
    """Alertmanager's count of webhook notifications it delivered (attempts less failures)."""
    with urllib.request.urlopen(am.url + "/metrics", timeout=10) as r:
        text = r.read().decode()
    sums = {"alertmanager_notifications_total": 0.0, "alertmanager_notifications_failed_total": 0.0}
    for line in text.splitlines():
        name, _, rest = line.partition("{")
        if name in sums and 'integration="webhook"' in rest:
            sums[name] += float(line.rsplit(" ", 1)[1])
    return (
        sums["alertmanager_notifications_total"] - sums["alertmanager_notifications_failed_total"]
    )


def _post_alerts(am: Alertmanager, alerts: list[dict[str, object]]) -> None:
    req = urllib.request.Request(
        am.url + "/api/v2/alerts",
        data=json.dumps(alerts).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        assert r.status == 200


def _amtool_lists(command: str, am: Alertmanager) -> list[dict[str, object]]:
    """Run the note's ``amtool`` command (its words, no shell) against ``am``, as JSON."""
    words = shlex.split(command)
    assert words[:2] == ["amtool", f"--alertmanager.url=http://{os.uname().nodename}:{am.port}"]
    words[:2] = [AMTOOL, f"--alertmanager.url={am.url}"]  # this host's name may not resolve
    p = subprocess.run([*words, "--output=json"], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    found: list[dict[str, object]] = json.loads(p.stdout)
    return found


def test_130_alerts_of_one_group_are_100_messages_and_one_note_of_30_not_shown(
    tmp_path: Path, platform: FakePlatform
) -> None:
    listen, am_port = free_port(), free_port()
    stack = _stack(tmp_path, listen, am_port)
    token = (stack / "alertmanager-token").read_text().strip()
    config = write_config(
        tmp_path / "private.json",
        {"19001": {"target": "closed", "code_dir": "/srv/c", "data_dir": "/srv/u"}},
        {"listen": f"127.0.0.1:{listen}", "platform": "feishu", "lang": "en",
         "alertmanager_token_file": str(stack / "alertmanager-token")},
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
        starts = datetime.now(timezone.utc).isoformat()
        _post_alerts(
            am,
            [
                {"labels": {**GROUP, "gpu": f"{i:03d}"}, "startsAt": starts,
                 "annotations": {"summary": f"GPU {i:03d} reported an Xid error"}}
                for i in range(130)
            ],
        )  # fmt: skip
        wait_for("the note", lambda: platform.count("NOT SHOWN"), timeout_s=60)
        wait_for("101 sent", lambda: n.status()["deliveries"]["sent"] == 101, timeout_s=60)
        # Alertmanager repeats the same notification (repeat interval): nothing more is queued
        wait_for("Alertmanager's repeat", lambda: _notifications(am) >= 2, timeout_s=60)
        status = n.status()
        rc, text, err = run_cli("notifier", "status", "--config", str(config), env=n.env)
        note = next(p for p in platform.posts if p.startswith("NOT SHOWN"))
        listed = _amtool_lists(note.splitlines()[-1].removeprefix("or: "), am)
        auth = {v: post_json(listen, "/alertmanager", {}, {"Authorization": v})[:2] for v in (
            f"bearer {token}", f"BEARER {token}", "bearer wrong", f"Basic {token}")}  # fmt: skip
    finally:
        am.stop()
        n.stop()
    assert sum(p.startswith("FIRING: GpuXidError\n") for p in platform.posts) == 100
    assert len(platform.posts) == 101 and platform.posts[-1] == note
    assert note.startswith(
        "NOT SHOWN: 30 alerts of this group (Alertmanager sent 100 of 130: its max_alerts)\n"
        "group: alertname=GpuXidError instance=gpu-test:8000\n"
        f"all of them: http://{os.uname().nodename}:{am_port}/#/alerts?filter="
        "%7Balertname%3D%22GpuXidError%22%2Cinstance%3D%22gpu-test%3A8000%22%7D\n"
    ), note
    assert len(listed) == 130  # the note's amtool command shows every alert of the group
    assert status["alerts_not_shown"] == {"alerts_total": 30, "notes_total": 1}
    deliveries = status["deliveries"]
    assert sum(deliveries[s] for s in ("sent", "failed", "unknown", "pending", "sending")) == 101
    assert rc == 0, err
    assert (
        "alerts left out by Alertmanager (max_alerts): 30, in 1 group notification(s), "
        "each noted in the chat\n"
    ) in text
    assert "Alertmanager left 30 alert(s) of one group out" in n.log.read_text()
    assert auth == {
        f"bearer {token}": (400, {"error": "bad_alerts"}),  # the token taken, the body not
        f"BEARER {token}": (400, {"error": "bad_alerts"}),
        "bearer wrong": (401, {"error": "bad_token"}),
        f"Basic {token}": (401, {"error": "bad_token"}),
    }
