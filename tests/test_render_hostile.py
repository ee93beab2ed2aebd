"""`render` against hostile host files: every pattern matches the whole value (a trailing newline
is refused, never written), env names are checked where they are written, no value can be read
as a flag where a positional word goes, the image is an image reference by the registries'
grammar (deploy/imageref.py), and a line break in any host-file string either is refused or
stays inside its quoting in every mode's file. Each refusal is one line, and nothing is
written."""

from __future__ import annotations

import copy
import dataclasses
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import run_cli
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import Host, parse_host
from vllm_ledger.deploy.image import derived_image, image_files
from vllm_ledger.deploy.imageref import reference_problem
from vllm_ledger.deploy.kubernetes import manifests_yaml
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.ledger_units import ledger_units
from vllm_ledger.deploy.supervisor import program_section
from vllm_ledger.deploy.units import vllm_unit
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
        ({"image": "-x"}, 'image: "-x" is not an image reference (the name is lowercase'),
        ({"image": "--privileged"}, 'image: "--privileged" is not an image reference (the name'),
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
        ("image", "-x", 'image: "-x" is not an image reference (the name is lowercase words'),
        ("image", "x\nRUN id", 'image: "x\\nRUN id" is not an image reference (it holds a'),
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


# ---- the image: an image reference, nothing else ---------------------------------------------

INJECTION = "vllm/vllm-openai:v0.32.0\nRUN touch /pwned\n# "
SHA = "sha256:" + "0123456789abcdef" * 4
GIVE = "give [REGISTRY[:PORT]/]NAME[:TAG][@sha256:HEX], e.g. vllm/vllm-openai:v0.32.0"


@pytest.mark.parametrize(
    "flags",
    [
        ["--mode", "image", "--output", "OUT/"],
        ["--mode", "docker", "--output", "OUT"],
        ["--mode", "compose", "--output", "OUT"],
        ["--mode", "kubernetes", "--output", "OUT/", "--usage"],
    ],
)
def test_an_image_that_would_add_a_dockerfile_instruction_is_refused(
    flags: list[str], tmp_path: Path
) -> None:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({**BASE, "image": INJECTION}))
    out = str(tmp_path / "out")
    rc, stdout, err = run_cli("render", "--host", str(hf), *[f.replace("OUT", out) for f in flags])
    assert (rc, stdout, err) == (
        2,
        "",
        f"vllm-ledger: error: host file {hf}: image: "
        '"vllm/vllm-openai:v0.32.0\\nRUN touch /pwned\\n# " is not an image reference '
        f"(it holds a space or a line break): {GIVE}\n",
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["host.json"]


def test_a_host_built_in_code_cannot_put_an_instruction_in_the_dockerfile() -> None:
    host = dataclasses.replace(parse_host(BASE), image=INJECTION)
    with pytest.raises(ConfigError) as exc:
        image_files(host)
    assert str(exc.value).startswith('image: "vllm/vllm-openai:v0.32.0\\nRUN touch /pwned\\n# "')


@pytest.mark.parametrize(
    "image",
    [
        "registry.example:5000/vllm/vllm-openai:v0.32.0",  # a registry with a port
        f"vllm/vllm-openai@{SHA}",  # a digest
        f"registry.example:5000/vllm/vllm-openai:v0.32.0@{SHA}",  # a tag and a digest
        "localhost/vllm-openai",  # localhost/name
        "localhost:5000/vllm-openai:nightly",
        "vllm-openai:v0.32.0",  # a library name, no namespace
        "ubuntu",
        "[::1]:5000/vllm/vllm-openai:v1",
    ],
)
def test_valid_image_references_render_one_from_line(image: str) -> None:
    host = parse_host({**BASE, "image": image})
    files = dict(image_files(host))
    instructions = [
        line.split(" ", 1)[0]
        for line in files["Dockerfile"].splitlines()
        if line and not line.startswith(("#", " "))
    ]
    assert instructions == ["FROM", "COPY", "RUN", "ENTRYPOINT"]
    assert f"\nFROM {image}\n" in files["Dockerfile"]
    assert reference_problem(derived_image(host)) is None, derived_image(host)
    # (a backslash-newline continuation comes back from shlex as a "\n" word)
    run = [w for w in shlex.split(render_script(host, mode="docker"), comments=True) if w != "\n"]
    assert run[run.index("--entrypoint") + 2] == image


def test_a_registry_port_and_digest_render_through_the_cli(tmp_path: Path) -> None:
    image = f"registry.example:5000/vllm/vllm-openai:v0.32.0@{SHA}"
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({**BASE, "image": image}))
    rc, _, err = run_cli(
        "render", "--host", str(hf), "--mode", "image", "--output", f"{tmp_path}/image/"
    )
    assert rc == 0, err
    assert f"\nFROM {image}\n" in (tmp_path / "image" / "Dockerfile").read_text()
    assert "docker build -t vllm-openai-ledger:v0.32.0-0.1.0 " in err


@pytest.mark.parametrize(
    ("image", "why"),
    [
        ("vllm/VLLM-openai:v0.32.0", "the repository name must be lowercase"),
        ("vllm/vllm openai:v0.32.0", "it holds a space or a line break"),
        ("vllm/vllm-openai:v0.32.0 ", "it holds a space or a line break"),
        ("vllm/vllm-openai:v0.32.0\n", "it holds a space or a line break"),
        ("vllm/vllm-openai:", "an empty tag after ':'"),
        ("vllm/vllm-openai:" + "v" * 129, "the tag is 129 characters; at most 128"),
        ("vllm/vllm-openai@sha256:abc", "a digest is ALGORITHM:HEX after '@'"),
        (
            "vllm/vllm-openai;id",
            "the name is lowercase words joined by '.', '_', '__' or '-', in parts split by '/'",
        ),
    ],
)
def test_invalid_image_references_are_refused_in_one_line(image: str, why: str) -> None:
    with pytest.raises(ConfigError) as exc:
        parse_host({**BASE, "image": image})
    shown = json.dumps(image)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    assert str(exc.value) == f"image: {shown} is not an image reference ({why}): {GIVE}"


# ---- a line break in any host-file string, in every mode --------------------------------------

MARK = "INJECTED=1"
BREAKS = ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x85", "\u2028", "\u2029"]
SWEEP_BASE: dict[str, Any] = {
    "model": "/models/m",
    "served_model_name": "m",
    "host": "127.0.0.1",
    "image": "vllm/vllm-openai:v0.32.0",
    "container_name": "vllm-a",
    "restart": "always",
    "shm_size": "16g",
    "gpus": [0],
    "volumes": [{"host": "/models", "container": "/models"}],
    "quantization": "awq",
    "api_key": {"env": "KEY"},
    "artifacts_dir": "/srv/artifacts",
    "ledger_code_dir": "/srv/code",
    "ledger_python": "python3",
    "extra_args": ["--enforce-eager"],
    "extra_env": {"A": "1"},
    "vllm_executable": "/usr/local/bin/vllm",
    "user": "vllm",
    "group": "vllm",
    "otlp_traces_endpoint": "grpc://127.0.0.1:4317",
    "gpu_name": "NVIDIA A100",
}
# Every string a host file holds: the top-level ones, then those inside lists and objects.
STRINGS = [key for key, value in SWEEP_BASE.items() if isinstance(value, str)] + [
    "$schema",
    "volumes[0].host",
    "volumes[0].container",
    "api_key.env",
    "api_key.file",
    "extra_args[0]",
    "extra_env value",
    "extra_env name",
]


def injected(where: str, tail: str) -> dict[str, Any]:
    """The sweep's host file with ``tail`` appended to the string at ``where``."""
    data = copy.deepcopy(SWEEP_BASE)
    if where in SWEEP_BASE:
        data[where] += tail
    elif where == "$schema":
        data[where] = "./host.schema.json" + tail
    elif where.startswith("volumes[0]."):
        data["volumes"][0][where.split(".")[1]] += tail
    elif where.startswith("api_key."):
        kind = where.split(".")[1]
        data["api_key"] = {kind: {"env": "KEY", "file": "/k"}[kind] + tail}
    elif where == "extra_args[0]":
        data["extra_args"][0] += tail
    elif where == "extra_env value":
        data["extra_env"]["A"] += tail
    else:
        assert where == "extra_env name"
        data["extra_env"] = {"A" + tail: "1"}
    return data


def rendered(host: Host) -> list[tuple[str, Callable[[], str]]]:
    """Every mode's files for ``host``, each as (its kind, how to render it)."""
    return [
        ("sh", lambda: render_script(host, mode="docker", usage=True)),
        ("sh", lambda: render_script(host, mode="bare", usage=True)),
        ("lines", lambda: vllm_unit(host, usage=True)),
        ("lines", lambda: "".join(u.text for u in ledger_units(host, listen="127.0.0.1:9464"))),
        ("yaml", lambda: compose_file(host, usage=True)),
        ("lines", lambda: program_section(host, usage=True)),
        ("yaml", lambda: manifests_yaml(host, usage=True)),
        ("lines", lambda: "".join(text for _, text in image_files(host))),
    ]


def escapes(kind: str, text: str) -> bool:
    """Whether the mark stands where its format's reader would take it as a line of its own
    (shell: a word of its own; YAML, units, ini, Dockerfile: the start of a line)."""
    if kind == "sh":
        return any(word.startswith(MARK) for word in shlex.split(text, comments=True))
    if kind == "yaml":
        list(yaml.safe_load_all(text))  # still YAML
    return any(line.lstrip().startswith(MARK) for line in text.splitlines())


@pytest.mark.parametrize("where", STRINGS)
def test_a_line_break_in_any_string_is_refused_or_stays_quoted(where: str) -> None:
    """Each break (LF, CR, CRLF, VT, FF, NEL, LS, PS) then a line of its own, in each host-file
    string, rendered in every mode: refused in one line, or quoted so the reader keeps it in the
    value. Also checks that the sweep reaches rendering for the keys that take a line break."""
    reached = []
    for brk in BREAKS:
        try:
            host = parse_host(injected(where, brk + MARK))
        except ConfigError as exc:
            assert str(exc).isprintable(), str(exc)
            continue
        reached.append(brk)
        for kind, render in rendered(host):
            try:
                text = render()
            except ConfigError as exc:
                assert str(exc).isprintable(), str(exc)
                continue
            assert not escapes(kind, text), (where, repr(brk), kind)
    takes_a_newline = {
        "model",
        "served_model_name",
        "ledger_python",
        "extra_args[0]",
        "extra_env value",
        "$schema",
    }
    assert reached == (["\n"] if where in takes_a_newline else []), reached


def test_commands_in_comments_quote_the_paths_they_name() -> None:
    host = parse_host({**BASE, "artifacts_dir": "/srv/a;touch x", "api_key": {"file": "/k $(id)"}})
    assert "# Before up: mkdir -p '/srv/a;touch x/usage';" in compose_file(host, usage=True)
    section = program_section(host, usage=True)
    assert "mkdir -p '/srv/a;touch x/usage' && chown vllm '/srv/a;touch x/usage' && " in section
    assert "vllm-ledger bundle --output '/srv/a;touch x/ledger-plugin'" in section
    assert "--from-file=api-key='/k $(id)'\n" in manifests_yaml(host, usage=True)
