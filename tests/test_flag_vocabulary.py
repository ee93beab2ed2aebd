"""One flag vocabulary (docs/cli.md, "Vocabulary"): every duration flag takes 30s, 10m, 7d and
plain seconds; every window flag the same names; a listen address is HOST:PORT; a folder
written is --output DIR; a price file is JSON or TOML. Each old spelling still works for one
release, with the value its new spelling gives, and says so in one note line, once.

The commands' ``run`` is replaced where a test only parses (nothing listens, polls or writes);
the windows and the price files are run for real on ledgers and files in ``tmp_path``.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from tests.ledgers import ev, write_ledger
from vllm_ledger.cli import build_parser, command_module, main
from vllm_ledger.commands import exporter
from vllm_ledger.commands._renamed import Renamed
from vllm_ledger.commands._values import Duration, duration, listen
from vllm_ledger.errors import BadArgument, ConfigError
from vllm_ledger.plan.prices import load_config
from vllm_ledger.read.periods import PERIOD_NAMES
from vllm_ledger.units import duration_seconds, format_duration

NOTE = "vllm-ledger: note: {old} is deprecated; use {new} (it still works until the next release)\n"


def _parsers() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _parsed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> tuple[argparse.Namespace, str]:
    """``main(argv)`` with the command's ``run`` replaced: the namespace it got, and stderr."""
    got: list[argparse.Namespace] = []
    mod = command_module(argv[0])

    def run(args: argparse.Namespace) -> int:
        got.append(args)
        return 0

    monkeypatch.setattr(mod, "run", run)
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert out == ""
    return got[0], err


@pytest.fixture
def places(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "notify.json").write_text('{"usage": {}}')
    (tmp_path / "root").mkdir()
    return {"config": str(tmp_path / "notify.json"), "dir": str(tmp_path / "out")}


# (old argv, new argv, what to compare): each old spelling, and the note it prints.
RENAMED = [
    (
        ["poll", "--config", "{config}", "--interval-s", "30"],
        ["poll", "--config", "{config}", "--interval", "30s"],
        "interval",
        ("--interval-s", "--interval 30s"),
    ),
    (
        ["poll", "--config", "{config}", "--deadline-s", "20"],
        ["poll", "--config", "{config}", "--deadline", "20s"],
        "deadline",
        ("--deadline-s", "--deadline 20s"),
    ),
    (
        ["poll", "--config", "{config}", "--connect-timeout-s=90"],
        ["poll", "--config", "{config}", "--connect-timeout=1m30s"],
        "connect_timeout",
        ("--connect-timeout-s", "--connect-timeout 1m30s"),
    ),
    (
        ["advise", "--metrics-url", "http://h:1/metrics", "--sample-seconds", "600"],
        ["advise", "--metrics-url", "http://h:1/metrics", "--sample-for", "10m"],
        "sample_for",
        ("--sample-seconds", "--sample-for 10m"),
    ),
    (
        ["ramp", "--url", "http://h:1", "--model", "m", "--out", "{dir}"],
        ["ramp", "--url", "http://h:1", "--model", "m", "--output", "{dir}"],
        "output",
        ("--out", "--output {dir}"),
    ),
    (
        ["exporter", "--host", "0.0.0.0"],
        ["exporter", "--listen", "0.0.0.0:9464"],
        exporter.address_of,
        ("--host", "--listen 0.0.0.0:9464"),
    ),
    (
        ["exporter", "--port", "9465"],
        ["exporter", "--listen", "127.0.0.1:9465"],
        exporter.address_of,
        ("--port", "--listen 127.0.0.1:9465"),
    ),
]


def _fill(argv: list[str], places: dict[str, str]) -> list[str]:
    return [a.format(**places) for a in argv]


def _value(args: argparse.Namespace, what: Any) -> Any:
    return what(args) if callable(what) else getattr(args, what)


@pytest.mark.parametrize(("old", "new", "what", "note"), RENAMED, ids=[r[3][0] for r in RENAMED])
def test_an_old_spelling_parses_as_the_new_one_and_says_so_once(
    old: list[str],
    new: list[str],
    what: Any,
    note: tuple[str, str],
    places: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args_new, err_new = _parsed(monkeypatch, capsys, _fill(new, places))
    assert err_new == ""  # the new spelling: no note
    again = old[-1:] if "=" in old[-1] else old[-2:]  # the old flag given twice: one note
    for argv in (_fill(old, places), _fill(old + again, places)):
        args_old, err_old = _parsed(monkeypatch, capsys, argv)
        assert _value(args_old, what) == _value(args_new, what)
        assert err_old == NOTE.format(old=note[0], new=note[1].format(**places))


def test_old_host_and_port_together_make_one_address(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    args, err = _parsed(monkeypatch, capsys, ["exporter", "--host", "0.0.0.0", "--port", "9"])
    assert exporter.address_of(args) == ("0.0.0.0", 9)
    assert err == (
        NOTE.format(old="--host", new="--listen 0.0.0.0:9464")
        + NOTE.format(old="--port", new="--listen 127.0.0.1:9")
    )
    args, _err = _parsed(monkeypatch, capsys, ["exporter", "--listen", "[::1]:0"])
    assert exporter.address_of(args) == ("::1", 0)
    args, _err = _parsed(monkeypatch, capsys, ["exporter"])
    assert exporter.address_of(args) == ("127.0.0.1", 9464)


def test_listen_with_old_host_or_port_is_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Refused when it runs: the note for the old spelling, then the one error line."""
    code = main(["exporter", "--root", str(tmp_path), "--listen", "127.0.0.1:0", "--port", "1"])
    assert code == 2
    assert capsys.readouterr().err == (
        NOTE.format(old="--port", new="--listen 127.0.0.1:1")
        + "vllm-ledger: error: --listen and --host/--port: give --listen HOST:PORT alone\n"
    )


def test_old_spellings_are_hidden_from_help_and_listed_in_the_docs() -> None:
    cli_md = (Path(__file__).resolve().parent.parent / "docs" / "cli.md").read_text()
    vocabulary = cli_md[: cli_md.index("```")]  # the section before the generated help
    for name, p in _parsers().items():
        help_text = p.format_help()
        for action in p._actions:
            if isinstance(action, Renamed):
                old = action.option_strings[0]
                assert f"{old} " not in help_text and f"{old}\n" not in help_text, (name, old)
                assert f"`{old}" in vocabulary, (name, old)


# ---- durations -------------------------------------------------------------------------------

SPELLINGS = {"30s": 30, "10m": 600, "7d": 604800, "30": 30, "1h30m": 5400, "1.5h": 5400}


def _duration_flags() -> list[tuple[str, str, Duration]]:
    found = []
    for name, p in _parsers().items():
        for action in p._actions:
            if isinstance(action.type, Duration):
                found.append((name, action.option_strings[0], action.type))
    return found


DURATION_FLAGS = _duration_flags()


# Flags exempt from the vocabulary check while they move to it (none now: doctor's waits take
# the duration type).
IN_FLIGHT: set[tuple[str, str]] = set()


def test_the_duration_flags_are_found() -> None:
    """Every flag that takes a span of time is one of these (and says DURATION in help)."""
    names = {(c, f) for c, f, _t in DURATION_FLAGS}
    assert names >= {
        ("poll", "--interval"),
        ("poll", "--interval-s"),
        ("poll", "--deadline"),
        ("poll", "--connect-timeout"),
        ("advise", "--sample-for"),
        ("advise", "--interval"),
        ("advise", "--range"),
        ("fleet", "--stale-after"),
        ("fleet", "--lookback"),
        ("ramp", "--duration"),
        ("verify", "--wait"),
        ("observability", "--ttft-p99-seconds"),
    }
    for name, p in _parsers().items():
        for action in p._actions:
            flag = action.option_strings[0] if action.option_strings else ""
            if (name, flag) in IN_FLIGHT:
                continue
            assert action.metavar not in ("S", "SECONDS", "SPAN"), (name, action.option_strings)
            if flag.endswith("-s") and not isinstance(action, Renamed):
                pytest.fail(f"{name} {flag}: a unit in a flag's name; take a duration")


@pytest.mark.parametrize(("command", "flag", "kind"), DURATION_FLAGS, ids=lambda x: str(x))
def test_every_duration_flag_takes_30s_10m_7d_and_plain_seconds(
    command: str, flag: str, kind: Duration
) -> None:
    taken = 0
    for text, seconds in SPELLINGS.items():
        fits = (kind.lo < seconds if kind.lo_open else kind.lo <= seconds) and seconds <= kind.hi
        if fits:
            assert kind(text) == seconds, (text, seconds)
            taken += 1
        else:
            with pytest.raises(BadArgument, match=f"^{flag} '{text}' is out of range: give "):
                kind(text)
    assert taken >= 2, "a duration flag should take at least two of the spellings"
    with pytest.raises(BadArgument, match=r"is not a duration: give .*e\.g\. "):
        kind("5 minutes")


def test_prometheus_durations_take_the_same_spellings(tmp_path: Path) -> None:
    """observability writes its durations into Prometheus's files: as given when Prometheus
    reads them, else in Prometheus's units."""
    p = _parsers()["observability"]
    for given, written in {"10m": "10m", "600": "10m", "90": "1m30s", "1.5s": "1500ms"}.items():
        args = p.parse_args(["--output", str(tmp_path / "o"), "--kv-cache-for", given])
        assert args.kv_cache_for == written
    args = p.parse_args(["--output", str(tmp_path / "o"), "--scrape-interval", "1m30s"])
    assert args.scrape_interval == "1m30s"


def test_duration_grammar() -> None:
    assert duration_seconds("1w2d3h4m5s") == 604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5
    assert duration_seconds("250ms") == 0.25
    assert [duration_seconds(t) for t in ("1m1h", "1h1h", "1y", "5", "1 m", "1e3s")] == [None] * 6
    assert [format_duration(x) for x in (0, 0.5, 1.5, 90, 3600, 86400, 90061)] == [
        "0s",
        "500ms",
        "1.5s",
        "1m30s",
        "1h",
        "1d",
        "1d1h1m1s",
    ]
    whole = duration("--x", 1, 600, "5s", integer=True)
    assert whole("2m") == 120 and isinstance(whole("2m"), int)
    with pytest.raises(BadArgument, match="is not a whole number of seconds"):
        whole("1500ms")
    with pytest.raises(BadArgument, match=r"looks like milliseconds: give seconds, e\.g\. --x 5$"):
        whole("5000")


# ---- windows ---------------------------------------------------------------------------------


def test_window_names_are_the_same_for_report_cost_and_timeline() -> None:
    parsers = _parsers()
    choices = {}
    for name in ("report", "cost", "timeline"):
        action = next(a for a in parsers[name]._actions if "--window" in a.option_strings)
        if action.choices is not None:
            choices[name] = tuple(action.choices)
        else:  # timeline: the names, and free durations
            convert = action.type
            assert callable(convert), name
            assert all(convert(n) == n for n in PERIOD_NAMES)
            assert convert("90m") == "90m" and convert("1h30m") == "90m"
            with pytest.raises(BadArgument):
                convert("last-week")
            choices[name] = PERIOD_NAMES
        assert action.help is not None, name
        assert ", ".join(PERIOD_NAMES) in action.help.replace("\n", " "), name
    assert choices == dict.fromkeys(("report", "cost", "timeline"), PERIOD_NAMES)


AT = 1_796_126_400  # 2026-12-01T12:00:00Z, 20:00 in Shanghai: yesterday is in last month


def _ledger(root: Path) -> None:
    """Tokens yesterday (30 Nov in Shanghai), earlier last month and today."""
    write_ledger(
        root,
        "r1",
        start_ts=AT - 3 * 86400,
        end_ts=AT - 60,
        events=[
            ev(AT - 86400 - 3600, prompt=100, gen=10),  # yesterday, 30 Nov, 19:00
            ev(AT - 2 * 86400, prompt=1000, gen=100),  # 29 Nov, 20:00
            ev(AT - 600, prompt=7, gen=1),  # today
        ],
        heartbeat_every_s=60.0,
    )


@pytest.mark.parametrize("window", ["yesterday", "last-month", "this-month", "30d", "today"])
def test_every_window_name_gives_the_same_sums_in_report_timeline_and_cost(
    tmp_path: Path,
    window: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _ledger(tmp_path)
    common = ["--root", str(tmp_path), "--at", str(AT), "--tz", "Asia/Shanghai"]
    assert main(["report", *common, "--window", window, "--json"]) == 0
    rep = json.loads(capsys.readouterr().out)["windows"][window]
    assert main(["timeline", *common, "--window", window, "--by", "day", "--json"]) == 0
    tl = json.loads(capsys.readouterr().out)
    edges = (rep["start"], rep["cutoff"])
    assert (tl["window"]["start"], tl["window"]["cutoff"]) == edges
    sums = (rep["input"], rep["output"])
    # A day no second of which is vouched for is null (unknown), never 0: the known days add up.
    known = [x for x in tl["steps"] if x["figures"] != "unknown"]
    assert all(x["input"] is None for x in tl["steps"] if x not in known)
    assert (sum(x["input"] for x in known), sum(x["output"] for x in known)) == sums
    prices = ("--electricity-price=1", "--hardware-price=1", "--lifetime-years=1")
    cost = [*common, "--window", window, "--power-watts=100", *prices, "--ops-per-hour=0"]
    assert main(["cost", *cost, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["window"]["name"], doc["window"]["start"], doc["window"]["cutoff"]) == (
        window,
        *edges,
    )
    assert (doc["tokens"]["input"], doc["tokens"]["output"]) == sums
    expected = {
        "yesterday": (100, 10),
        "last-month": (1100, 110),
        "this-month": (7, 1),
        "30d": (1107, 111),
        "today": (7, 1),
    }[window]
    assert (rep["input"], rep["output"]) == expected


# ---- listen addresses, folders, configs ------------------------------------------------------


def test_listen_takes_host_port() -> None:
    parse = listen()
    assert parse("0.0.0.0:9464") == ("0.0.0.0", 9464)
    assert parse("gpu1.lan:0") == ("gpu1.lan", 0)
    assert parse("[fe80::1%eth0]:80") == ("fe80::1%eth0", 80)
    for bad in (":9464", "9464", "gpu1", "::1:80", "h:65536", "h:-1", "h:1.5", "[zz]:1", "a b:1"):
        with pytest.raises(BadArgument, match=r"^--listen '.*'[ :]"):
            parse(bad)


@pytest.mark.parametrize("command", ["bundle", "observability"])
def test_a_folder_is_output_dir_or_the_old_positional(
    command: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vllm_ledger.commands._files import output_folder

    folder = str(tmp_path / "out")
    a, err_a = _parsed(monkeypatch, capsys, [command, "--output", folder])
    b, err_b = _parsed(monkeypatch, capsys, [command, folder])
    assert output_folder(a) == output_folder(b) == Path(folder)
    assert err_a == err_b == ""  # the positional folder is not deprecated: both documented


PRICES = {"electricity_price": 1.5, "hardware_price": 20000, "lifetime_years": 3}
PRICE_FILES = {
    "prices.json": json.dumps(PRICES),
    "prices.toml": "electricity_price = 1.5\nhardware_price = 20000\nlifetime_years = 3\n",
    "prices.yaml": "electricity_price: 1.5\nhardware_price: 20000\nlifetime_years: 3\n",
}


def test_a_price_file_is_json_or_toml_and_yaml_is_still_read(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    read = {}
    for name, text in PRICE_FILES.items():
        (tmp_path / name).write_text(text)
        read[name] = load_config(tmp_path / name)
    assert read["prices.json"] == read["prices.toml"] == read["prices.yaml"]
    assert read["prices.toml"] == {k: float(v) for k, v in PRICES.items()}
    (tmp_path / "prices.conf").write_text("x")
    with pytest.raises(ConfigError, match=r"name the file \.json or \.toml"):
        load_config(tmp_path / "prices.conf")


def test_a_yaml_price_file_says_it_is_deprecated_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name, text in PRICE_FILES.items():
        (tmp_path / name).write_text(text)
    base = ["cost", "--root", str(tmp_path)]
    _args, err = _parsed(monkeypatch, capsys, [*base, "--config", str(tmp_path / "prices.toml")])
    assert err == ""
    yaml_file = str(tmp_path / "prices.yaml")
    _args, err = _parsed(monkeypatch, capsys, [*base, "--config", yaml_file, "--config", yaml_file])
    assert err == NOTE.format(
        old="a YAML --config", new="the same keys in TOML or JSON, e.g. --config prices.toml"
    )


# ---- steps -----------------------------------------------------------------------------------


@pytest.mark.parametrize("grain", ["hour", "day", "month"])
def test_a_calendar_step_is_by_everywhere_and_the_old_step_says_so(
    tmp_path: Path, grain: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--by hour|day|month`` in report, export and timeline; timeline's and export's ``--step
    day`` give what ``--by day`` gives, with one note, and the help shows ``--step`` only as a
    fixed length."""
    _ledger(tmp_path)
    common = ["--root", str(tmp_path), "--at", str(AT), "--tz", "Asia/Shanghai"]
    window = ["--window", "yesterday"]
    assert main(["timeline", *common, *window, "--by", grain, "--json"]) == 0
    by = capsys.readouterr()
    assert main(["timeline", *common, *window, "--step", grain, "--json"]) == 0
    step = capsys.readouterr()
    assert by.err == "" and step.out == by.out
    assert step.err == NOTE.format(old=f"--step {grain}", new=f"--by {grain}")
    period = ["--root", str(tmp_path), "--tz", "Asia/Shanghai", "--since", "2026-11-30"]
    period += ["--until", "2026-12-01"]  # export reads up to now: a closed period
    assert main(["export", *period, "--by", f"{grain},model,instance"]) == 0
    export_by = capsys.readouterr()
    assert main(["export", *period, "--step", grain]) == 0
    export_step = capsys.readouterr()
    assert export_step.out == export_by.out and export_step.err.startswith("vllm-ledger: note:")
    assert main(["report", *common, "--since", "yesterday", "--by", grain, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["calendar"] == grain
    help_text = _parsers()["timeline"].format_help()
    assert "--step DURATION" in help_text and "--by KEY" in help_text
    assert "the same as --by" not in help_text  # the old spelling is not offered
