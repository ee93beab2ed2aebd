"""Every instant a command prints for a person carries the offset of the zone the rule picks.

With a ledger root (`declare-stop`): --tz > $VLLM_LEDGER_TZ > ROOT/zone > Asia/Shanghai. Without
one (`notifier status`, `advise --baseline`): --tz > $VLLM_LEDGER_TZ > this machine's zone ($TZ,
else /etc/localtime, else UTC). Each command is run as a user runs it (`python -m vllm_ledger`);
the Prometheus `advise --baseline` asks is a real HTTP server on 127.0.0.1.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.notify.state_file import state_path
from vllm_ledger.notify.store import Store
from vllm_ledger.read.zone import ZONE_FILE

T0 = 1_700_000_000  # 2023-11-14T22:13:20Z
END = T0 + 1800

# (flag, $VLLM_LEDGER_TZ, $TZ or ROOT/zone) -> the offset every printed time carries
ROOTED = [
    ("--tz", ("--tz", "America/New_York"), {"VLLM_LEDGER_TZ": "Asia/Tokyo"}, None, "-05:00"),
    ("env", (), {"VLLM_LEDGER_TZ": "Asia/Tokyo"}, "Europe/Paris", "+09:00"),
    ("root zone", (), {}, "Europe/Paris", "+01:00"),
    ("default", (), {}, None, "+08:00"),
]


@pytest.mark.parametrize(
    ("flag", "env", "zone_file", "offset"),
    [row[1:] for row in ROOTED],
    ids=[row[0] for row in ROOTED],
)
def test_declare_stop_echoes_in_the_rules_zone(
    tmp_path: Path, flag: tuple[str, ...], env: dict[str, str], zone_file: str | None, offset: str
) -> None:
    root = tmp_path / "usage"
    write_ledger(root, "run-a", start_ts=T0, end_ts=END, port=19001, events=[ev(T0 + 5, 10, 2)])
    if zone_file is not None:
        (root / ZONE_FILE).write_text(f"{zone_file}\n")
    args = ["declare-stop", "--root", str(root), "--instance", "testhost:19001"]
    args += ["--from", str(END + 60), "--until", str(END + 120), "--reason", "r", *flag]
    code, out, err = run_cli(*args, env={"TZ": "UTC", **env})
    assert (code, err) == (0, "")
    times = re.findall(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d ([+-]\d\d:\d\d)", out)
    assert times == [offset, offset]
    # refused: the proven run, in the same zone
    args[args.index("--from") + 1] = str(T0 - 60)
    code, out, err = run_cli(*args, env={"TZ": "UTC", **env})
    assert code == 2
    assert re.findall(r"\d\d:\d\d:\d\d ([+-]\d\d:\d\d)", err) == [offset] * 3


# Zones without daylight saving time: `advise --baseline` ends its window at the real clock.
ROOTLESS = [
    ("--tz", ("--tz", "America/Bogota"), {"TZ": "Asia/Tokyo"}, "-05:00"),
    ("VLLM_LEDGER_TZ", (), {"TZ": "Asia/Tokyo", "VLLM_LEDGER_TZ": "Africa/Lagos"}, "+01:00"),
    ("TZ", (), {"TZ": "Asia/Tokyo"}, "+09:00"),
    ("TZ with a colon", (), {"TZ": ":Asia/Kolkata"}, "+05:30"),
]


@pytest.mark.parametrize(
    ("flag", "env", "offset"), [row[1:] for row in ROOTLESS], ids=[row[0] for row in ROOTLESS]
)
def test_notifier_status_shows_times_in_the_machines_zone(
    tmp_path: Path, flag: tuple[str, ...], env: dict[str, str], offset: str
) -> None:
    config = tmp_path / "private.json"
    config.write_text("{}")  # unreadable as a config: no notifier is asked
    store = Store(state_path(config), clock=lambda: float(T0))
    store.record_health(19001, "up", None)
    store.close()
    code, out, err = run_cli("notifier", "status", "--config", str(config), *flag, env=env)
    assert (code, err) == (0, "")
    health = next(line for line in out.splitlines() if line.startswith("health:"))
    stamp = {"-05:00": "17:13:20", "+01:00": "23:13:20", "+09:00": "07:13:20", "+05:30": "03:43:20"}
    assert health.endswith(f" {stamp[offset]} {offset}")


def test_a_bad_zone_in_the_environment_of_a_rootless_command_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "private.json"
    config.write_text("{}")
    Store(state_path(config), clock=lambda: float(T0)).close()
    code, out, err = run_cli(
        "notifier", "status", "--config", str(config), env={"VLLM_LEDGER_TZ": "posixrules"}
    )
    assert (code, out) == (2, "")
    assert err.splitlines() == [
        "vllm-ledger: error: VLLM_LEDGER_TZ 'posixrules' is not a Region/City zone: use an "
        "IANA Region/City name or UTC, e.g. VLLM_LEDGER_TZ=Asia/Shanghai (or unset it)"
    ]


class _Prometheus(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        series = [{"metric": {"instance": "gpu1:8000", "model_name": "m"}, "value": [1, "0.5"]}]
        body = json.dumps(
            {"status": "success", "data": {"resultType": "vector", "result": series}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def prometheus() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Prometheus)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("flag", "env", "offset"), [row[1:] for row in ROOTLESS], ids=[row[0] for row in ROOTLESS]
)
def test_advise_baseline_shows_its_window_in_the_machines_zone(
    prometheus: str, flag: tuple[str, ...], env: dict[str, str], offset: str
) -> None:
    code, out, err = run_cli(
        "advise", "--baseline", "3d", "--prometheus", prometheus, *flag, env=env
    )
    assert (code, err) == (0, "")
    first = out.splitlines()[0]
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"
    assert re.fullmatch(
        rf"baseline over 3 days: {stamp} {re.escape(offset)} \.\. {stamp} {re.escape(offset)} "
        rf"from Prometheus {re.escape(prometheus)}",
        first,
    ), first
