"""notify/digest.py and the usage command: the digest is due at its local time, posted once a
day across restarts (the notifier's clock passed in), its figures those of ``report`` for
yesterday; "usage" is answered with what ``status --text --ask`` prints for the host. The
host is the real status command, run here by a stand-in ``ssh`` (the process boundary)."""

from __future__ import annotations

import json
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

from tests.inproc import run_cli
from tests.ledgers import FakeClock
from tests.usage_hosts import (
    Call,
    local_ssh,
    midday_zone,
    usage_entry,
    write_host_root,
    yesterday_noon_ts,
)
from vllm_ledger.errors import ConfigError
from vllm_ledger.notify.chat import parse_request
from vllm_ledger.notify.digest import DigestSettings, digest_settings, due
from vllm_ledger.notify.service import Notifier
from vllm_ledger.notify.store import Command

SECRET = "unit-command-secret"
SLOT = datetime(2026, 11, 30, 9, 0, tzinfo=ZoneInfo("Asia/Shanghai")).timestamp()


def _keys(now_ts: float, settings: DigestSettings) -> list[tuple[str, str]]:
    return [(a.word, key) for a, key in due(now_ts, settings)]


def test_the_digest_is_due_from_its_local_time_until_midnight() -> None:
    s = DigestSettings(9 * 60, "Asia/Shanghai")
    assert _keys(SLOT - 1, s) == []  # 08:59:59: not yet (yesterday's is not made up)
    assert _keys(SLOT, s) == [("digest", "digest:day:2026-11-30")]
    assert _keys(SLOT + 15 * 3600 - 1, s) == [("digest", "digest:day:2026-11-30")]  # 23:59:59
    assert _keys(SLOT + 15 * 3600, s) == []  # midnight: the next day's time has not come
    assert _keys(SLOT + 86400, s) == [("digest", "digest:day:2026-12-01")]
    monday = DigestSettings(9 * 60, "Asia/Shanghai", weekday=0)  # 2026-11-30 is a Monday
    assert _keys(SLOT, monday) == [
        ("digest", "digest:day:2026-11-30"),
        ("digest-week", "digest:week:2026-11-30"),
    ]
    assert _keys(SLOT + 86400, monday) == [("digest", "digest:day:2026-12-01")]


@pytest.mark.parametrize(
    ("value", "line"),
    [
        ({}, "notifier.digest.time: give the local time as HH:MM, e.g. 09:00"),
        ({"time": "9:00"}, "notifier.digest.time: give the local time as HH:MM, e.g. 09:00"),
        ({"time": "24:00"}, "notifier.digest.time: give the local time as HH:MM, e.g. 09:00"),
        ({"time": "09:00", "zone": "Mars/Base"},
         "notifier.digest.zone: give a time zone name such as Asia/Shanghai"),
        ({"time": "09:00", "weekly": "someday"},
         "notifier.digest.weekly: give a weekday: monday, tuesday, wednesday, thursday, "
         "friday, saturday, sunday"),
        ({"time": "09:00", "when": 1},
         "notifier.digest.when: unknown field (known: time, zone, weekly, prices)"),
        ("09:00", 'notifier.digest: give an object such as {"time": "09:00"}'),
    ],
)  # fmt: skip
def test_a_bad_digest_setting_is_one_line(value: Any, line: str, tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as bad:
        digest_settings(value, tmp_path)
    assert str(bad.value) == line


def test_the_digest_prices_come_from_a_price_file(tmp_path: Path) -> None:
    (tmp_path / "prices.toml").write_text("cloud_input_price = 2.0\ncloud_output_price = 8.0\n")
    got = digest_settings({"time": "08:30", "zone": "UTC", "prices": "prices.toml"}, tmp_path)
    assert got.minute_of_day == 510 and got.pricing is not None
    assert got.pricing.cloud.cached_per_million == 2.0  # the input price, as cost reads it
    (tmp_path / "bad.toml").write_text("electricity_price = 1.0\n")
    with pytest.raises(ConfigError, match=r"^notifier.digest.prices: .*bad.toml: the digest's"):
        digest_settings({"time": "08:30", "prices": "bad.toml"}, tmp_path)


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A host whose ledger credited two keys and two adapters yesterday and today, in a zone
    where it is about noon: no midnight falls between this fixture and the module's last test."""
    root = tmp_path_factory.mktemp("digest-host") / "usage"
    zone = midday_zone()
    noon = yesterday_noon_ts(zone)
    today = time.time() - 120  # about 11:00 or later there
    write_host_root(root, "run-1", [
        Call(noon, "team-a", "tiny", prompt=1_234_567, gen=8_910, cached=1_000),
        Call(noon + 60, "key:1a2b3c4d", "org/tiny-lora", prompt=4_000, gen=900),
        Call(noon + 120, prompt=50, gen=10, untagged=True),
        Call(today, "team-a", "tiny", prompt=777, gen=77),
    ], zone=zone)  # fmt: skip
    return root


def _notifier(tmp_path: Path, root: Path, clock: FakeClock, **digest: Any) -> Notifier:
    config = tmp_path / "private.json"
    config.write_text(json.dumps({
        "usage": {"19001": usage_entry(root)},
        "notifier": {"lang": "en", "startup_wait_s": 0,
                     "digest": {"time": "09:00", "zone": "Asia/Shanghai", **digest}},
    }))  # fmt: skip
    n = Notifier(
        config,
        env={"VLLM_LEDGER_COMMAND_SECRET": SECRET},
        clock=clock,
        listen=("127.0.0.1", 0),
        ssh=str(local_ssh(tmp_path)),
    )
    n.endpoint.server_close()
    return n


def _drain(n: Notifier) -> list[tuple[str, str]]:
    out = []
    while (d := n.store.next_pending()) is not None:
        out.append((d.kind, d.text))
    return out


def test_the_digest_is_posted_once_at_its_time_across_restarts(host: Path, tmp_path: Path) -> None:
    clock = FakeClock(SLOT - 1)
    n = _notifier(tmp_path, host, clock)
    try:
        assert n.digest is not None
        n.digest.step()  # 08:59:59: not yet
        assert _drain(n) == []
        clock.t = SLOT  # 09:00: today's
        n.digest.step()
        posted = _drain(n)
        n.digest.step()
        assert _drain(n) == []
    finally:
        n.store.close()
    n = _notifier(tmp_path, host, clock)  # a restart, the same instant: nothing again
    try:
        assert n.digest is not None
        n.digest.step()
        assert _drain(n) == []
        clock.t = SLOT + 86400  # the next day's
        n.digest.step()
        assert [k for k, _t in _drain(n)] == ["digest"]
    finally:
        n.store.close()
    assert [k for k, _t in posted] == ["digest"]
    text = posted[0][1]
    code, expected, err = run_cli(
        "status", "--root", str(host), "--no-health", "--text", "--digest", "--lang", "en"
    )
    assert (code, err) == (0, "")
    assert text == expected  # what `status --text --digest` prints for the host
    report = json.loads(
        run_cli("report", "--root", str(host), "--window", "yesterday", "--json")[1]
    )["windows"]["yesterday"]
    numbers = re.fullmatch(
        r"tokens: input ([\d,]+) · output ([\d,]+) · cached ([\d,]+) · requests ([\d,]+)",
        text.splitlines()[3],
    )
    assert numbers is not None
    assert [int(x.replace(",", "")) for x in numbers.groups()] == [
        report["input"], report["output"], report["cached"], report["requests"]
    ] == [1_238_617, 9_820, 1_000, 3]  # fmt: skip
    assert text.splitlines()[4:7] == [
        "top keys (input/output): team-a 1,234,567/8,910, key:1a2b3c4d 4,000/900",
        "top adapters (input/output): tiny 1,234,567/8,910, org/tiny-lora 4,000/900",
        "not attributed: input 50 · output 10",
    ]


def test_the_weekly_digest_on_its_weekday(host: Path, tmp_path: Path) -> None:
    n = _notifier(tmp_path, host, FakeClock(SLOT), weekly="monday")
    try:
        assert n.digest is not None
        n.digest.step()
        got = _drain(n)
    finally:
        n.store.close()
    assert [t.splitlines()[0] for _k, t in got] == ["Daily digest", "Weekly digest"]
    assert "tokens: input 1,238,617 · output 9,820" in got[1][1]  # today's is not in the week


def test_usage_is_answered_as_status_prints_it_for_the_host(host: Path, tmp_path: Path) -> None:
    n = _notifier(tmp_path, host, FakeClock(SLOT))
    try:
        req = parse_request({"message_id": "m1", "text": "@bot usage adapter today"})
        reply = n.reply(Command(1, req.message_id, req.command, req.arg, req.lang, SLOT))
    finally:
        n.store.close()
    code, expected, err = run_cli(
        "status", "--root", str(host), "--no-health", "--text", "--ask", "usage:adapter:today",
        "--lang", "en",
    )  # fmt: skip
    assert (code, err) == (0, "")
    as_of = re.compile(r"as of host time .*")
    assert as_of.sub("", reply) == as_of.sub("", expected)  # the instant moved on between
    assert reply.splitlines()[:5] == [
        "Usage by adapter · today",
        "── :19001 ──",
        reply.splitlines()[2],
        "                input  output  cached  requests",
        "tiny              777      77       0         1",
    ]
