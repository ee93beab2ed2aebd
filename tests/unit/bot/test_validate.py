"""The usage config is validated before anything runs; injections are refused, nothing runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.inproc import run_cli
from vllm_ledger.bot.ssh_command import remote_command, ssh_argv
from vllm_ledger.bot.validate import Target, load_usage, validate_usage
from vllm_ledger.commands.ssh_key_line import key_line
from vllm_ledger.errors import BadArgument, ConfigError

GOOD = {
    "target": "example-primary",
    "code_dir": "/srv/LLMDeploy",
    "data_dir": "/srv/artifacts/usage",
}


def _entry(**kw: object) -> dict[str, object]:
    return {**GOOD, **kw}


def test_the_documented_example_is_valid() -> None:
    usage = {
        "19001": GOOD,
        "19002": _entry(target="example-backup"),
    }
    targets, refusals = validate_usage(usage)
    assert refusals == []
    assert targets == [
        Target(19001, "example-primary", "/srv/LLMDeploy", "/srv/artifacts/usage"),
        Target(19002, "example-backup", "/srv/LLMDeploy", "/srv/artifacts/usage"),
    ]


def test_optional_fields() -> None:
    targets, refusals = validate_usage(
        {"8000": _entry(target="bot@10.0.0.12", host="10.0.0.12", python="/usr/bin/python3.11")}
    )
    assert refusals == []
    assert targets[0].host == "10.0.0.12" and targets[0].python == "/usr/bin/python3.11"


@pytest.mark.parametrize(
    ("key", "entry", "field", "text"),
    [
        ("19001", _entry(target="-oProxyCommand=touch /tmp/x"), "target", "not an SSH alias"),
        ("19001", _entry(target="h;id"), "target", "not an SSH alias"),
        ("19001", _entry(target="$(id)"), "target", "not an SSH alias"),
        ("19001", _entry(target="`id`"), "target", "not an SSH alias"),
        ("19001", _entry(target="a b"), "target", "not an SSH alias"),
        ("19001", _entry(target="host\n"), "target", "not an SSH alias"),
        ("19001", _entry(target="-x@host"), "target", "not an SSH alias"),
        ("19001", _entry(target="h" * 300), "target", "longer than 253"),
        ("19001", _entry(target=""), "target", "missing"),
        ("19001", _entry(target=7), "target", "missing"),
        ("19001", _entry(code_dir="/srv/a b"), "code_dir", "not an absolute path"),
        ("19001", _entry(code_dir="/srv/`id`"), "code_dir", "not an absolute path"),
        ("19001", _entry(code_dir="/srv/$(id)"), "code_dir", "not an absolute path"),
        ("19001", _entry(code_dir="/srv/a;b"), "code_dir", "not an absolute path"),
        ("19001", _entry(code_dir="srv/LLMDeploy"), "code_dir", "not an absolute path"),
        ("19001", _entry(code_dir="/srv/../etc"), "code_dir", "not normalised"),
        ("19001", _entry(code_dir="/srv//x/"), "code_dir", "not normalised"),
        ("19001", _entry(data_dir='/srv/"x'), "data_dir", "not an absolute path"),
        ("19001", _entry(data_dir="/srv/\u00e9"), "data_dir", "not an absolute path"),
        ("19001", _entry(python="python3; id"), "python", "not python3"),
        ("19001", _entry(host="10.0.0.1;id"), "host", "not an IP address"),
        ("19001", _entry(host="fe80::1%;id"), "host", "not an IP address"),
        ("19001", _entry(extra="x"), "extra", "unknown field"),
        ("19001", _entry(budgets="/etc/b.toml; id"), "budgets", "not an absolute path"),
        ("19001", _entry(budgets="budgets.toml"), "budgets", "not an absolute path"),
        ("19001", _entry(budgets=""), "budgets", "missing"),
        ("0", GOOD, "", "not a port 1..65535"),
        ("65536", GOOD, "", "not a port 1..65535"),
        ("-1", GOOD, "", "not a port 1..65535"),
        ("019001", GOOD, "", "not a port 1..65535"),
        ("h;id", GOOD, "", "not a port 1..65535"),
        ("19001", "not an object", "", "not an object"),
    ],
)
def test_bad_entries_are_refused_and_the_rest_still_run(
    key: str, entry: object, field: str, text: str
) -> None:
    targets, refusals = validate_usage({key: entry, "19002": GOOD})
    assert [t.port for t in targets] == [19002]
    assert len(refusals) == 1
    r = refusals[0]
    assert (r.field, text in r.message) == (field, True), str(r)
    line = str(r)
    assert "\n" not in line and line.startswith("usage[") and (not field or f".{field}:" in line)


@pytest.mark.parametrize(
    ("entry", "line"),
    [
        (_entry(target=""), "usage[19001].target: missing: give the SSH alias or host name"),
        (_entry(data_dir=None), "usage[19001].data_dir: missing: give an absolute path"),
        (
            _entry(code_dir="/srv/../etc"),
            "usage[19001].code_dir: '/srv/../etc' is not normalised: write it as '/etc'",
        ),
    ],
)
def test_a_refusal_says_what_to_do(entry: object, line: str) -> None:
    _targets, refusals = validate_usage({"19001": entry})
    assert [str(r) for r in refusals] == [line]


def test_remote_command_and_argv_are_fixed() -> None:
    t = Target(19001, "example-primary", "/srv/LLMDeploy", "/srv/artifacts/usage")
    assert remote_command(t) == (
        "cd /srv/LLMDeploy && PYTHONPATH=/srv/LLMDeploy exec python3 "
        "-m vllm_ledger status --root /srv/artifacts/usage"
    )
    argv = ssh_argv(t, ssh_options=["-F", "/etc/bot/ssh_config", "-o", "BatchMode=no"])
    assert argv[0] == "ssh"
    assert argv[1:5] == ["-o", "BatchMode=yes", "-o", "ConnectTimeout=5"]
    # ours come before the caller's: for ssh the first value of an option wins
    assert argv.index("BatchMode=yes") < argv.index("BatchMode=no")
    assert argv[-3:] == ["--", "example-primary", remote_command(t)]


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(BadArgument) as bad:
        load_usage(tmp_path / "missing.json")
    assert str(bad.value) == f"cannot read {tmp_path / 'missing.json'}: No such file or directory"
    assert (bad.value.argument, bad.value.value) == ("path", tmp_path / "missing.json")
    (tmp_path / "big.json").write_bytes(b" " * (1024 * 1024 + 1))
    with pytest.raises(ConfigError) as exc:
        load_usage(tmp_path / "big.json")
    assert str(exc.value) == (
        f"{tmp_path / 'big.json'} is larger than 1 MiB: is it the notification config?"
    )
    (tmp_path / "a.json").write_text("{")
    with pytest.raises(ConfigError, match="is not JSON"):
        load_usage(tmp_path / "a.json")
    (tmp_path / "b.json").write_text('{"nodes": {}}')
    with pytest.raises(ConfigError) as exc:
        load_usage(tmp_path / "b.json")
    assert (str(exc.value), exc.value.key) == (
        f'{tmp_path / "b.json"} has no "usage" object: add '
        '{"usage": {"PORT": {"target": ..., "code_dir": ..., "data_dir": ...}}}',
        "usage",
    )
    (tmp_path / "c.json").write_text('{"usage": []}')
    with pytest.raises(ConfigError, match="must map node ports"):
        load_usage(tmp_path / "c.json")


def test_poll_cli_refuses_injections_and_creates_nothing(tmp_path: Path) -> None:
    marker = tmp_path / "x"
    usage = {
        "19001": _entry(target=f"-oProxyCommand=touch {marker}"),
        "19002": _entry(target=f"h;touch {marker}"),
        "19003": _entry(target=f"$(touch {marker})"),
        "19004": _entry(code_dir=f"/srv/a b;touch {marker}"),
        "19005": _entry(data_dir=f"/srv/`touch {marker}`"),
        "0": GOOD,
    }
    cfg = tmp_path / "notify.json"
    cfg.write_text(json.dumps({"usage": usage}))
    rc, out, err = run_cli("poll", "--config", str(cfg), "--once")
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert [ln.split(":")[1].strip() for ln in lines[:-1]] == ["refused"] * 6
    assert "usage[19001].target:" in err and "usage[19004].code_dir:" in err
    assert "usage[19005].data_dir:" in err and "usage[0]: key '0' is not a port" in err
    assert lines[-1] == (
        f"vllm-ledger: error: no usable usage entry in {cfg}: fix the entries above"
    )
    assert not marker.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notify.json"]


KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnPOYPU6RUqDm43PC0TF4ZzHKrHLi3xHA0SmNX8mK0r bot@notify"


def test_ssh_key_line_pins_the_status_command(tmp_path: Path) -> None:
    pub = tmp_path / "bot.pub"
    pub.write_text(KEY + "\n")
    rc, out, err = run_cli(
        "ssh-key-line",
        "--code-dir",
        "/srv/LLMDeploy",
        "--data-dir",
        "/srv/artifacts/usage",
        str(pub),
    )
    assert rc == 0, err
    assert out == (
        'restrict,command="cd /srv/LLMDeploy && PYTHONPATH=/srv/LLMDeploy exec python3 '
        '-m vllm_ledger status --root /srv/artifacts/usage" ' + KEY + "\n"
    )
    line = key_line(KEY, "/a", "/b", from_pattern="10.0.0.5")
    assert line.startswith('restrict,from="10.0.0.5",command="cd /a && ')


@pytest.mark.parametrize(
    ("key", "code_dir", "message"),
    [
        (KEY, "/srv/a b", "--code-dir: '/srv/a b' is not an absolute path"),
        (KEY, '/srv/"x', "--code-dir:"),
        ("ssh-ed25519", "/srv", "not one OpenSSH public key line"),
        ('command="id" ssh-ed25519 AAAA', "/srv", "not one OpenSSH public key line"),
        ("ssh-ed25519 AAAA$(id)AAAAAAAAAAAAAA", "/srv", "not one OpenSSH public key line"),
    ],
)
def test_ssh_key_line_refuses_bad_input(key: str, code_dir: str, message: str) -> None:
    with pytest.raises(BadArgument, match=message.replace("(", r"\(").replace("$", r"\$")):
        key_line(key, code_dir, "/srv/data")


def test_ssh_key_line_drops_an_odd_comment() -> None:
    line = key_line(KEY.rsplit(" ", 1)[0] + ' x"y', "/a", "/b")
    assert line.endswith(KEY.rsplit(" ", 1)[0])


def test_a_budgets_file_is_named_in_the_command_and_an_ask_ends_it() -> None:
    targets, refusals = validate_usage({"19001": _entry(budgets="/etc/vllm-ledger/b.toml")})
    assert refusals == [] and targets[0].budgets == "/etc/vllm-ledger/b.toml"
    assert remote_command(targets[0]) == (
        "cd /srv/LLMDeploy && PYTHONPATH=/srv/LLMDeploy exec python3 -m vllm_ledger status "
        "--root /srv/artifacts/usage --budgets /etc/vllm-ledger/b.toml"
    )
    assert remote_command(targets[0], "usage:key:today").endswith(
        " --budgets /etc/vllm-ledger/b.toml --ask usage:key:today"
    )
    assert ssh_argv(targets[0], ask="digest")[-1].endswith(" --ask digest")
