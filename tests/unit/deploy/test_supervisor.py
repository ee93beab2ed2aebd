"""The supervisor section, read back the way supervisord reads it: its ini reader (a ``;`` or
``#`` after whitespace starts a comment), ``%`` formatting, then ``shlex.split`` for the command
and a non-POSIX ``shlex`` for the environment (``supervisor.datatypes.dict_of_key_value_pairs``,
restated here). A real supervisord runs the section in ``tests/test_supervisor_real.py``."""

from __future__ import annotations

import configparser
import dataclasses
import shlex
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.deploy.host import Host, load_host, parse_host
from vllm_ledger.deploy.serve import serve_args
from vllm_ledger.deploy.supervisor import program_section, stop_wait_s, sv_env_value
from vllm_ledger.errors import ConfigError

DATA = REPO / "tests" / "data" / "render"


def host(name: str, **changes: Any) -> Host:
    return dataclasses.replace(load_host(DATA / f"{name}.json"), **changes)


def read_section(text: str) -> tuple[str, dict[str, str]]:
    parser = configparser.RawConfigParser(inline_comment_prefixes=(";", "#"), strict=False)
    parser.read_string(text)
    (section,) = parser.sections()
    return section, {k: v % {} for k, v in parser.items(section)}


def env_pairs(text: str) -> dict[str, str]:
    lexer = shlex.shlex(text)
    lexer.wordchars += "/.+-():"
    tokens = list(lexer)
    out = {}
    for i in range(0, len(tokens), 4):
        key, eq, value = tokens[i : i + 3]
        assert eq == "="
        out[key] = value.strip("'\"")
    return out


HOSTILE: dict[str, Any] = {
    "model": "/m/a b;c #d %e $HOME 'q' \"w\" \\x",
    "mode": "bare",
    "gpus": [0, 2],
    "extra_args": [";", "#x", "--x=$(id)", "100%"],
    "extra_env": {"A": "x,y %z", "B": "it's", "C": 'say "hi" now', "PYTHONPATH": "/opt/py"},
    "artifacts_dir": "/srv/art",
    "user": "vllm",
}


def test_hostile_values_read_back_exactly() -> None:
    h = parse_host(HOSTILE)
    section, values = read_section(program_section(h, usage=True, tz="Europe/Berlin"))
    assert section == "program:vllm-8000"
    assert shlex.split(values["command"]) == [
        h.vllm_executable,
        *serve_args(h, mode="bare", usage=True),
    ]
    assert env_pairs(values["environment"]) == {
        "CUDA_VISIBLE_DEVICES": "0,2",
        "A": "x,y %z",
        "B": "it's",
        "C": 'say "hi" now',
        "PYTHONPATH": "/srv/art/ledger-plugin:/opt/py",
        "VLLM_LEDGER_DIR": "/srv/art/usage",
        "VLLM_LEDGER_WRITERS": "1",
        "VLLM_LEDGER_PORT": "8000",
        "VLLM_LEDGER_TZ": "Europe/Berlin",
    }
    assert values["user"] == "vllm" and values["directory"] == "/srv/art"


def test_the_example_host_section() -> None:
    _, values = read_section(program_section(host("gpu-node"), usage=True))
    assert {k: values[k] for k in values if k not in ("command", "environment")} == {
        "directory": "/srv/artifacts",
        "user": "vllm",
        "autostart": "true",
        "autorestart": "true",
        "startsecs": "10",
        "startretries": "1000000",
        "stopsignal": "TERM",
        "stopwaitsecs": "15",
        "stopasgroup": "false",
        "killasgroup": "true",
        "stdout_logfile": "/var/log/supervisor/vllm-primary.stdout.log",
        "stdout_logfile_maxbytes": "100MB",
        "stdout_logfile_backups": "10",
        "stderr_logfile": "/var/log/supervisor/vllm-primary.stderr.log",
        "stderr_logfile_maxbytes": "100MB",
        "stderr_logfile_backups": "10",
    }
    argv = shlex.split(values["command"])
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "/srv/secrets/vllm-api.key"
    assert "sk-" not in values["command"] and "--api-key" not in values["command"]


def test_vllm_runs_as_the_dedicated_account_unless_the_host_file_names_one() -> None:
    """As systemd mode: no user in the host file is the account ``vllm`` (its HOME and USER set,
    supervisord's user= switches the account alone, and the header says how to make it), never
    supervisord's own (root)."""
    text = program_section(host("gpu-node"), usage=True)
    _, values = read_section(text)
    assert values["user"] == "vllm"
    env = env_pairs(values["environment"])
    assert env["HOME"] == "/var/lib/vllm" and env["USER"] == "vllm"
    assert "useradd --system --create-home --home-dir /var/lib/vllm vllm" in text
    assert "chown vllm /srv/artifacts/usage" in text
    text = program_section(host("gpu-node", user="svc"), usage=True)
    _, values = read_section(text)
    assert values["user"] == "svc" and "HOME" not in env_pairs(values["environment"])
    assert "useradd" not in text and "chown svc /srv/artifacts/usage" in text


def test_stop_wait_is_the_shutdown_timeout_plus_the_drain() -> None:
    assert stop_wait_s(host("gpu-node"), True) == 15  # 10 + 5
    assert stop_wait_s(host("cpu-bare"), False) == 20  # 15 + 5
    assert stop_wait_s(host("gpu-node"), False) == 10  # no timeout: supervisord's default


def test_key_variable_comes_from_supervisords_environment() -> None:
    h = host("cpu-bare")
    _, values = read_section(program_section(h))
    argv = shlex.split(values["command"])
    assert argv[:2] == ["/bin/sh", "-c"] and argv[3] == "sh"
    assert '"${TINY_API_KEY:?the API key variable TINY_API_KEY is not set' in argv[2]
    assert argv[4:] == [h.vllm_executable, *serve_args(h, mode="bare", usage=False)]


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("a\nb", "a line break"),
        ('"a', "a quote character at its start or end"),
        ("a'", "a quote character at its start or end"),
        ("a'b\"c", "both quote characters"),
        ("a ;b", "a ';' or '#' after a space"),
    ],
)
def test_environment_values_supervisord_cannot_read_back_are_refused(value: str, why: str) -> None:
    with pytest.raises(ConfigError) as exc:
        sv_env_value(value, "extra_env.X")
    assert str(exc.value) == (
        f"extra_env.X: {value!a} holds {why}, which a supervisor environment value cannot"
    )


def test_cli_writes_the_section(tmp_path: Path) -> None:
    out = tmp_path / "vllm.conf"
    rc, _, err = run_cli(
        "render",
        "--host",
        str(DATA / "gpu-node.json"),
        "--output",
        str(out),
        "--mode",
        "supervisor",
        "--usage",
    )
    assert rc == 0
    assert out.read_text() == program_section(host("gpu-node"), usage=True)
    assert out.stat().st_mode & 0o777 == 0o644
    assert err == (
        f"wrote {out} (supervisor mode, ledger on); review it, then install it: cp {out} "
        "/etc/supervisor/conf.d/vllm-primary.conf && supervisorctl reread && "
        "supervisorctl update\n"
    )


def test_cli_refuses_a_bad_environment_value(tmp_path: Path) -> None:
    hf = tmp_path / "host.json"
    hf.write_text('{"model": "m", "extra_env": {"X": "a ;b"}}')
    rc, _, err = run_cli("render", "--host", str(hf), "--output", "-", "--mode", "supervisor")
    assert (rc, err) == (
        2,
        f"vllm-ledger: error: host file {hf}: extra_env.X: 'a ;b' holds a ';' or '#' after a "
        "space, which a supervisor environment value cannot\n",
    )
