"""The one zone rule: --tz > $VLLM_LEDGER_TZ > ROOT/zone > Asia/Shanghai, for every reader.

One ledger whose four events fall on different sides of four zones' midnights, read at one
instant (AT): each level of the rule, set on top of the ones below it, changes "today" to the
exact figure of its zone, through `report` (the command line, with its environment), `timeline`
and the real exporter on 127.0.0.1 (scraped once, under a clock set to AT). A zone file that is
bad, a FIFO or unreadable is one warning line and the rule falls through; two roots that
disagree are one error line. The plugin writes ROOT/zone once, never over another zone.
(`status` over the real sshd: tests/e2e/test_bot_ssh.py.)
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import REPO
from tests.ledgers import ev, write_ledger
from vllm_ledger.cli import main
from vllm_ledger.errors import BadArgument
from vllm_ledger.format.zonefile import zone_to_record
from vllm_ledger.promtext import parse_samples, sum_metric
from vllm_ledger.read.windows import DEFAULT_TZ
from vllm_ledger.read.zone import ZONE_ENV, ZONE_FILE, resolve_zone
from vllm_ledger.units import format_instant

SH = ZoneInfo("Asia/Shanghai")
MIDNIGHT_SH = int(datetime(2026, 11, 29, tzinfo=SH).timestamp())  # 2026-11-28T16:00Z
AT = MIDNIGHT_SH + 10 * 3600  # 10:00 Shanghai, 11:00 Tokyo, 02:00 UTC, 21:00 (28th) New York
# One event on each side of each zone's midnight: today's input names the zone exactly.
EVENTS = (
    (MIDNIGHT_SH - 10 * 3600, 1000),  # 28th 13:00 in New York: only its today
    (MIDNIGHT_SH - 1800, 100),  # 00:30 on the 29th in Tokyo, 23:30 on the 28th in Shanghai
    (MIDNIGHT_SH + 3600, 10),  # 01:00 Shanghai, still the 28th (17:00) in UTC
    (MIDNIGHT_SH + 9 * 3600, 1),  # 01:00 UTC on the 29th: in every zone's today
)
TODAY_INPUT = {"Asia/Shanghai": 11, "Asia/Tokyo": 111, "America/New_York": 1111, "UTC": 1}

# (level, ROOT/zone, $VLLM_LEDGER_TZ, --tz) -> the zone that wins. Each level is set on top of
# every level below it, so each row also shows that it beats them.
LEVELS = [
    ("default", None, None, None, "Asia/Shanghai"),
    ("root", "Asia/Tokyo", None, None, "Asia/Tokyo"),
    ("VLLM_LEDGER_TZ", "Asia/Tokyo", "America/New_York", None, "America/New_York"),
    ("--tz", "Asia/Tokyo", "America/New_York", "UTC", "UTC"),
]
LEVEL_IDS = [row[0] for row in LEVELS]


@pytest.fixture(scope="module")
def ledger(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("zone") / "root"
    write_ledger(
        root,
        "run-a",
        start_ts=MIDNIGHT_SH - 12 * 3600,
        end_ts=AT - 60,
        events=[ev(ts, prompt=n) for ts, n in EVENTS],
        heartbeat_every_s=None,
    )
    return root


def _root_with(ledger: Path, dest: Path, zone: str | None) -> Path:
    shutil.copytree(ledger, dest)
    if zone is not None:
        (dest / ZONE_FILE).write_text(f"{zone}\n")
    return dest


def _env(env_tz: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in (ZONE_ENV, "VLLM_LEDGER_DIR")}
    env["PYTHONPATH"] = str(REPO)
    if env_tz is not None:
        env[ZONE_ENV] = env_tz
    return env


def _cli(*args: str, env_tz: str | None = None) -> tuple[int, str, str]:
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger", *args],
        capture_output=True,
        text=True,
        env=_env(env_tz),
        timeout=120,
    )
    return p.returncode, p.stdout, p.stderr


def _origin(level: str, root: Path) -> str:
    """How the text outputs name the zone's origin (nothing more than the name for --tz)."""
    return {
        "default": ", the default",
        "root": f", from {root / ZONE_FILE}",
        "VLLM_LEDGER_TZ": ", from VLLM_LEDGER_TZ",
        "--tz": "",
    }[level]


def _local(ts: int, zone: str) -> str:
    return format_instant(ts, ZoneInfo(zone))


def test_the_ledger_straddles_four_different_midnights() -> None:
    starts = {z: int(datetime(*_ymd(AT, z), tzinfo=ZoneInfo(z)).timestamp()) for z in TODAY_INPUT}
    assert len(set(starts.values())) == 4
    for zone, want in TODAY_INPUT.items():
        assert sum(n for ts, n in EVENTS if starts[zone] <= ts < AT) == want


def _ymd(ts: int, zone: str) -> tuple[int, int, int]:
    d = datetime.fromtimestamp(ts, ZoneInfo(zone))
    return d.year, d.month, d.day


@pytest.mark.parametrize(("level", "file", "env_tz", "flag", "zone"), LEVELS, ids=LEVEL_IDS)
def test_each_level_changes_today_through_report(
    ledger: Path,
    tmp_path: Path,
    level: str,
    file: str | None,
    env_tz: str | None,
    flag: str | None,
    zone: str,
) -> None:
    root = _root_with(ledger, tmp_path / "root", file)
    argv = ["report", "--root", str(root), "--at", str(AT), *(["--tz", flag] if flag else [])]
    code, out, err = _cli(*argv, "--json", env_tz=env_tz)
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert (doc["tz"], doc["tz_source"]) == (zone, level)
    today = doc["windows"]["today"]
    assert today["input"] == TODAY_INPUT[zone]
    assert today["start"] == int(datetime(*_ymd(AT, zone), tzinfo=ZoneInfo(zone)).timestamp())
    assert doc["windows"]["total"]["input"] == 1111  # the zone moves "today" only

    code, out, err = _cli(*argv, env_tz=env_tz)
    assert (code, err) == (0, "")
    first = out.splitlines()[0]
    assert first == (
        f"vLLM token ledger as of {_local(AT, zone)} ({zone}{_origin(level, root)}); "
        "1 run(s), 1 writer(s)"
    )
    today_row = next(line.split() for line in out.splitlines() if line.startswith("today "))
    assert today_row[1] == f"{TODAY_INPUT[zone]:,}"


@pytest.mark.parametrize(("level", "file", "env_tz", "flag", "zone"), LEVELS, ids=LEVEL_IDS)
def test_each_level_changes_today_through_timeline(
    ledger: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    level: str,
    file: str | None,
    env_tz: str | None,
    flag: str | None,
    zone: str,
) -> None:
    root = _root_with(ledger, tmp_path / "root", file)
    monkeypatch.delenv(ZONE_ENV, raising=False)
    if env_tz is not None:
        monkeypatch.setenv(ZONE_ENV, env_tz)
    argv = ["timeline", "--root", str(root), "--at", str(AT), "--window", "today", "--step", "1h"]
    argv += ["--tz", flag] if flag else []
    assert main([*argv, "--json"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    doc = json.loads(out)
    assert (doc["tz"], doc["tz_source"]) == (zone, level)
    assert doc["window"]["input"] == TODAY_INPUT[zone]
    assert sum(s["input"] or 0 for s in doc["steps"]) == TODAY_INPUT[zone]  # unknown: null
    assert doc["window"]["start"] == int(
        datetime(*_ymd(AT, zone), tzinfo=ZoneInfo(zone)).timestamp()
    )
    assert main(argv) == 0
    out, err = capsys.readouterr()
    # The header names the zone (within 80 columns); where it came from closes the output.
    lines = out.splitlines()
    assert f"as of {_local(AT, zone)} ({zone})" in "\n".join(lines[:2])
    if level != "--tz":
        assert lines[-1] == f"zone: {zone}{_origin(level, root)}"


# The exporter reads the real clock: this launcher moves it to AT before vllm_ledger is
# imported (every clock=time.time default binds to it), as tests/golden/cli_clock.py does.
AT_CLOCK = (
    "import sys, time; t0 = time.time(); real = time.time; "
    f"time.time = lambda: {AT} + (real() - t0); "
    "from vllm_ledger.cli import main; sys.exit(main(sys.argv[1:]))"
)


@contextlib.contextmanager
def _exporter(root: Path, env_tz: str | None, flag: str | None) -> Iterator[tuple[str, str]]:
    """Start the real exporter on 127.0.0.1 (any free port); yields (its serving line, one
    scrape of /metrics); stopped by its pid."""
    argv = [sys.executable, "-c", AT_CLOCK, "exporter", "--root", str(root), "--no-gpu"]
    argv += ["--listen", "127.0.0.1:0", *(["--tz", flag] if flag else [])]
    proc = subprocess.Popen(
        argv,
        env=_env(env_tz),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 60
        line = ""
        while "serving http://" not in line:
            ready, _, _ = select.select(
                [proc.stderr], [], [], max(0.0, deadline - time.monotonic())
            )
            assert ready, "the exporter did not say it was serving within 60 s"
            line = proc.stderr.readline()
            assert line, f"the exporter ended: exit {proc.wait()}"
        url = line.split("serving ", 1)[1].split(" from ", 1)[0]
        with urllib.request.urlopen(url, timeout=30) as r:
            yield line.rstrip("\n"), r.read().decode()
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(20)


@pytest.mark.parametrize(("level", "file", "env_tz", "flag", "zone"), LEVELS, ids=LEVEL_IDS)
def test_each_level_changes_today_through_the_exporter(
    ledger: Path,
    tmp_path: Path,
    level: str,
    file: str | None,
    env_tz: str | None,
    flag: str | None,
    zone: str,
) -> None:
    root = _root_with(ledger, tmp_path / "root", file)
    origin = {
        "default": "the default",
        "root": f"from {root / ZONE_FILE}",
        "VLLM_LEDGER_TZ": "from VLLM_LEDGER_TZ",
        "--tz": "from --tz",
    }[level]
    with _exporter(root, env_tz, flag) as (line, text):
        assert line.startswith("vllm-ledger exporter: serving http://127.0.0.1:")
        assert line.endswith(f" from {root}; 'today' from midnight in {zone}, {origin}")
        samples = parse_samples(text)
        today = sum_metric(samples, "vllm_ledger_window_input_tokens", window="today")
        assert today == TODAY_INPUT[zone]
        assert sum_metric(samples, "vllm_ledger_window_input_tokens", window="total") == 1111


# ---- the files: bad, odd, disagreeing ----------------------------------------------------


def test_a_bad_zone_file_is_one_warning_and_the_rule_falls_through(
    ledger: Path, tmp_path: Path
) -> None:
    root = _root_with(ledger, tmp_path / "root", None)
    argv = ("report", "--root", str(root), "--at", str(AT), "--json")
    path = root / ZONE_FILE
    cases = {
        b"Mars/Base\n": "'Mars/Base' is not a known time zone",
        b"\x1b]0;PWNED\x07\n": "'\\x1b]0;PWNED\\x07' is not a known time zone",
        b"\xff\xfeAsia/Tokyo": "it is not ASCII text",
        b"\n": "it is empty",
        b"Asia/Tokyo\n" * 100: "larger than 256 bytes",
    }
    for data, says in cases.items():
        path.write_bytes(data)
        code, out, err = _cli(*argv)
        assert code == 0, err
        assert err == f"vllm-ledger: warning: ignoring the zone file {path}: {says}\n"
        doc = json.loads(out)
        assert (doc["tz"], doc["tz_source"]) == (DEFAULT_TZ, "default")
        assert doc["windows"]["today"]["input"] == TODAY_INPUT[DEFAULT_TZ]
    # A level above the file is not held up by it: the file is not even read.
    code, out, err = _cli(*argv, env_tz="UTC")
    assert (code, err, json.loads(out)["tz"]) == (0, "", "UTC")


def test_a_fifo_or_a_folder_named_zone_is_one_warning_and_never_blocks(
    ledger: Path, tmp_path: Path
) -> None:
    root = _root_with(ledger, tmp_path / "root", None)
    path = root / ZONE_FILE
    os.mkfifo(path)  # opening it for reading would block until a writer came
    code, out, err = _cli("timeline", "--root", str(root), "--at", str(AT), "--window", "today")
    assert code == 0
    assert err == f"vllm-ledger: warning: ignoring the zone file {path}: not a regular file\n"
    assert out.splitlines()[-1] == f"zone: {DEFAULT_TZ}, the default"
    path.unlink()
    path.mkdir()
    choice = resolve_zone(None, {}, [root])
    assert (choice.name, choice.source) == (DEFAULT_TZ, "default")
    assert choice.warnings == (f"ignoring the zone file {path}: not a regular file",)


def test_two_roots_that_disagree_are_one_line_asking_for_tz(ledger: Path, tmp_path: Path) -> None:
    a = _root_with(ledger, tmp_path / "a", "Asia/Tokyo")
    b = tmp_path / "b"
    b.mkdir()
    (b / ZONE_FILE).write_text("UTC\n")
    c = tmp_path / "c"  # no zone file: abstains
    c.mkdir()
    code, out, err = _cli("status", "--root", str(a), "--root", str(b), "--no-health")
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: the roots record different time zones (Asia/Tokyo in "
        f"{a / ZONE_FILE}, UTC in {b / ZONE_FILE}): pass --tz ZONE (or set VLLM_LEDGER_TZ) "
        "to choose one\n"
    )
    code, out, err = _cli(
        "status", "--root", str(a), "--root", str(b), "--no-health", "--tz", "UTC"
    )
    assert (code, err) == (0, "")
    doc = json.loads(out)
    assert (doc["tz"], doc["tz_source"], doc["tz_offset"]) == ("UTC", "--tz", 0)
    # Roots that agree, or that have no file, are fine: the zone is the one recorded.
    (b / ZONE_FILE).write_text("Asia/Tokyo\n")
    choice = resolve_zone(None, {}, [a, b, c])
    assert (choice.name, choice.source, choice.path) == ("Asia/Tokyo", "root", a / ZONE_FILE)


def test_a_bad_environment_value_is_refused_like_a_bad_flag(ledger: Path) -> None:
    code, out, err = _cli("report", "--root", str(ledger), env_tz="Mars/Base")
    assert (code, out) == (2, "")
    assert err == (
        "vllm-ledger: error: VLLM_LEDGER_TZ 'Mars/Base' is not a known time zone: use an IANA "
        "name, e.g. VLLM_LEDGER_TZ=Asia/Shanghai (or unset it)\n"
    )
    with pytest.raises(
        BadArgument,
        match=r"^tz 'America' is not a known time zone: use an IANA name, e\.g\. Asia/Shanghai$",
    ):
        resolve_zone("America", {}, [])
    assert resolve_zone(None, {ZONE_ENV: "  "}, []).source == "default"  # empty: not set


# ---- writing the zone: the plugin, render --usage --tz, bundle --tz ----------------------


def test_the_plugin_records_the_zone_from_its_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm.config import ParallelConfig, VllmConfig

    from vllm_ledger.plugin import LedgerStatLogger

    root = tmp_path / "ledger"
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(root))
    monkeypatch.setenv("VLLM_LEDGER_RUN_ID", "run-z")
    monkeypatch.setenv("VLLM_LEDGER_MAINTENANCE", "0")
    monkeypatch.delenv("VLLM_LEDGER_DISABLE", raising=False)
    monkeypatch.setenv(ZONE_ENV, "Europe/Berlin")
    config = VllmConfig(parallel_config=ParallelConfig(_api_process_count=1, _api_process_rank=0))
    p = LedgerStatLogger(config, [0])
    p.shutdown()
    assert p.recorder is not None and p.faults_total == 0
    assert (root / ZONE_FILE).read_text() == "Europe/Berlin\n"
    monkeypatch.delenv(ZONE_ENV)
    choice = resolve_zone(None, {}, [root])
    assert (choice.name, choice.source) == ("Europe/Berlin", "root")
    # A FIFO where the file would go: the plugin counts one fault, logs it and records on.
    other = tmp_path / "other"
    other.mkdir()
    os.mkfifo(other / ZONE_FILE)
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(other))
    monkeypatch.setenv(ZONE_ENV, "UTC")
    p = LedgerStatLogger(config, [0])
    p.shutdown()
    assert p.recorder is not None and p.faults_total == 1


def test_render_usage_tz_puts_the_zone_in_the_launch_environment(tmp_path: Path) -> None:
    host = tmp_path / "host.json"
    host.write_text(
        json.dumps(
            {
                "model": "/models/tiny",
                "image": "vllm/vllm-openai:v0.32.0",
                "port": 19001,
                "artifacts_dir": "/srv/artifacts",
                "ledger_code_dir": "/srv/vllm-ledger",
            }
        )
    )
    for mode, line in (
        ("docker", "--env VLLM_LEDGER_TZ=Europe/Berlin"),
        ("bare", "export VLLM_LEDGER_TZ=Europe/Berlin"),
    ):
        argv = ("render", "--host", str(host), "--output", "-", "--mode", mode, "--usage")
        code, out, err = _cli(*argv, "--tz", "Europe/Berlin")
        assert (code, err) == (0, ""), err
        assert [ln.strip(" \\") for ln in out.splitlines() if "VLLM_LEDGER_TZ" in ln] == [line]
        code, out, err = _cli(*argv)
        assert (code, err) == (0, "")
        assert "VLLM_LEDGER_TZ" not in out


def test_bundle_tz_is_read_by_the_plugin_below_the_environment(tmp_path: Path) -> None:
    dest = tmp_path / "plugin"
    code, out, err = _cli("bundle", "--tz", "Asia/Tokyo", "--output", str(dest))
    assert (code, err.startswith(f"wrote {dest} (a plugin bundle of ")) == (0, True), err
    assert "records the zone Asia/Tokyo in the ledger root" in out
    assert (dest / "VLLM_LEDGER_TZ").read_text() == "Asia/Tokyo\n"
    assert zone_to_record({}, dest) == "Asia/Tokyo"
    assert zone_to_record({ZONE_ENV: "UTC"}, dest) == "UTC"
    assert zone_to_record({}, tmp_path) is None  # not a bundle: no marker
    code, _out, err = _cli(
        "bundle", "--output", str(dest)
    )  # rebuilt without --tz: no zone any more
    assert (code, err.startswith(f"wrote {dest} ")) == (0, True), err
    assert zone_to_record({}, dest) is None
