"""The bot's status over a real sshd on 127.0.0.1, with forced-command keys.

One throwaway sshd serves every "host": each alias in the client's ssh config has its own
key, and each key is pinned in authorized_keys to one command: the two instances' status
(lines from `vllm-ledger ssh-key-line`), a command that sleeps an hour, one that prints 1 GB,
one that prints hostile bytes, and a wrapper that runs the status with the clock 30 s ahead.
Two more aliases fail before any command: an unknown host key and a closed port.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import REPO, run_cli
from tests.e2e.sshd import ClientHost, Sshd, free_port, keygen, kill_pid, write_instance_ledger
from vllm_ledger.bot.capped import CappedRun, run_capped
from vllm_ledger.read.windows import WINDOW_NAMES

# Each poll's deadline: eight ssh sessions and their `status` at once fit in it on a loaded
# 2-core machine; two sleepers polled one after the other would not fit in it plus SLACK_S.
DEADLINE_S = 15.0
# How late past its deadline a poll may end (process start, kill, reap) on a loaded machine.
SLACK_S = 10.0
NOW = time.time()
EVENTS_A = [
    (NOW - 3 * 86400 - 50, 0, 7000, 300, 2000, ((150, 3.0), (149, 2.5))),
    (NOW - 5000, 0, 1200, 40, 600, ((40, 0.8),)),
    (NOW - 30, 1, 333, 11, 111, ()),
]
EVENTS_B = [
    (NOW - 6 * 86400, 0, 90000, 4000, 81000, ((4000, 80.0),)),
    (NOW - 600, 0, 10, 1, 0, ((1, 0.01),)),
]
FIGURES = (
    "input",
    "output",
    "cached",
    "requests",
    "hit_rate",
    "avg_speed",
    "gen_speed",
    "uncovered_seconds",
    "complete",
    "problems",
    "start",
    "cutoff",
)
HOSTILE = (
    b"\x1b]0;PWNED\x07\x00\x00"
    b'{"schema": 1, "clock": 1e309, "cutoff": NaN, "runs": -5, "files_bad": '
    + str(2**80).encode()
    + b', "EVIL": "\xff\xfe\xc3(", "windows": {}}\n'
)
CLOCK_AHEAD_S = 30.0
# One data dir shared by two instances (the renderer's default artifacts_dir/usage).
EVENTS_S1 = [(NOW - 7200, 0, 4000, 200, 1000, ((200, 4.0),))]
EVENTS_S2 = [(NOW - 300, 0, 60, 6, 0, ((6, 0.5),))]


@dataclass
class World:
    sshd: Sshd
    ssh_config: Path
    ledgers: dict[str, Path]
    code_dirs: dict[str, Path]
    pidfile: Path
    marker_dir: Path


def _usage(world: World, **aliases: tuple[int, str]) -> dict[str, dict[str, str]]:
    """usage entries: alias -> (node port, ledger name)."""
    out = {}
    for alias, (port, ledger) in aliases.items():
        out[str(port)] = {
            "target": alias,
            "code_dir": str(world.code_dirs.get(ledger, world.code_dirs["a"])),
            "data_dir": str(world.ledgers[ledger]),
        }
    return out


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, plugin_bundle: Path) -> Iterator[World]:
    base = tmp_path_factory.mktemp("ssh")
    ledgers = {"a": base / "ledger-a", "b": base / "ledger-b", "shared": base / "usage"}
    write_instance_ledger(ledgers["a"], 19001, EVENTS_A, run_id="run-a", host_name="host-a")
    write_instance_ledger(ledgers["b"], 19002, EVENTS_B, run_id="run-b", host_name="host-b")
    for port, events, run in ((19011, EVENTS_S1, "run-s1"), (19012, EVENTS_S2, "run-s2")):
        write_instance_ledger(ledgers["shared"], port, events, run_id=run, host_name="host-s")
    # Instance a's code is a bundle folder, b's is the checkout: both forms must work.
    code_dirs = {"a": plugin_bundle, "b": REPO}
    sshd = Sshd(base / "sshd")
    keys = {
        n: keygen(base / f"key-{n}", n)
        for n in ("a", "b", "shared", "sleep", "flood", "hostile", "clock")
    }
    pidfile = base / "sleepers.pid"
    hostile = base / "hostile.bin"
    hostile.write_bytes(HOSTILE)
    wrapper = base / "clock-ahead.sh"
    wrapper.write_text(
        "#!/bin/sh\n"
        f"cd {code_dirs['a']} && PYTHONPATH={code_dirs['a']} exec python3 -c "
        f"'import sys, time; t = time.time; time.time = lambda: t() + {CLOCK_AHEAD_S}; "
        "from vllm_ledger.cli import main; sys.exit(main(sys.argv[1:]))' "
        f"status --root {ledgers['a']}\n"
    )
    lines = []
    for name, ledger in (("a", "a"), ("b", "b"), ("shared", "shared")):
        rc, out, err = run_cli(
            "ssh-key-line",
            "--code-dir",
            str(code_dirs.get(name, REPO)),
            "--data-dir",
            str(ledgers[ledger]),
            f"{keys[name]}.pub",
        )
        assert rc == 0, err
        lines.append(out)
    pub = {n: (Path(f"{k}.pub").read_text().strip()) for n, k in keys.items()}
    lines += [
        f'restrict,command="echo $$ >> {pidfile}; exec sleep 3600" {pub["sleep"]}',
        f'restrict,command="exec head -c 1000000000 /dev/zero" {pub["flood"]}',
        f'restrict,command="exec cat {hostile}" {pub["hostile"]}',
        f'restrict,command="exec /bin/sh {wrapper}" {pub["clock"]}',
    ]
    sshd.authorize(lines)
    known = sshd.known_hosts(base / "known_hosts")
    empty_known = base / "known_hosts.empty"
    empty_known.write_text("")
    hosts = [
        ClientHost("inst-a", sshd.port, keys["a"], known),
        ClientHost("inst-b", sshd.port, keys["b"], known),
        ClientHost("inst-shared", sshd.port, keys["shared"], known),
        ClientHost("sleeper1", sshd.port, keys["sleep"], known),
        ClientHost("sleeper2", sshd.port, keys["sleep"], known),
        ClientHost("flood", sshd.port, keys["flood"], known),
        ClientHost("hostile", sshd.port, keys["hostile"], known),
        ClientHost("clock-ahead", sshd.port, keys["clock"], known),
        ClientHost("unknown-key", sshd.port, keys["a"], empty_known),
        ClientHost("closed-port", free_port(), keys["a"], known),
    ]
    ssh_config = sshd.client_config(base / "ssh_config", hosts)
    sshd.start()
    try:
        yield World(sshd, ssh_config, ledgers, code_dirs, pidfile, base)
    finally:
        sshd.stop()
        if pidfile.exists():
            for pid in pidfile.read_text().split():
                kill_pid(int(pid))


def _poll(
    world: World, usage: dict[str, dict[str, str]], *extra: str
) -> tuple[int, str, str, float]:
    cfg = world.marker_dir / f"notify-{len(usage)}-{time.monotonic_ns()}.json"
    cfg.write_text(json.dumps({"usage": usage}))
    began = time.monotonic()
    rc, out, err = run_cli(
        "poll",
        "--config",
        str(cfg),
        "--once",
        "--ssh-config",
        str(world.ssh_config),
        "--deadline",
        str(DEADLINE_S),
        *extra,
    )
    return rc, out, err, time.monotonic() - began


def _assert_same_as_report(status: dict, ledger: Path) -> None:
    rc, out, err = run_cli("report", "--json", "--root", str(ledger), "--at", repr(status["clock"]))
    assert rc == 0, err
    full = json.loads(out)
    assert status["cutoff"] == full["cutoff"]
    for name in WINDOW_NAMES:
        for key in FIGURES:
            assert status["windows"][name][key] == full["windows"][name][key], (name, key)


@pytest.mark.e2e
def test_a_full_poll_gives_the_report_numbers(world: World) -> None:
    usage = _usage(world, **{"inst-a": (19001, "a"), "inst-b": (19002, "b")})
    rc, out, err, _ = _poll(world, usage, "--json")
    assert rc == 0, err
    doc = json.loads(out)
    by_port = {i["port"]: i for i in doc["instances"]}
    assert [by_port[p]["state"] for p in (19001, 19002)] == ["ok", "ok"]
    _assert_same_as_report(by_port[19001]["status"], world.ledgers["a"])
    _assert_same_as_report(by_port[19002]["status"], world.ledgers["b"])
    total_a = by_port[19001]["status"]["windows"]["total"]
    assert (total_a["input"], total_a["output"], total_a["cached"]) == (8533, 351, 2711)
    total_b = by_port[19002]["status"]["windows"]["total"]
    assert (total_b["input"], total_b["output"], total_b["cached"]) == (90010, 4001, 81000)
    assert by_port[19002]["status"]["windows"]["24h"]["input"] == 10
    # The status command probes each port's own /health: nothing serves 19001/19002 here.
    for i in doc["instances"]:
        assert i["stale"] is False and i["clock_hint"] is False and i["health"] == "down"

    rc, text, err, _ = _poll(world, usage)
    assert rc == 0, err
    assert "── :19001 ──" in text and "── :19002 ──" in text
    totals = [line.split()[:4] for line in text.splitlines() if line.startswith("累计")]
    assert totals == [["累计", "8.5K", "351", "2.7K"], ["累计", "90.0K", "4.0K", "81.0K"]]
    assert "统计 无运行中的记录器" in text  # the test writers have closed: no live writer


@pytest.mark.e2e
def test_two_instances_sharing_one_data_dir_each_line_shows_its_own(world: World) -> None:
    """The forced command is the same for both node ports (`status --root usage`); each line
    picks its port's row; a port with no instance in the data dir shows the whole, marked."""
    entry = {
        "target": "inst-shared",
        "code_dir": str(REPO),
        "data_dir": str(world.ledgers["shared"]),
    }
    usage = {str(port): entry for port in (19011, 19012, 19013)}
    rc, out, err, _ = _poll(world, usage, "--json")
    assert rc == 0, err
    by_port = {i["port"]: i for i in json.loads(out)["instances"]}
    assert [by_port[p]["state"] for p in (19011, 19012, 19013)] == ["ok"] * 3
    for port in (19011, 19012):
        status = by_port[port]["status"]
        assert [i["port"] for i in status["instances"]] == [19011, 19012]
        row = next(i for i in status["instances"] if i["port"] == port)
        rc, full_out, err = run_cli(
            "report",
            "--json",
            "--root",
            str(world.ledgers["shared"]),
            "--at",
            repr(status["clock"]),
            "--instance",
            f"host-s:{port}",
        )
        assert rc == 0, err
        full = json.loads(full_out)
        for name in WINDOW_NAMES:
            for key in FIGURES:
                assert row["windows"][name][key] == full["windows"][name][key], (port, name, key)
    rows = {i["port"]: i for i in by_port[19011]["status"]["instances"]}
    assert [rows[19011]["windows"]["total"][k] for k in ("input", "output", "cached")] == [
        4000,
        200,
        1000,
    ]
    assert [rows[19012]["windows"]["total"][k] for k in ("input", "output", "cached")] == [60, 6, 0]

    rc, text, err, _ = _poll(world, usage)
    assert rc == 0, err
    blocks = {int(b.split(" ──", 1)[0]): b for b in text.split("── :")[1:]}  # port -> its lines
    totals = {
        port: next(ln.split()[:4] for ln in block.splitlines() if ln.startswith("累计"))
        for port, block in blocks.items()
    }
    assert totals == {
        19011: ["累计", "4.0K", "200", "1.0K"],
        19012: ["累计", "60", "6", "0"],
        19013: ["累计", "4.1K", "206", "1.0K"],  # the whole data dir, and it says so
    }
    assert "整个数据目录" not in blocks[19011] and "整个数据目录" not in blocks[19012]
    assert "以下为整个数据目录的合计:其中没有端口 19013 的实例" in blocks[19013]


@pytest.mark.e2e
def test_failures_end_by_their_deadline_and_the_others_still_arrive(world: World) -> None:
    usage = _usage(
        world,
        **{
            "inst-a": (19001, "a"),
            "inst-b": (19002, "b"),
            "unknown-key": (19003, "a"),
            "closed-port": (19004, "a"),
            "sleeper1": (19005, "a"),
            "sleeper2": (19006, "a"),
            "flood": (19007, "a"),
            "hostile": (19008, "a"),
        },
    )
    rc, out, err, elapsed = _poll(world, usage, "--json", "--connect-timeout", "3s")
    assert rc == 0, err
    states = {i["port"]: i["state"] for i in json.loads(out)["instances"]}
    assert states == {
        19001: "ok",
        19002: "ok",
        19003: "unreachable",
        19004: "unreachable",
        19005: "timeout",
        19006: "timeout",
        19007: "unparseable",
        19008: "unparseable",
    }
    # Two one-hour sleepers and the rest were polled at once: one deadline, not several.
    assert elapsed < DEADLINE_S + SLACK_S
    by_port = {i["port"]: i for i in json.loads(out)["instances"]}
    _assert_same_as_report(by_port[19001]["status"], world.ledgers["a"])
    _assert_same_as_report(by_port[19002]["status"], world.ledgers["b"])
    for port in range(19003, 19009):
        assert by_port[port]["status"] is None

    rc, text, err, _ = _poll(world, usage, "--lang", "en", "--connect-timeout", "3s")
    assert "PWNED" not in text and "EVIL" not in text and "1e309" not in text
    assert all(c == "\n" or c >= " " for c in text)
    assert text.count("five windows: unknown (not 0)") == 6
    assert "ledger query failed: SSH unreachable" in text
    assert "ledger query timed out" in text and "ledger answer unparseable" in text


@pytest.mark.e2e
def test_a_remote_clock_30_s_ahead_gives_a_hint_and_keeps_host_time(world: World) -> None:
    usage = _usage(world, **{"clock-ahead": (19001, "a"), "inst-b": (19002, "b")})
    before = time.time()
    rc, out, err, _ = _poll(world, usage, "--json")
    after = time.time()
    assert rc == 0, err
    by_port = {i["port"]: i for i in json.loads(out)["instances"]}
    ahead, normal = by_port[19001], by_port[19002]
    assert ahead["state"] == "ok" and ahead["clock_hint"] is True
    assert 25 < ahead["clock_offset_seconds"] < 35
    assert normal["clock_hint"] is False and abs(normal["clock_offset_seconds"]) < 5
    # Windows stay in the host's time: the cutoff is the host's clock, 30 s ahead of ours.
    cutoff = ahead["status"]["cutoff"]
    assert before + 25 < cutoff < after + 35
    assert all(w["cutoff"] == cutoff for w in ahead["status"]["windows"].values())
    _assert_same_as_report(ahead["status"], world.ledgers["a"])
    # Freshness is judged by our receive time: the figures are fresh, not "from the future".
    assert ahead["stale"] is False and 0 <= ahead["age_seconds"] < 60
    rc, text, err, _ = _poll(world, usage)
    assert "提示:部署机时钟比本机快约 30 秒;窗口按部署机时间,未修改任何时钟" in text
    assert text.count("提示") == 1 and "数据已过期" not in text


@pytest.mark.e2e
def test_a_stolen_bot_key_only_runs_the_status(world: World) -> None:
    marker = world.marker_dir / "stolen"
    p = subprocess.run(
        [
            "ssh",
            "-F",
            str(world.ssh_config),
            "-o",
            "BatchMode=yes",
            "--",
            "inst-a",
            f"touch {marker}",
        ],
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0
    assert json.loads(p.stdout)["schema"] == 1
    assert not marker.exists()


# ---- the zone rule through the forced command -----------------------------------------------
# The forced command passes no --tz, and its environment is the one sshd builds for the session
# (not sshd's own): VLLM_LEDGER_TZ reaches it only through sshd_config's SetEnv (or an
# authorized_keys environment= option with PermitUserEnvironment). The root's zone file
# (ROOT/zone, written when the ledger was switched on) needs neither.
ZONE_CANDIDATES = (
    "Asia/Tokyo",
    "UTC",
    "America/New_York",
    "Asia/Kolkata",
    "Pacific/Auckland",
    "America/Los_Angeles",
    "Europe/Moscow",
)


def _midnight(ts: float, zone: str) -> int:
    d = datetime.fromtimestamp(ts, ZoneInfo(zone))
    return int(datetime(d.year, d.month, d.day, tzinfo=ZoneInfo(zone)).timestamp())


def _zones_with_distinct_midnights(now: float, first: str, count: int) -> list[str]:
    """``first`` and more zones whose "today" starts at a different instant at ``now``."""
    zones = [first]
    for z in ZONE_CANDIDATES:
        starts = {_midnight(now, x) for x in zones}
        if len(zones) < count and _midnight(now, z) not in starts:
            zones.append(z)
    assert len(zones) == count
    return zones


def _status_over_ssh(config: Path, alias: str) -> dict:
    p = subprocess.run(
        ["ssh", "-F", str(config), "-o", "BatchMode=yes", "--", alias],
        capture_output=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.e2e
def test_status_over_sshd_takes_the_zone_from_the_root_or_sshd_setenv(world: World) -> None:
    base = world.marker_dir / "zoned"
    base.mkdir()
    ledger = base / "usage"
    default, in_file, in_env = _zones_with_distinct_midnights(NOW, "Asia/Shanghai", 3)
    # One event just after each zone's midnight (where that is already past): each zone's
    # "today" holds a different set of them.
    events = [
        (float(_midnight(NOW, z) + 1), 0, n, 1, 0, ())
        for z, n in ((default, 1), (in_file, 10), (in_env, 100))
        if _midnight(NOW, z) + 1 < NOW - 1
    ]
    write_instance_ledger(ledger, 19021, events, run_id="run-z", host_name="host-z")
    key = keygen(base / "key", "zoned")
    rc, line, err = run_cli(
        "ssh-key-line", "--code-dir", str(REPO), "--data-dir", str(ledger), f"{key}.pub"
    )
    assert rc == 0, err
    with world.sshd.authorized_keys.open("a") as f:  # read again at each login
        f.write(line)
    known = world.sshd.known_hosts(base / "known_hosts")
    config = world.sshd.client_config(
        base / "ssh_config", [ClientHost("inst-zoned", world.sshd.port, key, known)]
    )

    def check(doc: dict, zone: str, source: str) -> tuple[int, int]:
        today = doc["windows"]["today"]
        assert (doc["tz"], doc["tz_source"]) == (zone, source)
        assert today["start"] == _midnight(doc["cutoff"], zone)  # "today" cut in that zone
        offset = datetime.fromtimestamp(doc["cutoff"], ZoneInfo(zone)).utcoffset()
        assert offset is not None and doc["tz_offset"] == int(offset.total_seconds())
        want = sum(e[2] for e in events if today["start"] <= e[0] < today["cutoff"])
        assert today["input"] == want
        return today["start"], today["input"]

    seen = [check(_status_over_ssh(config, "inst-zoned"), default, "default")]
    (ledger / "zone").write_text(f"{in_file}\n")  # as the plugin writes it (render --usage --tz)
    seen.append(check(_status_over_ssh(config, "inst-zoned"), in_file, "root"))

    # The bot prints what the remote said: poll --json carries the parsed tz and tz_source.
    cfg = base / "notify.json"
    cfg.write_text(
        json.dumps(
            {
                "usage": {
                    "19021": {
                        "target": "inst-zoned",
                        "code_dir": str(REPO),
                        "data_dir": str(ledger),
                    }
                }
            }
        )
    )
    rc, out, err = run_cli(
        "poll", "--config", str(cfg), "--once", "--json", "--ssh-config", str(config)
    )
    assert rc == 0, err
    status = json.loads(out)["instances"][0]["status"]
    assert (status["tz"], status["tz_source"]) == (in_file, "root")

    # VLLM_LEDGER_TZ set for the session by sshd (SetEnv) beats the root's file.
    env_sshd = Sshd(base / "sshd-env")
    with env_sshd.config.open("a") as f:
        f.write(f"SetEnv VLLM_LEDGER_TZ={in_env}\n")
    env_sshd.authorize([line])
    env_known = env_sshd.known_hosts(base / "known_hosts.env")
    env_config = env_sshd.client_config(
        base / "ssh_config.env", [ClientHost("inst-zoned-env", env_sshd.port, key, env_known)]
    )
    env_sshd.start()
    try:
        seen.append(check(_status_over_ssh(env_config, "inst-zoned-env"), in_env, "VLLM_LEDGER_TZ"))
    finally:
        env_sshd.stop()
    # Each level changed "today": three different starts, three different figures.
    assert len({s for s, _ in seen}) == 3
    assert len({n for _, n in seen}) == len(seen) or len(events) < 3


def test_capped_run_kills_the_whole_group_on_overflow_and_deadline(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    flood = run_capped(["sh", "-c", f"echo $$ > {pids}; yes"], deadline_s=60, max_bytes=65536)
    assert flood.ended == "overflow" and flood.exit_code is None
    assert 65536 < len(flood.stdout) <= 65537
    hang = run_capped(["sh", "-c", f"sleep 3600 & echo $! >> {pids}; sleep 3600"], deadline_s=1.0)
    assert hang == CappedRun("timeout", None, b"")
    for pid in pids.read_text().split():
        assert _dies_within(int(pid), 10.0), pid
    assert run_capped(
        [sys.executable, "-c", "print('x'); raise SystemExit(3)"], deadline_s=60
    ) == CappedRun("exit", 3, b"x\n")


def _dies_within(pid: int, limit_s: float) -> bool:
    """SIGKILL is delivered asynchronously: a killed grandchild may take a moment to go."""
    end = time.monotonic() + limit_s
    while _alive(pid):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z" and os.path.exists(f"/proc/{pid}")
