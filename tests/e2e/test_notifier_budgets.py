"""Budgets, the digest and "usage" end to end: a real sshd on 127.0.0.1 whose forced command is
the status command with the host's budgets file, the notifier as a child process, and a chat
platform stand-in (a local HTTP server) receiving what it posts.

- A key past its soft budget: one "BUDGET SOFT" message; the notifier restarted: none again;
  the key pushed past its hard budget: one "BUDGET HARD"; restarted again: nothing more.
  ``notifier status`` lists it over.
- The digest, its time a minute past (the notifier's own clock), posted once across the two
  restarts; its tokens and top keys and adapters equal ``report --window yesterday``.
- "@bot usage key today" answered with what ``status --text --ask usage:key:today`` prints
  for the host, through the unchanged forced command (the ask read from the end of the
  client's command, ``SSH_ORIGINAL_COMMAND``).
"""

from __future__ import annotations

import json
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import REPO, run_cli
from tests.e2e.notifier_fakes import (
    SECRET,
    FakePlatform,
    NotifierProc,
    send_command,
    wait_for,
    write_config,
)
from tests.e2e.sshd import ClientHost, Sshd, free_port, keygen
from tests.usage_hosts import Call, midday_zone, write_host_root, yesterday_noon_ts
from vllm_ledger.bot.ssh_command import status_command

pytestmark = pytest.mark.e2e


def _restart_and_settle(n: NotifierProc, platform: FakePlatform, message_id: str) -> None:
    """Restart the notifier and wait for its status reply: by then its first poll round has
    landed, and whatever that round queued was posted before the reply (the outbox is sent in
    order)."""
    n.stop()
    n.start()
    before = platform.count("deployments 1")
    assert send_command(n.port, message_id, "@bot status")[0] == 202
    wait_for("the status reply", lambda: platform.count("deployments 1") > before, 60)


def test_budgets_digest_and_usage_through_a_forced_command(
    tmp_path: Path, platform: FakePlatform
) -> None:
    now = time.time()
    zone = midday_zone(now)  # budgets and the digest: "today" has hours before and after now
    root = tmp_path / "usage"
    noon = yesterday_noon_ts(zone)  # the host's zone (ROOT/zone) too: now-600 is today there
    write_host_root(root, "run-1", [
        Call(noon, "team-a", "tiny", prompt=1_234_567, gen=8_910, cached=1_000),
        Call(noon + 60, "key:1a2b3c4d", "org/tiny-lora", prompt=4_000, gen=900),
        Call(noon + 120, prompt=50, gen=10, untagged=True),
        Call(now - 600, "team-a", "tiny", prompt=800_000, gen=50_000),
        Call(now - 590, "team-b", "tiny", prompt=1_000, gen=100),
    ], zone=zone)  # fmt: skip
    budgets = tmp_path / "budgets.toml"
    budgets.write_text(
        f'zone = "{zone}"\n\n[[budget]]\nkey = "team-a"\ntokens = 1_000_000\n'
        'name = "team-a-day"\n\n[[budget]]\nkey = "team-b"\ntokens = 1_000_000\n'
    )
    sshd = Sshd(tmp_path / "sshd")
    key = keygen(tmp_path / "bot_key")
    forced = status_command(str(REPO), str(root), sys.executable, budgets=str(budgets))
    pub = (tmp_path / "bot_key.pub").read_text().strip()
    sshd.authorize([f'restrict,command="{forced}" {pub}'])
    known = sshd.known_hosts(tmp_path / "known_hosts")
    ssh_config = sshd.client_config(
        tmp_path / "ssh_config", [ClientHost("gpu1", sshd.port, key, known)]
    )
    (tmp_path / "webhook_url").write_text(platform.hook_url + "\n")
    listen = free_port()
    digest_at = datetime.fromtimestamp(now - 60, ZoneInfo(zone)).strftime("%H:%M")
    entry = {"target": "gpu1", "code_dir": str(REPO), "data_dir": str(root),
             "python": sys.executable, "budgets": str(budgets)}  # fmt: skip
    config = write_config(
        tmp_path / "private.json",
        {"19001": entry},
        {
            "listen": f"127.0.0.1:{listen}", "platform": "feishu", "lang": "en",
            "ssh_config": str(ssh_config), "webhook_url_file": "webhook_url",
            "startup_wait_s": 20, "deliver_timeout_s": 5, "poll_interval_s": 0.5,
            "health_interval_s": 30, "digest": {"time": digest_at, "zone": zone},
        },
    )  # fmt: skip
    n = NotifierProc(config, {"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()}, listen)
    sshd.start()
    try:
        n.start()
        try:
            wait_for("the soft message", lambda: platform.count("BUDGET SOFT"), 60)
            digest = wait_for(
                "the digest",
                lambda: [p for p in platform.posts if p.startswith("Daily digest")],
                60,
            )[0]
            assert send_command(listen, "u1", "@bot usage key today")[0] == 202
            usage = wait_for(
                "the usage reply",
                lambda: [p for p in platform.posts if p.startswith("Usage by key")],
                60,
            )[0]
            code, expected, err = run_cli(
                "status", "--root", str(root), "--no-health", "--text", "--ask",
                "usage:key:today", "--lang", "en",
            )  # fmt: skip
            assert (code, err) == (0, "")
            _restart_and_settle(n, platform, "s1")
            assert (platform.count("BUDGET SOFT"), platform.count("Daily digest")) == (1, 1)
            write_host_root(
                root, "run-2", [Call(now - 300, "team-a", "tiny", prompt=200_000)], zone=zone
            )
            wait_for("the hard message", lambda: platform.count("BUDGET HARD"), 60)
            _restart_and_settle(n, platform, "s2")
        finally:
            n.stop()
    finally:
        sshd.stop()
    assert platform.count("BUDGET SOFT") == 1
    assert platform.count("BUDGET HARD") == 1
    assert platform.count("Daily digest") == 1
    soft = next(p for p in platform.posts if p.startswith("BUDGET SOFT"))
    assert soft.startswith(
        "BUDGET SOFT: key team-a used 850K of 1.0M tokens (85.0%) · :19001 · day "
    ), soft
    hard = next(p for p in platform.posts if p.startswith("BUDGET HARD"))
    assert hard.startswith("BUDGET HARD: key team-a used 1.1M of 1.0M tokens (105.0%) · :19001")
    budget_posts = [p for p in platform.posts if p.startswith("BUDGET")]
    assert not any("team-b" in p for p in budget_posts)  # its budget is far from soft

    # The digest: report for yesterday, exactly.
    report = json.loads(run_cli("report", "--root", str(root), "--window", "yesterday",
                                "--by", "key", "--json")[1])  # fmt: skip
    window = report["windows"]["yesterday"]
    lines = digest.splitlines()
    assert lines[3] == (
        f"tokens: input {window['input']:,} · output {window['output']:,} · cached "
        f"{window['cached']:,} · requests {window['requests']:,}"
    )
    assert lines[3] == "tokens: input 1,238,617 · output 9,820 · cached 1,000 · requests 3"
    rows = report["whose"]["windows"]["yesterday"]["rows"]
    assert lines[4] == "top keys (input/output): " + ", ".join(
        f"{r['value']} {r['input']:,}/{r['output']:,}" for r in rows
    )
    assert lines[5] == "top adapters (input/output): tiny 1,234,567/8,910, org/tiny-lora 4,000/900"

    # "usage": what the status command prints for the host (but the instant it was asked).
    as_of = re.compile(r"as of host time .*")
    assert as_of.sub("", usage) == as_of.sub("", expected)
    assert usage.splitlines()[4].split() == ["team-a", "800K", "50.0K", "0", "1"]

    code, out, err = run_cli("notifier", "status", "--config", str(config), "--tz", "UTC")
    assert "  HARD key team-a :19001: 1,050,000 of 1,000,000 total (105.0%)" in out, out
