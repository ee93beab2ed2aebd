"""The bad-input table: every command and flag with its bad values.

Each row is (argv, exit code, a substring of the one line). Every row must end with that exit
code and exactly one line on stderr, ``vllm-ledger: error: ...``, holding the substring,
printable (no escape reaches the terminal), with no traceback and no "internal error" (the
CLI's last-resort line for a bug), within DEADLINE_S = 20 seconds: a SIGALRM hang guard fails a
row that takes longer instead of hanging the suite. A row for a numeric flag also asserts that
the line names the flag and gives an example (``e.g.``).

Rows run in-process through ``vllm_ledger.cli.main`` so the table is fast; a few run the real
``python -m vllm_ledger`` to show the same line end to end. Commands that talk to a remote are
pointed at a closed port on 127.0.0.1 (refused at once) and otherwise only have their flags
checked. Nothing here needs the network, a GPU or root.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType

import pytest

from devtools.ports import free_port
from tests.conftest import REPO
from vllm_ledger.cli import main

DEADLINE_S = 20

KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnPOYPU6RUqDm43PC0TF4ZzHKrHLi3xHA0SmNX8mK0r bot@notify"
PRICES = (
    "--electricity-price=1",
    "--hardware-price=20000",
    "--lifetime-years=3",
    "--ops-per-hour=0.1",
)


CLOSED = f"http://127.0.0.1:{free_port()}"

# The least each command needs to get as far as parsing the flag under test.
BASE: dict[str, tuple[str, ...]] = {
    "advise": ("advise", "--metrics-url", f"{CLOSED}/metrics"),
    "bundle": ("bundle", "{new}"),
    "check": ("check", "--root", "{root}"),
    "compact": ("compact", "--root", "{root}"),
    "cost": ("cost", "--root", "{root}"),
    "doctor": ("doctor", "--only", "storage", "--root", "{root}"),
    "exporter": ("exporter", "--root", "{root}"),
    "fleet": ("fleet", "--prometheus", CLOSED),
    "keys": ("keys", "label", "--root", "{root}"),
    "observability": ("observability", "{new}"),
    "poll": ("poll", "--config", "{file}"),
    "preflight": ("preflight", "--host", "{file}"),
    "ramp": ("ramp", "--url", CLOSED, "--model", "m", "--output", "{new}"),
    "render": ("render", "--print-schema"),
    "report": ("report", "--root", "{root}"),
    "ssh-key-line": ("ssh-key-line", "--code-dir", "/srv/a", "--data-dir", "/srv/b", "{key}"),
    "status": ("status", "--root", "{root}"),
    "timeline": ("timeline", "--root", "{root}"),
    "verify": ("verify", "--metrics-url", f"{CLOSED}/metrics", "--root", "{root}"),
}

# (command, flag, a value in milliseconds that is in range once divided by 1000, or None,
#  whole numbers only)
NUMERIC: list[tuple[str, str, str | None, bool]] = [
    ("advise", "--power-limit-watts", None, False),
    ("cost", "--power-watts", None, False),
    ("cost", "--electricity-price", None, False),
    ("cost", "--hardware-price", None, False),
    ("cost", "--lifetime-years", None, False),
    ("cost", "--ops-per-hour", None, False),
    ("cost", "--cloud-input-price", None, False),
    ("cost", "--cloud-output-price", None, False),
    ("cost", "--cloud-cached-price", None, False),
    ("cost", "--tokens-per-day", None, False),
    ("cost", "--input-share", None, False),
    ("cost", "--cached-share", None, False),
    ("cost", "--busy-share", None, False),
    ("exporter", "--port", None, True),
    ("observability", "--kv-cache-threshold", None, False),
    ("observability", "--gpu-mem-threshold", None, False),
    ("observability", "--queue-waiting", None, False),
    ("observability", "--gpu-temp-celsius", None, False),
    ("observability", "--error-threshold", None, False),
    ("observability", "--max-model-len", None, True),
    ("ramp", "--max-tokens", None, True),
    ("doctor", "--expect-writers", None, True),
]

# Every duration flag (one type, _values.Duration: 30s, 10m, 7d, 1h30m or plain seconds), and
# the old spellings kept for one release, which take the same values and name themselves.
DURATIONS: list[tuple[str, str, str | None, bool]] = [
    ("advise", "--sample-for", "30000", False),
    ("advise", "--sample-seconds", "30000", False),
    ("advise", "--interval", "15000", False),
    ("advise", "--range", "1800000000", False),
    ("advise", "--ttft-p99-seconds", "3000", False),
    ("advise", "--baseline", "259200000", False),
    ("fleet", "--stale-after", "120000", False),
    ("fleet", "--lookback", "3600000000", False),
    ("observability", "--ttft-p99-seconds", "3000", False),
    ("observability", "--ledger-uncovered-seconds", "3600000", False),
    ("poll", "--interval", "3600000", False),
    ("poll", "--interval-s", "3600000", False),
    ("poll", "--deadline", "20000", False),
    ("poll", "--deadline-s", "20000", False),
    ("poll", "--connect-timeout", "5000", True),
    ("poll", "--connect-timeout-s", "5000", True),
    ("ramp", "--duration", "60000", False),
    ("verify", "--wait", "10000", False),
    ("verify", "--timeout", "10000", False),
    ("doctor", "--wait", "10000", False),
    ("doctor", "--timeout", "10000", False),
    ("doctor", "--heartbeat-wait", "12000", False),
]

BAD_DURATIONS = {
    "nan": "is not finite",
    "inf": "is not finite",
    "-inf": "is not finite",
    "NaN": "is not finite",
    "-1": "is out of range",
    "1e308": "is out of range",
    "1e999": "is not finite",
    "99999w": "is out of range",
    "abc": "is not a duration",
    "": "is not a duration",
    "0x10": "is not a duration",
    "1y": "is not a duration",
    "-5m": "is not a duration",
    "1m1h": "is not a duration",
    "1h1h": "is not a duration",
    "5 minutes": "is not a duration",
    "1e3s": "is not a duration",
    "9" * 50 + "s": "is not a duration",
}

BAD_NUMBERS = {
    "nan": "is not finite",
    "inf": "is not finite",
    "-inf": "is not finite",
    "NaN": "is not finite",
    "-1": "is out of range",
    "1e308": "is out of range",
    "1e999": "is not finite",
    "abc": "is not a number",
    "": "is not a number",
    "0x10": "is not a number",
}

Row = tuple[str, tuple[str, ...], int, str]


def _numeric_rows() -> Iterator[Row]:
    for command, flag, ms, integer in NUMERIC:
        for value, says in BAD_NUMBERS.items():
            yield (f"{command} {flag}={value}", (*BASE[command], f"{flag}={value}"), 2, says)
        if ms is not None:
            argv = (*BASE[command], f"{flag}={ms}")
            yield (f"{command} {flag}={ms}", argv, 2, "looks like milliseconds: give seconds")
        if integer:
            yield (f"{command} {flag}=1.5", (*BASE[command], f"{flag}=1.5"), 2, "whole number")
    for command, flag, ms, integer in DURATIONS:
        for value, says in BAD_DURATIONS.items():
            argv = (*BASE[command], f"{flag}={value}")
            yield (f"{command} {flag}={value[:20]}", argv, 2, says)
        if ms is not None:
            argv = (*BASE[command], f"{flag}={ms}")
            yield (f"{command} {flag}={ms}", argv, 2, "looks like milliseconds: give seconds")
        if integer:
            argv = (*BASE[command], f"{flag}=1500ms")
            yield (f"{command} {flag}=1500ms", argv, 2, "is not a whole number of seconds")


def _unknown_flag_rows() -> Iterator[Row]:
    for command, base in BASE.items():
        yield (
            f"{command} unknown flag",
            (*base, "--no-such-flag"),
            2,
            f"unrecognized arguments: --no-such-flag: see vllm-ledger {command} --help",
        )


AT_BAD = {
    "1796065409000": "looks like milliseconds: give seconds, e.g. --at 1796065409",
    "nan": "is not a time",
    "inf": "is not a time",
    "-inf": "is not a time",
    "-5": "is outside 2000-2100",
    "1e308": "is outside 2000-2100",
    "2026-11-29T25:00": "is not a time",
    "2026-13-01": "is not a date",
    "0001-01-01T00:00:00+14:00": "is outside 2000-2100",
    "soon": "is not a time",
    "": "is not a time",
}
TZ_BAD = ["Mars/Base", "America", "", "../../etc/passwd", "/etc/localtime", "UTC\n", "a" * 300]


def _time_rows() -> Iterator[Row]:
    for command in ("report", "timeline", "cost"):
        for value, says in AT_BAD.items():
            yield (f"{command} --at={value}", (*BASE[command], f"--at={value}"), 2, says)
    for command in ("report", "timeline", "cost", "status", "exporter", "bundle", "render"):
        for value in TZ_BAD:
            argv = (*BASE[command], f"--tz={value}")
            yield (f"{command} --tz={value[:20]!r}", argv, 2, "is not a known time zone")
    yield (
        "render --tz without --usage",
        ("render", "--host", "{file}", "--output", "-", "--tz", "UTC"),
        2,
        "--tz records the ledger's zone: it needs --usage",
    )


SPANS_BAD = {
    ("--window", "0h"): "--window '0h' is out of range: give a duration in whole seconds",
    ("--window", "1y"): "--window '1y' is not a duration",
    ("--window", "nan"): "--window 'nan' is not finite",
    ("--window", "-1h"): "--window '-1h' is not a duration",
    ("--window", "1.5s"): "--window '1.5s' is not a whole number of seconds",
    ("--window", "last-week"): "--window 'last-week' is not a duration",
    ("--window", "99999999999w"): "is out of range",
    ("--window", "9" * 5000 + "d"): "is not a duration",
    ("--step", "0s"): "--step '0s' is out of range",
    ("--step", "inf"): "--step 'inf' is not finite",
    ("--step", "1h30"): "--step '1h30' is not a duration",
    ("--step", "40000d"): "is out of range",
}


SINCE_BAD = {
    ("2026-13-01",): "--since '2026-13-01' is not a date: give a date (2026-12-01 or 20261201), "
    "a month (2026-12)",
    ("tomorrow-ish",): "--since 'tomorrow-ish' is not a time: give a date",
    ("0s",): "--since '0s' is not a duration above 0",
    ("1999-12-31",): "--since '1999-12-31' is outside 2000-2100",
    ("2026-03-08T02:30", "--tz", "America/New_York"): "--since '2026-03-08T02:30' does not exist "
    "in America/New_York: the clocks skip it (a DST change): give a time outside the gap, or one "
    "with an offset, e.g. --since 2026-03-08T03:30:00-04:00",
    ("2026-12-01", "--until", "2026-11-01"): "--until 2026-11-01 00:00:00 +08:00 is not after "
    "--since 2026-12-01 00:00:00 +08:00: give an --until later than --since",
}


def _since_rows() -> Iterator[Row]:
    for command in ("report", "export"):
        for (value, *more), says in SINCE_BAD.items():
            argv = (*BASE.get(command, _EXPORT), "--since", value, *more)
            yield (f"{command} --since {value} {' '.join(more)}".rstrip(), argv, 2, says)


def _timeline_rows() -> Iterator[Row]:
    for (flag, value), says in SPANS_BAD.items():
        argv = (*BASE["timeline"], f"{flag}={value}")
        yield (f"timeline {flag}={value[:20]}", argv, 2, says)
    yield (
        "timeline 30d in 1s steps",
        (*BASE["timeline"], "--window", "30d", "--step", "1s"),
        2,
        "makes 2592000 steps: use a larger --step (at most 5000 steps)",
    )
    yield (
        "timeline 100 years in 1s steps",
        (*BASE["timeline"], "--window", "36500d", "--step", "1s"),
        2,
        "use a larger --step",
    )


INSTANCE_BAD = {
    "nan": "is not finite",
    "inf": "is not finite",
    "-1": "is out of range",
    "0": "is out of range",
    "65536": "is out of range",
    "1e308": "is out of range",
    "1.5": "is not a whole number",
    "abc": "is neither HOST:PORT nor a port: give an instance as `report --by instance` prints it",
    "": "is empty",
    "0x10": "is neither HOST:PORT nor a port",
    ":8000": "is neither HOST:PORT nor a port",
    "gpu1:\x1b[2J": "is unprintable",
    "h:" + "x" * 300: "is too long",
}


def _instance_rows() -> Iterator[Row]:
    for command in ("report", "timeline", "status"):
        for value, says in INSTANCE_BAD.items():
            argv = (*BASE[command], f"--instance={value}")
            yield (f"{command} --instance={value[:20]!r}", argv, 2, says)
        argv = (*BASE[command], "--by=engine" if command == "timeline" else "--by=host")
        says = {"report": "--by 'host': give a key", "timeline": "--by 'engine': give a step"}.get(
            command, "invalid choice"
        )
        yield (f"{command} {argv[-1]}", argv, 2, says)


def _root_rows() -> Iterator[Row]:
    commands = {
        "report": ("report",),
        "timeline": ("timeline",),
        "status": ("status",),
        "check": ("check",),
        "compact": ("compact",),
        "exporter": ("exporter",),
        "cost": ("cost", "--power-watts=300", *PRICES),
        "verify": ("verify", "--metrics-url", f"{CLOSED}/metrics"),
    }
    for command, argv in commands.items():
        for what, root in (("missing", "{missing}"), ("a file", "{file}"), ("a FIFO", "{fifo}")):
            yield (
                f"{command} root is {what}",
                (*argv, "--root", root),
                2,
                "is not a directory: pass --root DIR where the ledgers are",
            )


def _output_rows() -> Iterator[Row]:
    render = ("render", "--host", "{file}", "--output")
    report = ("report", "--root", "{root}", "--html")
    ramp_ = ("ramp", "--url", CLOSED, "--model", "m")
    for argv, flag in ((render, "--output"), (report, "--html")):
        cmd = argv[0]
        yield (f"{cmd} {flag} a directory", (*argv, "{dir}"), 2, f"{flag} {{dir}} is a directory")
        yield (f"{cmd} {flag} a FIFO", (*argv, "{fifo}"), 2, f"{flag} {{fifo}} is a FIFO")
        yield (f"{cmd} {flag} /dev/null", (*argv, "/dev/null"), 2, "is a character device")
        yield (f"{cmd} {flag} a link to a FIFO", (*argv, "{fifo_link}"), 2, "is a FIFO")
        yield (f"{cmd} {flag} no folder", (*argv, "{missing}/x"), 2, "does not exist")
        yield (f"{cmd} {flag} ''", (*argv, ""), 2, "is not a file name")
    for flag in ("--output", "--out"):  # --out: the old spelling, refused the same way
        ramp = (*ramp_, flag)
        yield (f"ramp {flag} a file", (*ramp, "{file}"), 2, f"{flag} {{file}} is a file, not a")
        yield (f"ramp {flag} a FIFO", (*ramp, "{fifo}"), 2, "is a FIFO, not a folder")
        yield (f"ramp {flag} /dev/null", (*ramp, "/dev/null"), 2, "is a character device")
        yield (f"ramp {flag} holds a FIFO", (*ramp, "{ramp_fifo}"), 2, "ramp.html is a FIFO")
        yield (f"ramp {flag} holds a dir", (*ramp, "{ramp_dir}"), 2, "ramp.png is a directory")
    for obs in (("observability",), ("observability", "--output")):
        name = " ".join(obs[1:]) or "OUT_DIR"
        yield (f"observability {name} a file", (*obs, "{file}"), 2, "is a file, not a folder")
        yield (f"observability {name} a FIFO", (*obs, "{fifo}"), 2, "is a FIFO, not a folder")
        yield (f"observability {name} holds a FIFO", (*obs, "{obs_fifo}"), 2, "is a FIFO")
        yield (f"observability {name} ''", (*obs, ""), 2, "is not a folder name")
    yield ("observability no folder", ("observability",), 2, "no folder given: pass --output")
    yield (
        "observability two folders",
        ("observability", "{new}", "--output", "{dir}"),
        2,
        "two folders given",
    )
    yield ("bundle no folder", ("bundle",), 2, "no folder given: pass --output DIR")
    yield ("bundle two folders", ("bundle", "{new}", "--output", "{dir}"), 2, "two folders given")
    yield ("bundle --output a file", ("bundle", "--output", "{file}"), 2, "is not a directory")


def _input_file_rows() -> Iterator[Row]:
    files = {
        "render --host": ("render", "--output", "-", "--host"),
        "preflight --host": ("preflight", "--host"),
        "poll --config": ("poll", "--config"),
        "poll --ssh-config": ("poll", "--config", "{file}", "--ssh-config"),
        "cost --config": ("cost", "--root", "{root}", "--config"),
        "advise --snapshot": ("advise", "--snapshot", "{file}", "--snapshot"),
        "ssh-key-line KEYFILE": ("ssh-key-line", "--code-dir", "/a", "--data-dir", "/b"),
        "keys label --key-names": ("keys", "label", "--root", "{root}", "--key-names"),
    }
    cases = {
        "{fifo}": "is a FIFO, not a regular file",
        "{dir}": "is a directory, not a regular file",
        "/dev/zero": "is a character device, not a regular file",
        "{missing}": "not found",
        "{big}": "is larger than",
    }
    for name, argv in files.items():
        for path, says in cases.items():
            if path == "{big}" and name == "advise --snapshot":
                continue  # 64 MiB are allowed there
            yield (f"{name} {path}", (*argv, path), 2, says)


OTHER: list[Row] = [
    # choices, required flags, commands
    ("report --by", (*BASE["report"], "--by", "colour"), 2, "--by 'colour': give a key"),
    ("cost --window", (*BASE["cost"], "--window", "1y"), 2, "argument --window: invalid choice"),
    ("render --mode", ("render", "--mode", "vm"), 2, "argument --mode: invalid choice"),
    ("keys action", ("keys", "show"), 2, "invalid choice: 'show'"),
    ("keys hash --root", ("keys", "hash", "--root", "{root}"), 2, "--root is for keys label"),
    ("poll --lang", (*BASE["poll"], "--lang", "fr"), 2, "argument --lang: invalid choice"),
    ("notifier without --config", ("notifier",), 2, "arguments are required: --config"),
    ("notifier action", ("notifier", "stop", "--config", "{file}"), 2, "invalid choice: 'stop'"),
    (
        "notifier resend without ID",
        ("notifier", "resend", "--config", "{file}"),
        2,
        "resend needs a delivery id, not None",
    ),
    (
        "notifier resend ID not a number",
        ("notifier", "resend", "1e3", "--config", "{file}"),
        2,
        "resend needs a delivery id, not '1e3'",
    ),
    (
        "notifier ID without resend",
        ("notifier", "status", "5", "--config", "{file}"),
        2,
        "an ID is only taken by resend, not by status",
    ),
    (
        "notifier --listen",
        ("notifier", "--config", "{file}", "--listen", "0.0.0.0"),
        2,
        "--listen '0.0.0.0': give HOST:PORT, e.g. 127.0.0.1:9095",
    ),
    ("poll without --config", ("poll",), 2, "the following arguments are required: --config"),
    ("ramp without --url", ("ramp",), 2, "give --url and --model, or --host HOST.json"),
    ("unknown command", ("frobnicate",), 2, "argument COMMAND: invalid choice: 'frobnicate'"),
    ("a flag with no value", (*BASE["report"], "--at"), 2, "argument --at: expected one"),
    ("an escape in a flag", (*BASE["report"], "--\x1b[2Jx"), 2, "--\\x1b[2Jx"),
    ("a newline in a root", ("report", "--root", "/no\nwhere"), 2, "/no\\x0awhere"),
    # text
    ("report --model empty", (*BASE["report"], "--model="), 2, "--model '' is empty"),
    ("report --model escape", (*BASE["report"], "--model=\x1b[2J"), 2, "is unprintable"),
    ("report --model long", (*BASE["report"], "--model=" + "m" * 300), 2, "is too long"),
    ("verify --run newline", (*BASE["verify"], "--run=a\nb"), 2, "--run 'a\\nb' is unprintable"),
    ("cost --currency long", (*BASE["cost"], "--currency=" + "C" * 17), 2, "is too long"),
    ("exporter --host escape", (*BASE["exporter"], "--host=\x1b]0;x\x07"), 2, "is unprintable"),
    # listen addresses
    ("listen :PORT", (*BASE["exporter"], "--listen=:9464"), 2, "--listen ':9464' is not HOST:PORT"),
    ("listen host only", (*BASE["exporter"], "--listen=gpu1"), 2, "is not HOST:PORT: give"),
    ("listen port only", (*BASE["exporter"], "--listen=9464"), 2, "is not HOST:PORT"),
    ("listen bad port", (*BASE["exporter"], "--listen=h:99999"), 2, "the port '99999' is not"),
    ("listen port nan", (*BASE["exporter"], "--listen=h:nan"), 2, "the port 'nan' is not"),
    ("listen v6 bare", (*BASE["exporter"], "--listen=::1:9464"), 2, "IPv6 address in brackets"),
    ("listen space", (*BASE["exporter"], "--listen=a b:1"), 2, "is not HOST:PORT"),
    ("listen escape", (*BASE["exporter"], "--listen=\x1b[2J:1"), 2, "is not HOST:PORT"),
    # windows: one set of names (read.periods.PERIOD_NAMES); cost takes no free duration
    ("cost --window 90m", (*BASE["cost"], "--window", "90m"), 2, "argument --window: invalid"),
    ("report --window 90m", (*BASE["report"], "--window", "90m"), 2, "argument --window: invalid"),
    # configs: JSON or TOML (YAML still read, deprecated)
    ("cost --config .ini", (*BASE["cost"], "--config", "{prices_ini}"), 2, "name the file .json"),
    ("cost --config bad JSON", (*BASE["cost"], "--config", "{prices_bad_json}"), 2, "is not JSON"),
    (
        "cost --config NaN",
        (*BASE["cost"], "--config", "{prices_nan_json}"),
        2,
        "",  # strict JSON: one line naming the file
    ),
    (
        "cost --config bad TOML",
        (*BASE["cost"], "--config", "{prices_bad_toml}"),
        2,
        "is not valid TOML",
    ),
    (
        "cost --config a list",
        (*BASE["cost"], "--config", "{prices_list_json}"),
        2,
        "must be a mapping of setting: value",
    ),
    (
        "cost --config true as a price",
        (*BASE["cost"], "--config", "{prices_bool_toml}"),
        2,
        "hardware_price must be a float, not True",
    ),
    # URLs
    ("advise url no scheme", ("advise", "--metrics-url", "127.0.0.1:8000"), 2, "http://"),
    ("advise url ftp", ("advise", "--prometheus", "ftp://h/"), 2, "is not an http:// or https://"),
    ("advise url no host", ("advise", "--metrics-url", "http://"), 2, "names no host"),
    ("advise gpu url", (*BASE["advise"], "--gpu-metrics-url", "x y"), 2, "is not a URL"),
    ("verify url port", ("verify", "--metrics-url", "http://h:99999/"), 2, "is not a URL"),
    ("ramp url", ("ramp", "--url", "localhost:8000", "--model", "m"), 2, "--url 'localhost:8000'"),
    ("cost --prometheus", (*BASE["cost"], "--prometheus", "http:///x"), 2, "names no host"),
    # lists and limits
    ("ramp --concurrency 0", (*BASE["ramp"], "--concurrency", "0,1"), 2, "--concurrency '0'"),
    ("ramp --concurrency x", (*BASE["ramp"], "--concurrency", "1,x"), 2, "is not a number"),
    ("ramp --concurrency big", (*BASE["ramp"], "--concurrency", "5000"), 2, "out of range"),
    ("ramp --concurrency nan", (*BASE["ramp"], "--concurrency", "nan"), 2, "is not finite"),
    ("ramp --concurrency many", (*BASE["ramp"], "--concurrency", "1," * 70), 2, "too many"),
    ("ramp --concurrency ''", (*BASE["ramp"], "--concurrency", ","), 2, "is empty"),
    ("ramp --prompt ''", (*BASE["ramp"], "--prompt="), 2, "--prompt is empty"),
    (
        "advise too many samples",
        (*BASE["advise"], "--sample-for", "1h", "--interval", "100ms"),
        2,
        "is more than 3600 samples",
    ),
    ("kv threshold as %", ("observability", "{new}", "--kv-cache-threshold", "90"), 2, "percent"),
    # durations written into Prometheus's files: the one duration type
    ("scrape 0s", ("observability", "{new}", "--scrape-interval", "0s"), 2, "is out of range"),
    ("scrape words", ("observability", "{new}", "--ttft-for", "5 minutes"), 2, "not a duration"),
    ("for 99999w", ("observability", "{new}", "--queue-for", "99999w"), 2, "is out of range"),
    ("for 1y", ("observability", "{new}", "--queue-for", "1y"), 2, "is not a duration"),
    ("for nan", ("observability", "{new}", "--gpu-mem-for", "nan"), 2, "is not finite"),
    ("down-for words", ("observability", "{new}", "--down-for", "1 min"), 2, "not a duration"),
    ("gpu-temp-for 9w", ("observability", "{new}", "--gpu-temp-for", "9w"), 2, "is out of range"),
    ("error-for nan", ("observability", "{new}", "--error-for", "nan"), 2, "is not finite"),
    ("kv-cache-for ms", ("observability", "{new}", "--kv-cache-for", "3600000"), 2, "milliseconds"),
    ("error as %", ("observability", "{new}", "--error-threshold", "5"), 2, "percentage"),
    ("alerts set", ("observability", "{new}", "--alerts", "all"), 2, "--alerts: invalid choice"),
    ("webhook ftp", ("observability", "{new}", "--webhook-url", "ftp://h/"), 2, "is not an http"),
    ("runbook space", ("observability", "{new}", "--runbook-url", "a b"), 2, "is not a URL"),
    ("vllm name", ("observability", "{new}", "--vllm", "h:1=gpu1"), 2, "'gpu1' is not HOST:PORT"),
    ("alertmanager", ("observability", "{new}", "--alertmanager", "am"), 2, "is not HOST:PORT"),
    (
        "uncovered range 10s",
        ("observability", "{new}", "--ledger-uncovered-range", "10s"),
        2,
        "is out of range",
    ),
    # a remote that refuses at once: one line, well inside the deadline
    ("advise closed port", (*BASE["advise"], "--sample-for", "1s"), 2, "cannot read"),
    ("advise closed Prometheus", ("advise", "--prometheus", CLOSED), 2, "cannot read"),
    ("verify closed port", (*BASE["verify"], "--wait", "0"), 2, "cannot read"),
    (
        "ramp closed port",
        (*BASE["ramp"], "--duration", "1", "--concurrency", "1", "--no-progress"),
        2,
        "",  # "cannot read" (or, without the [http] extra, what to install)
    ),
    (
        "cost closed Prometheus",
        ("cost", "--root", "{root}", *PRICES, "--prometheus", CLOSED),
        2,
        "cannot read",
    ),
    ("bundle DIR a file", ("bundle", "{file}"), 2, "exists and is not a directory"),
    # fleet
    ("fleet without --prometheus", ("fleet",), 2, "the following arguments are required"),
    ("fleet --prometheus no host", ("fleet", "--prometheus", "http://"), 2, "names no host"),
    ("fleet --job escape", (*BASE["fleet"], "--job=\x1b[2J"), 2, "is unprintable"),
    ("fleet --lookback 10", (*BASE["fleet"], "--lookback", "10"), 2, "is out of range"),
    ("fleet closed Prometheus", BASE["fleet"], 2, "cannot read"),
    ("notifier without --config", ("notifier",), 2, "the following arguments are required"),
    # doctor and preflight
    (
        "doctor without --metrics-url",
        ("doctor", "--root", "{root}"),
        2,
        "the agreement check needs --metrics-url: give vLLM's /metrics",
    ),
    ("doctor --only", ("doctor", "--only", "vibes"), 2, "argument --only: invalid choice"),
    (
        "enforce --config missing",
        ("enforce", "--root", "{root}", "--config", "{missing}/b.toml"),
        2,
        "cannot read",
    ),
    ("doctor url ftp", ("doctor", "--metrics-url", "ftp://h/"), 2, "is not an http:// or https://"),
    ("doctor root missing", (*BASE["doctor"][:-1], "{missing}"), 2, "is not a directory"),
    ("preflight without --host", ("preflight",), 2, "the following arguments are required: --host"),
    ("preflight --bot-user escape", (*BASE["preflight"], "--bot-user=\x1b[2J"), 2, "unprintable"),
    ("preflight host not JSON", BASE["preflight"], 2, "host file {file}"),
]

_STOP = ("declare-stop", "--root", "{root}", "--instance", "h:8000", "--reason", "upgrade")
DECLARE_STOP: list[Row] = [
    (
        "declare-stop --from nan",
        (*_STOP, "--from", "nan", "--until", "1796000000"),
        2,
        "--from 'nan' is not a time",
    ),
    (
        "declare-stop --until ms",
        (*_STOP, "--from", "1796000000", "--until", "1796000000000"),
        2,
        "--until '1796000000000' looks like milliseconds",
    ),
    (
        "declare-stop --until before --from",
        (*_STOP, "--from", "1796000100", "--until", "1796000000"),
        2,
        "is not after --from",
    ),
    (
        "declare-stop --until in the future",
        (*_STOP, "--from", "1796000000", "--until", "4000000000"),
        2,
        "is in the future",
    ),
    (
        "declare-stop --reason escape",
        (
            "declare-stop",
            "--root",
            "{root}",
            "--instance",
            "h:8000",
            "--reason",
            "\x1b[2J",
            "--from",
            "1796000000",
            "--until",
            "1796000100",
        ),
        2,
        "is unprintable",
    ),
    (
        "declare-stop unknown instance",
        (*_STOP, "--from", "1796000000", "--until", "1796000100"),
        2,
        "knows instance h:8000",
    ),
    (
        "declare-stop root is a file",
        (
            "declare-stop",
            "--root",
            "{file}",
            "--instance",
            "h:8000",
            "--reason",
            "x",
            "--from",
            "1796000000",
            "--until",
            "1796000100",
        ),
        2,
        "is not a directory",
    ),
]

_EXPORT = ("export", "--root", "{root}")
EXPORT: list[Row] = [
    ("export without a period", _EXPORT, 2, "one of the arguments --window --since is required"),
    (
        "export --window and --since",
        (*_EXPORT, "--window", "yesterday", "--since", "1796000000"),
        2,
        "argument --since: not allowed with argument --window",
    ),
    (
        "export --until without --since",
        (*_EXPORT, "--window", "yesterday", "--until", "1796000000"),
        2,
        "--until needs --since",
    ),
    (
        "export --since ms",
        (*_EXPORT, "--since", "1796000000000"),
        2,
        "--since '1796000000000' looks like milliseconds",
    ),
    (
        "export --until before --since",
        (*_EXPORT, "--since", "1796000100", "--until", "1796000000"),
        2,
        "is not after --since",
    ),
    (
        "export --by week",
        (*_EXPORT, "--since", "1796000000", "--by", "week"),
        2,
        "--by 'week': give one of hour, day or month",
    ),
    (
        "export --by hour,day",
        (*_EXPORT, "--since", "1796000000", "--by", "hour,day"),
        2,
        "give one of hour, day or month",
    ),
    (
        "export --format xml",
        (*_EXPORT, "--since", "1796000000", "--format", "xml"),
        2,
        "invalid choice",
    ),
    (
        "export --output a FIFO",
        (*_EXPORT, "--since", "1796000000", "--output", "{fifo}"),
        2,
        "is a FIFO",
    ),
    (
        "export root is missing",
        ("export", "--root", "{missing}", "--since", "1796000000"),
        2,
        "is not a directory",
    ),
]

_RENDER = ("render", "--host", "{file}")
RENDER_ROWS: list[Row] = [
    # render's systemd/compose/units/explain flags
    ("render --units a FIFO", (*_RENDER, "--units", "{fifo}"), 2, "--units {fifo} is a FIFO"),
    ("render --units a file", (*_RENDER, "--units", "{file}"), 2, "is a file, not a folder"),
    ("render --units ''", (*_RENDER, "--units", ""), 2, "--units '' is not a folder name"),
    (
        "render --exporter-listen :PORT",
        (*_RENDER, "--units", "{dir}", "--exporter-listen", ":9464"),
        2,
        "--exporter-listen ':9464' is not HOST:PORT",
    ),
    (
        "render --exporter-listen without --units",
        (*_RENDER, "--output", "-", "--exporter-listen", "127.0.0.1:9464"),
        2,
        "--exporter-listen is for the ledger's units: it needs --units DIR",
    ),
    (
        "render --notifier-config relative",
        (*_RENDER, "--units", "{dir}", "--notifier-config", "notifier.json"),
        2,
        "--notifier-config notifier.json: give an absolute path",
    ),
    ("render --workload", (*_RENDER, "--explain", "--workload", "x"), 2, "invalid choice: 'x'"),
    (
        "render --workload without --explain",
        (*_RENDER, "--output", "-", "--workload", "batch"),
        2,
        "--workload chooses --explain's hints: it needs --explain",
    ),
    (
        "render --explain with --output",
        (*_RENDER, "--explain", "--output", "-"),
        2,
        "--explain only prints: leave out --output and --units",
    ),
    (
        "render --root without --explain",
        (*_RENDER, "--output", "-", "--root", "{root}"),
        2,
        "--root feeds --explain's calibration: it needs --explain",
    ),
    ("render nothing to do", _RENDER, 2, "render needs --output FILE, --units DIR or --explain"),
]

ROWS: list[Row] = [
    *EXPORT,
    *DECLARE_STOP,
    *_numeric_rows(),
    *_unknown_flag_rows(),
    *_time_rows(),
    *_since_rows(),
    *_timeline_rows(),
    *_instance_rows(),
    *_root_rows(),
    *_output_rows(),
    *_input_file_rows(),
    *OTHER,
    *RENDER_ROWS,
]


@pytest.fixture(scope="module")
def places(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Paths the rows name: an empty root, a file, a FIFO, a folder, a missing path..."""
    base = tmp_path_factory.mktemp("bad-input")
    (base / "root").mkdir()
    (base / "file").write_text("x\n")
    os.mkfifo(base / "fifo")
    (base / "dir").mkdir()
    (base / "fifo_link").symlink_to(base / "fifo")
    (base / "key.pub").write_text(KEY + "\n")
    with (base / "big").open("wb") as f:
        f.truncate(2 * 1024 * 1024)
    (base / "ramp_fifo").mkdir()
    os.mkfifo(base / "ramp_fifo" / "ramp.html")
    (base / "ramp_dir").mkdir()
    (base / "ramp_dir" / "ramp.png").mkdir()
    (base / "obs_fifo").mkdir()
    os.mkfifo(base / "obs_fifo" / "prometheus.yml")
    configs = {
        "prices_ini": ("prices.ini", "electricity_price = 1\n"),
        "prices_bad_json": ("bad.json", '{"electricity_price": 1,}'),
        "prices_nan_json": ("nan.json", '{"electricity_price": NaN}'),
        "prices_list_json": ("list.json", "[1, 2]"),
        "prices_bad_toml": ("bad.toml", "electricity_price = = 1\n"),
        "prices_bool_toml": ("bool.toml", "hardware_price = true\n"),
    }
    for file_name, content in configs.values():
        (base / file_name).write_text(content)
    names = ("root", "file", "fifo", "dir", "fifo_link", "big", "ramp_fifo", "ramp_dir")
    out = {name: str(base / name) for name in names}
    out.update({name: str(base / file_name) for name, (file_name, _c) in configs.items()})
    out.update(
        key=str(base / "key.pub"),
        missing=str(base / "missing"),
        new=str(base / "new"),
        obs_fifo=str(base / "obs_fifo"),
    )
    return out


def _fill(text: str, places: dict[str, str]) -> str:
    for name, path in places.items():
        text = text.replace("{" + name + "}", path)
    return text


class Hung(BaseException):
    """A row ran past its deadline (a BaseException: the CLI's last-resort handler lets it by)."""


def _alarm(signum: int, frame: FrameType | None) -> None:
    raise Hung(f"no answer within {DEADLINE_S} s")


def _check_line(err: str, says: str, code: int, expected: int) -> None:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    assert len(lines) == 1 and err.endswith("\n"), f"not one line: {err!r}"
    line = lines[0]
    assert code == expected, (code, line)
    assert line.startswith("vllm-ledger: error: "), line
    assert "internal error" not in line, line
    assert line.isprintable(), f"unsafe characters reach the terminal: {line!r}"
    assert says in line, (says, line)


@pytest.mark.parametrize(("argv", "code", "says"), [r[1:] for r in ROWS], ids=[r[0] for r in ROWS])
def test_bad_input_is_one_line_and_an_exit_code(
    argv: tuple[str, ...],
    code: int,
    says: str,
    places: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In-process; each row has DEADLINE_S (20 s) before the hang guard fails it."""
    args = [_fill(a, places) for a in argv]
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(DEADLINE_S)
    try:
        try:
            got = main(args)
        except SystemExit as exc:  # only --help and --version exit; a bad input returns
            got = exc.code if isinstance(exc.code, int) else 1
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    out, err = capsys.readouterr()
    assert "Traceback" not in out
    _check_line(err, _fill(says, places), got, code)
    last = argv[-1]
    flag = last.split("=")[0] if last.startswith("--") and "=" in last else None
    if flag in {f for _c, f, _m, _i in (*NUMERIC, *DURATIONS)}:
        assert f"{flag} " in err and "e.g." in err, err  # names the flag, shows a good value
    assert not Path(places["new"]).exists(), "a refused command wrote its output"


END_TO_END: list[tuple[str, ...]] = [
    ("report", "--root", "{root}", "--at", "nan"),
    ("timeline", "--root", "{root}", "--window=9999999999w"),
    ("poll", "--config", "{fifo}", "--interval-s=nan"),
    ("poll", "--config", "{file}", "--interval-s=inf"),
    ("poll", "--config", "{file}", "--deadline=1y"),
    ("exporter", "--root", "{root}", "--listen=:9464"),
    ("render", "--host", "{file}", "--output", "/dev/null"),
    ("report", "--root", "{root}", "--html", "{fifo}"),
    ("status", "--root", "{root}", "--no-such-flag"),
    ("verify", "--metrics-url", "http://127.0.0.1:1/metrics", "--wait", "0"),
]


@pytest.mark.parametrize("argv", END_TO_END, ids=[" ".join(a[:1] + a[3:]) for a in END_TO_END])
def test_the_real_command_line_prints_one_line(
    argv: tuple[str, ...], places: dict[str, str]
) -> None:
    """``python -m vllm_ledger`` as a user runs it: exit 2, one line, within DEADLINE_S."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("VLLM_LEDGER_TRACEBACK", None)
    start = time.monotonic()
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger", *(_fill(a, places) for a in argv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=DEADLINE_S,
    )
    assert time.monotonic() - start < DEADLINE_S
    _check_line(p.stderr, "", p.returncode, 2)
    assert p.stdout == ""


def test_the_table_covers_every_command() -> None:
    from vllm_ledger.commands import COMMANDS

    assert {argv[0] for _id, argv, _code, _says in ROWS} >= set(COMMANDS)


def test_a_bug_is_one_line_too(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], places: dict[str, str]
) -> None:
    """The last resort: an exception nobody foresaw is one line and exit 1, not a traceback."""
    from vllm_ledger.commands import status

    def boom(_args: object) -> int:
        raise ZeroDivisionError("division by zero")

    monkeypatch.setattr(status, "run", boom)
    monkeypatch.delenv("VLLM_LEDGER_TRACEBACK", raising=False)
    assert main(["status", "--root", places["root"]]) == 1
    _out, err = capsys.readouterr()
    assert err == (
        "vllm-ledger: error: internal error (ZeroDivisionError: division by zero): please "
        "report it; VLLM_LEDGER_TRACEBACK=1 shows the traceback\n"
    )
