"""The usage entry's transports beside ssh: ``local`` and ``http`` (``bot/transport.py``).

Validation of each shape (and each refusal, one line naming the field), the local argv and
environment, the http URL of an ask and the states of its answers, the token file's checks,
and one real fetch each way: the status command run here over a real ledger (``local``), and
a real exporter's ``/status`` with its token, a wrong one and none (``http``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger.bot import transport
from vllm_ledger.bot.poll import Fetcher
from vllm_ledger.bot.validate import LOCAL_TARGET, Target, validate_usage
from vllm_ledger.observe.exporter import LedgerCollector, start
from vllm_ledger.observe.server import MetricsServer
from vllm_ledger.observe.status_route import StatusRoute

TOKEN = "t0ken-for-the-status-route"
LOCAL = {"transport": "local", "data_dir": "/srv/artifacts/usage"}
HTTP = {"transport": "http", "url": "http://vllm-0.vllm:9464/status", "token_file": "/etc/t"}


def test_a_local_and_an_http_entry_beside_an_ssh_one() -> None:
    ssh = {"target": "gpu1", "code_dir": "/srv/code", "data_dir": "/srv/u"}
    targets, refusals = validate_usage({"19001": LOCAL, "19002": HTTP, "19003": ssh})
    assert refusals == []
    assert targets == [
        Target(19001, LOCAL_TARGET, "", "/srv/artifacts/usage", "", transport="local"),
        Target(
            19002,
            HTTP["url"],
            "",
            "",
            transport="http",
            url=HTTP["url"],
            token_file="/etc/t",
        ),
        Target(19003, "gpu1", "/srv/code", "/srv/u"),
    ]


def test_a_local_entry_may_name_its_code_python_budgets_and_host() -> None:
    entry = {**LOCAL, "code_dir": "/srv/code", "python": "python3.11", "budgets": "/etc/b.toml"}
    (t,), refusals = validate_usage({"19001": {**entry, "host": "10.0.0.12"}})
    assert refusals == []
    assert (t.code_dir, t.python, t.budgets, t.host) == (
        "/srv/code",
        "python3.11",
        "/etc/b.toml",
        "10.0.0.12",
    )


@pytest.mark.parametrize(
    ("entry", "field", "text"),
    [
        ({**LOCAL, "transport": "telnet"}, "transport", "is not one of ssh, local, http"),
        ({**LOCAL, "target": "gpu1"}, "target", "unknown field of a local entry"),
        ({"transport": "local"}, "data_dir", "missing"),
        ({**LOCAL, "data_dir": "/srv/a b"}, "data_dir", "not an absolute path"),
        ({**LOCAL, "python": "python3; id"}, "python", "not python3"),
        ({**HTTP, "data_dir": "/srv/u"}, "data_dir", "unknown field of a http entry"),
        ({**HTTP, "url": "ftp://h/status"}, "url", "not an http:// or https:// URL"),
        ({**HTTP, "url": "http://u:p@h/status"}, "url", "(no user@)"),
        ({**HTTP, "url": "http:///status"}, "url", "not an http:// or https:// URL"),
        ({**HTTP, "url": "http://h/st atus"}, "url", "not an http:// or https:// URL"),
        ({**HTTP, "url": "http://h/\u00e9"}, "url", "not an http:// or https:// URL"),
        ({**HTTP, "url": "http://h/" + "a" * 3000}, "url", "longer than 2048"),
        ({k: v for k, v in HTTP.items() if k != "url"}, "url", "missing"),
        ({**HTTP, "token_file": "token"}, "token_file", "not an absolute path"),
        ({k: v for k, v in HTTP.items() if k != "token_file"}, "token_file", "missing"),
    ],
)
def test_a_bad_entry_is_refused_in_one_line_naming_its_field(
    entry: dict[str, object], field: str, text: str
) -> None:
    targets, refusals = validate_usage({"19001": entry, "19002": LOCAL})
    assert [t.port for t in targets] == [19002]  # the other entry still runs
    assert [(r.key, r.field) for r in refusals] == [("19001", field)]
    assert text in refusals[0].message
    assert "\n" not in str(refusals[0])


def test_the_local_argv_is_the_forced_commands_words() -> None:
    t = Target(1, LOCAL_TARGET, "", "/srv/u", "", budgets="/etc/b.toml", transport="local")
    assert transport.local_argv(t, "usage:key:7d") == [
        sys.executable, "-m", "vllm_ledger", "status", "--root", "/srv/u",
        "--budgets", "/etc/b.toml", "--ask", "usage:key:7d",
    ]  # fmt: skip
    assert transport.local_env(t) is None  # the notifier's own package
    coded = Target(1, LOCAL_TARGET, "/srv/code", "/srv/u", "python3", transport="local")
    assert transport.local_argv(coded)[:2] == ["python3", "-m"]
    env = transport.local_env(coded)
    assert env is not None and env["PYTHONPATH"] == "/srv/code"


def test_an_ask_is_a_query_word_and_each_answer_has_its_state() -> None:
    assert transport.status_url("http://h:1/status", None) == "http://h:1/status"
    assert transport.status_url("http://h:1/status", "usage:key:7d") == (
        "http://h:1/status?ask=usage%3Akey%3A7d"
    )
    assert transport.status_url("http://h:1/status?x=1", "digest") == (
        "http://h:1/status?x=1&ask=digest"
    )
    states = {s: transport.http_state(s) for s in (401, 403, 404, 500, 502, 503, 504)}
    assert states == {
        401: "unreachable", 403: "unreachable", 404: "remote_failed", 500: "remote_failed",
        502: "remote_failed", 503: "remote_failed", 504: "timeout",
    }  # fmt: skip


def test_a_token_file_is_one_line_of_printable_ascii(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.write_text(f"  {TOKEN}\n")
    assert transport.read_token(str(good)) == TOKEN
    for name, body in (("empty", ""), ("two", "a\nb\n"), ("blank", "a b"), ("big", "x" * 5000)):
        (tmp_path / name).write_text(body)
        with pytest.raises(OSError):
            transport.read_token(str(tmp_path / name))
    with pytest.raises(OSError):
        transport.read_token(str(tmp_path))  # a folder
    http = Target(19001, "u", "", "", transport="http", url="u", token_file=str(tmp_path / "no"))
    (line,) = transport.token_problems([http])
    assert line.startswith(f"usage[19001].token_file: {tmp_path / 'no'}: ")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    now = time.time()
    root = tmp_path / "ledger"
    write_ledger(
        root, "run-1", start_ts=now - 120, end_ts=now - 60, events=[ev(now - 90, prompt=80, gen=3)]
    )
    return root


def test_local_runs_the_status_command_here(root: Path) -> None:
    t = Target(19001, LOCAL_TARGET, "", str(root), "", transport="local")
    result = Fetcher(deadline_s=60)(t)
    assert result.state == "ok", result
    assert result.status is not None and result.status.window("total").input_tokens == 80
    missing = Target(19001, LOCAL_TARGET, "", str(root / "nope"), "", transport="local")
    assert Fetcher(deadline_s=60)(missing).state == "remote_failed"  # exit 2: no such root


@pytest.fixture
def exporter(root: Path) -> Iterator[MetricsServer]:
    collector = LedgerCollector([root], tz="UTC", clock=FakeClock(time.time()), say=print)
    argv = [*transport.status_argv(sys.executable, str(root)), "--no-health"]
    server = start(collector, host="127.0.0.1", port=0, status=StatusRoute(argv, TOKEN))
    yield server
    server.stop()


def test_http_reads_the_exporters_status_with_its_token_only(
    tmp_path: Path, exporter: MetricsServer
) -> None:
    url = f"http://127.0.0.1:{exporter.port}/status"
    (tmp_path / "token").write_text(TOKEN + "\n")
    (tmp_path / "wrong").write_text(TOKEN + "x\n")

    def fetch(token_file: str, at: str = url) -> str:
        t = Target(19001, at, "", "", transport="http", url=at, token_file=token_file)
        result = Fetcher(deadline_s=30)(t)
        if result.state == "ok":
            assert result.status is not None and result.status.window("total").input_tokens == 80
        return result.state

    assert fetch(str(tmp_path / "token")) == "ok"
    assert fetch(str(tmp_path / "wrong")) == "unreachable"  # 401, nothing run
    assert fetch(str(tmp_path / "absent")) == "remote_failed"  # our file: said at start
    assert fetch(str(tmp_path / "token"), url.replace("/status", "/metrics")) == "unparseable"
    asked = Fetcher(deadline_s=30, ask="usage:key:today")
    t = Target(19001, url, "", "", transport="http", url=url, token_file=str(tmp_path / "token"))
    got = asked(t)
    assert got.state == "ok" and got.status is not None and got.status.asked is not None
