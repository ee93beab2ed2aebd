"""`render` against hostile host files: every pattern matches the whole value (a trailing newline
is refused, never written), env names are checked where they are written, and no value can be
read as a flag where a positional word goes. Each refusal is one line, and nothing is written."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import run_cli
from vllm_ledger.deploy.host import Host, parse_host
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.errors import ConfigError

BASE: dict[str, Any] = {
    "model": "/models/m",
    "image": "vllm/vllm-openai:v0.32.0",
    "artifacts_dir": "/srv/artifacts",
}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        # a trailing newline: "$" in re.match/re.search would have let each of these through
        ({"extra_env": {"FOO\n": "1"}}, "extra_env.'FOO\\n': \"FOO\\n\" is not an environment"),
        ({"api_key": {"env": "MY_KEY\n"}}, 'api_key.env: "MY_KEY\\n" is not an environment'),
        ({"model\n": "m"}, "'model\\n': unknown key (did you mean model?)"),
        ({"container_name": "vllm\n"}, 'container_name: "vllm\\n" does not match'),
        ({"restart": "always\n"}, 'restart: "always\\n" does not match'),
        ({"shm_size": "16g\n"}, 'shm_size: "16g\\n" does not match'),
        ({"quantization": "awq\n"}, 'quantization: "awq\\n" does not match'),
        ({"host": "0.0.0.0\n"}, 'host: "0.0.0.0\\n" is not an address or host name'),
        ({"artifacts_dir": "/srv/a\n"}, 'artifacts_dir: "/srv/a\\n" must be an absolute path'),
        (
            {"volumes": [{"host": "/m\n", "container": "/m"}]},
            'volumes[0].host: "/m\\n" must be an absolute path',
        ),
        # env names that are not POSIX names
        ({"extra_env": {"1ABC": "1"}}, 'extra_env.1ABC: "1ABC" is not an environment variable'),
        ({"extra_env": {"A-B": "1"}}, 'extra_env.A-B: "A-B" is not an environment variable'),
        ({"extra_env": {"A=B": "1"}}, 'extra_env.A=B: "A=B" is not an environment variable'),
        ({"extra_env": {"": "1"}}, "extra_env.'': \"\" is not an environment variable"),
        ({"extra_env": {"A$(id)": "1"}}, 'extra_env.A$(id): "A$(id)" is not an environment'),
        ({"extra_env": {"\x1b[2J": "1"}}, "extra_env.'\\x1b[2J': contains the character U+001B"),
        ({"api_key": {"env": "my key"}}, 'api_key.env: "my key" is not an environment'),
        # a positional word that starts with "-" would be read as a flag
        ({"image": "-x"}, "image: \"-x\" must not start with '-'"),
        ({"image": "--privileged"}, "image: \"--privileged\" must not start with '-'"),
        ({"served_model_name": "-x"}, "served_model_name: \"-x\" must not start with '-'"),
        ({"ledger_python": "-c"}, "ledger_python: \"-c\" must not start with '-'"),
        ({"host": "-x"}, 'host: "-x" is not an address or host name'),
        ({"quantization": "-x"}, 'quantization: "-x" does not match'),
        # control characters and bidi marks: refused, and named without being printed
        ({"image": "\u202e-x"}, "image: contains the character U+202E"),
        ({"model": "/m\r/x"}, "model: contains the character U+000D"),
        ({"extra_args": ["--x", "\x1b]0;t\x07"]}, "extra_args[1]: contains the character U+001B"),
        ({"extra_env": {"A": "\u2066"}}, "extra_env.A: contains the character U+2066"),
    ],
)
def test_hostile_values_are_refused_with_one_line_and_nothing_written(
    changes: dict[str, Any], message: str, tmp_path: Path
) -> None:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({**BASE, **changes}))
    out = tmp_path / "run.sh"
    out.write_text("previous script\n")
    for flags in ([], ["--usage"], ["--mode", "bare", "--usage"]):
        rc, stdout, err = run_cli("render", "--host", str(hf), "--output", str(out), *flags)
        assert (rc, stdout) == (2, "")
        assert err.startswith(f"vllm-ledger: error: host file {hf}: {message}"), err
        assert err.count("\n") == 1 and err.endswith("\n")
        assert out.read_text() == "previous script\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["host.json", "run.sh"]


def test_an_unprintable_value_is_shown_escaped(tmp_path: Path) -> None:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({**BASE, "restart": "no\u00a0"}))  # a no-break space
    rc, out, err = run_cli("render", "--host", str(hf), "--output", "-")
    assert (rc, out) == (2, "")
    assert err == (
        f'vllm-ledger: error: host file {hf}: restart: "no\\xa0" does not match '
        "^(no|always|unless-stopped|on-failure(:[0-9]+)?)$\n"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("extra_env", (("FOO\n", "1"),), "extra_env.'FOO\\n': \"FOO\\n\" is not an environment"),
        ("extra_env", (("A;id", "1"),), 'extra_env.A;id: "A;id" is not an environment variable'),
        ("extra_env", (("A", "1"), ("A", "2")), "extra_env: a name given twice"),
        ("api_key_env", "K\n", 'api_key.env: "K\\n" is not an environment variable'),
        ("image", "-x", "image: \"-x\" must not start with '-'"),
        ("model", "--help", "model: \"--help\" must not start with '-'"),
        ("artifacts_dir", "/a\n", 'artifacts_dir: "/a\\n" must be an absolute path'),
    ],
)
def test_a_host_built_in_code_is_checked_before_anything_is_written(
    field: str, value: Any, message: str
) -> None:
    """Host is a public dataclass: render checks each value again, whoever built it."""
    host = dataclasses.replace(parse_host(BASE), **{field: value})
    for mode in ("docker", "bare"):
        with pytest.raises(ConfigError) as exc:
            render_script(host, mode=mode, usage=True)
        assert str(exc.value).startswith(message), str(exc.value)
        assert "\n" not in str(exc.value)


def test_the_refusals_leave_good_hosts_alone() -> None:
    host = Host(
        model="/models/m",
        image="registry.example:5000/vllm/vllm-openai@sha256:" + "a" * 64,
        host="fe80::1%eth0",
        extra_env=(("_A1", "x\ny"), ("HF_HOME", "/h")),
        api_key_env="MY_KEY",
        artifacts_dir="/srv/a b",
    )
    for mode in ("docker", "bare"):
        text = render_script(host, mode=mode, usage=True)
        assert "MY_KEY:?" in text and "_A1" in text
