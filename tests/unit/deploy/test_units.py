"""The systemd units and compose file `render` writes: valid for the tools that read them.

systemd units go through the real ``systemd-analyze verify`` (offline: ``--man=no``; it checks
that every ExecStart program exists, so the vLLM program is a stand-in executable in the test's
folder). Compose files are read back with a YAML parser and checked against a JSON Schema of
the compose keys we emit (Docker's ``compose`` plugin is not installed here), and their argv and
environment are compared with docker mode's ``docker run``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import Host, load_host, parse_host
from vllm_ledger.deploy.launch import Raw, docker_run_words
from vllm_ledger.deploy.ledger_units import ledger_units
from vllm_ledger.deploy.units import sysusers_text, vllm_unit, writable_paths
from vllm_ledger.errors import ConfigError

DATA = REPO / "tests" / "data" / "render"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="no systemd-analyze here")


def verify(folder: Path, *names: str) -> None:
    """``systemd-analyze verify`` is clean: exit 0 and not one line of warning."""
    assert SYSTEMD_ANALYZE is not None
    proc = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", *(str(folder / n) for n in names)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")


def stand_in(tmp_path: Path) -> str:
    exe = tmp_path / "bin" / "vllm"
    exe.parent.mkdir()
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return str(exe)


def host(name: str, **changes: Any) -> Host:
    return dataclasses.replace(load_host(DATA / f"{name}.json"), **changes)


HOSTILE_MODEL = "/m/a b$HOME %n \"q\" \\ ;'x'\n`id`"
HOSTILE = {
    "model": HOSTILE_MODEL,
    "mode": "bare",
    "served_model_name": "n$1%%",
    "gpus": [],
    "extra_args": [";", "--x=$(id)", "100%"],
    "extra_env": {"A": 'va$l %h "q"\\', "PYTHONPATH": "/opt/py"},
    "artifacts_dir": "/srv/art",
}


@needs_systemd
@pytest.mark.parametrize("name", ["gpu-node", "cpu-bare"])
@pytest.mark.parametrize("usage", [False, True])
def test_vllm_unit_verifies(name: str, usage: bool, tmp_path: Path) -> None:
    h = host(name, vllm_executable=stand_in(tmp_path), user="vllm", group="vllm")
    (tmp_path / "vllm.service").write_text(
        vllm_unit(h, usage=usage, tz="Europe/Berlin" if usage else None)
    )
    verify(tmp_path, "vllm.service")


@needs_systemd
def test_vllm_unit_without_an_api_key_runs_vllm_itself(tmp_path: Path) -> None:
    exe = stand_in(tmp_path)
    h = host("gpu-node", vllm_executable=exe, api_key_file=None)
    text = vllm_unit(h, usage=True)
    assert f"ExecStart={exe} serve /models/Qwen2.5-72B-Instruct-AWQ \\\n" in text
    assert "VLLM_API_KEY" not in text and "LoadCredential" not in text
    (tmp_path / "vllm.service").write_text(text)
    verify(tmp_path, "vllm.service")


@needs_systemd
def test_hostile_values_verify_and_stay_quoted(tmp_path: Path) -> None:
    h = dataclasses.replace(parse_host(HOSTILE), vllm_executable=stand_in(tmp_path))
    text = vllm_unit(h, usage=True)
    (tmp_path / "vllm.service").write_text(text)
    verify(tmp_path, "vllm.service")
    assert ' serve "/m/a b$$HOME %%n \\"q\\" \\\\ ;\'x\'\\n`id`" \\\n' in text
    assert '  \\; \\\n  "--x=$$(id)" "100%%"\n' in text
    assert 'Environment="A=va$l %%h \\"q\\"\\\\"\n' in text  # no $ expansion in Environment=
    assert "Environment=PYTHONPATH=/srv/art/ledger-plugin:/opt/py\n" in text


@needs_systemd
@pytest.mark.parametrize("name", ["gpu-node", "cpu-bare"])
def test_ledger_units_verify(name: str, tmp_path: Path) -> None:
    units = ledger_units(
        host(name, user="vllm"),
        listen="127.0.0.1:9464",
        notifier_config=Path("/etc/vllm-ledger/notifier.json"),
    )
    for unit in units:
        (tmp_path / unit.name).write_text(unit.text)
    verify(tmp_path, *(u.name for u in units))


@needs_systemd
def test_golden_units_verify(tmp_path: Path) -> None:
    """The golden files themselves (their vLLM program path pointed at a stand-in)."""
    exe = stand_in(tmp_path)
    names = []
    for path in [*DATA.glob("*.service"), *DATA.glob("*.units/*")]:
        name = f"{path.parent.name.replace('.', '-')}-{path.name}"
        (tmp_path / name).write_text(path.read_text().replace("/usr/local/bin/vllm", exe))
        names.append(name)
    assert len(names) == 11
    verify(tmp_path, *names)


def test_api_key_never_in_the_unit_or_compose_file(tmp_path: Path) -> None:
    key = tmp_path / "key"
    key.write_text("sk-secret-1234\n")
    h = host("gpu-node", api_key_file=str(key))
    for text in (vllm_unit(h, usage=True), compose_file(h, usage=True)):
        assert "sk-secret" not in text
        assert "--api-key" not in text
    assert f"LoadCredential=vllm-api-key:{key}\n" in vllm_unit(h)


def test_timeout_above_the_shutdown_timeout() -> None:
    assert "TimeoutStopSec=20\n" in vllm_unit(host("gpu-node"), usage=True)  # 10 + 10
    assert "TimeoutStopSec=25\n" in vllm_unit(host("cpu-bare"))  # 15 + 10
    assert 'stop_grace_period: "20s"\n' in compose_file(host("gpu-node"), usage=True)


# ---- compose ----------------------------------------------------------------------------------

_STR = {"type": "string"}
_STRS = {"type": "array", "items": _STR}
COMPOSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["services"],
    "properties": {
        "services": {
            "type": "object",
            "additionalProperties": False,
            "required": ["vllm"],
            "properties": {
                "vllm": {
                    "type": "object",
                    "additionalProperties": False,
                    "required": ["image", "command", "ports", "restart", "shm_size"],
                    "properties": {
                        "image": _STR,
                        "container_name": {
                            "type": "string",
                            "pattern": "^[a-zA-Z0-9][a-zA-Z0-9_.-]+$",
                        },
                        "hostname": _STR,
                        "restart": {
                            "type": "string",
                            "pattern": "^(no|always|unless-stopped|on-failure(:[0-9]+)?)$",
                        },
                        "entrypoint": _STRS,
                        "command": _STRS,
                        "ports": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["target", "published", "host_ip", "protocol"],
                                "properties": {
                                    "target": {"type": "integer"},
                                    "published": {"type": "string", "pattern": "^[0-9]+$"},
                                    "host_ip": _STR,
                                    "protocol": {"enum": ["tcp"]},
                                },
                            },
                        },
                        "volumes": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "additionalProperties": False,
                                "required": ["type", "source", "target", "read_only"],
                                "properties": {
                                    "type": {"enum": ["bind"]},
                                    "source": {"type": "string", "pattern": "^/"},
                                    "target": {"type": "string", "pattern": "^/"},
                                    "read_only": {"type": "boolean"},
                                },
                            },
                        },
                        "environment": {"type": "object", "additionalProperties": _STR},
                        "secrets": _STRS,
                        "shm_size": {"type": "string", "pattern": "^[0-9]+[bkmgBKMG]?$"},
                        "stop_grace_period": {"type": "string", "pattern": "^[0-9]+s$"},
                        "stop_signal": {"enum": ["SIGTERM"]},
                        "deploy": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "resources": {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "reservations": {
                                            "type": "object",
                                            "additionalProperties": False,
                                            "properties": {
                                                "devices": {
                                                    "type": "array",
                                                    "items": {
                                                        "type": "object",
                                                        "additionalProperties": False,
                                                        "required": ["driver", "capabilities"],
                                                        "properties": {
                                                            "driver": {"enum": ["nvidia"]},
                                                            "count": {"enum": ["all"]},
                                                            "device_ids": _STRS,
                                                            "capabilities": {"const": ["gpu"]},
                                                        },
                                                    },
                                                }
                                            },
                                        }
                                    },
                                }
                            },
                        },
                    },
                }
            },
        },
        "secrets": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "required": ["file"],
                "properties": {"file": _STR},
            },
        },
    },
}


# compose mode's ledger exporter (with usage): a service of the same keys as vLLM's
_SERVICES = COMPOSE_SCHEMA["properties"]["services"]["properties"]
_SERVICES["ledger-exporter"] = {
    **_SERVICES["vllm"],
    "required": ["image", "entrypoint", "command", "ports", "restart", "volumes"],
}


def load_compose(text: str) -> Any:
    doc = yaml.safe_load(text)
    jsonschema.validate(doc, COMPOSE_SCHEMA)
    return doc


def unescape(value: Any) -> Any:
    """What compose makes of a value with no variable in it: ``$$`` is ``$``."""
    if isinstance(value, str):
        return value.replace("$$", "$")
    if isinstance(value, list):
        return [unescape(v) for v in value]
    return value


def docker_argv(h: Host, usage: bool) -> tuple[list[str], dict[str, str]]:
    """docker mode's argv after the image, and its --env NAME=VALUE pairs."""
    groups = docker_run_words(h, usage)
    words = [w for g in groups for w in g]
    assert h.image is not None, "docker mode names an image"
    args = [w for w in words[words.index(h.image) + 1 :] if not isinstance(w, Raw)]
    env = dict(
        str(w).split("=", 1) for g in groups if g[0] == "--env" for w in g[1:] if "=" in str(w)
    )
    return [str(a) for a in args], env


@pytest.mark.parametrize("usage", [False, True])
def test_compose_is_docker_mode(usage: bool) -> None:
    h = host("gpu-node", api_key_file=None)
    doc = load_compose(compose_file(h, usage=usage))
    svc = doc["services"]["vllm"]
    args, env = docker_argv(h, usage)
    assert svc["entrypoint"] == ["vllm"]
    assert svc["command"] == args
    assert svc["environment"] == env
    assert svc["image"] == h.image and svc["container_name"] == "vllm-primary"
    assert svc["ports"] == [
        {"target": 19001, "published": "19001", "host_ip": "0.0.0.0", "protocol": "tcp"}
    ]
    assert svc["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "device_ids": ["0", "1", "2", "3"], "capabilities": ["gpu"]}
    ]
    assert svc["shm_size"] == "32g" and svc["restart"] == "unless-stopped"
    assert ("hostname" in svc) == usage
    assert [(v["source"], v["target"], v["read_only"]) for v in svc["volumes"]][-1] == (
        ("/srv/artifacts/usage", "/vllm-ledger/usage", False)
        if usage
        else ("/srv/hf-cache", "/root/.cache/huggingface", False)
    )
    assert ("ledger-exporter" in doc["services"]) == usage  # the ledger's exporter beside it
    if usage:
        exporter = doc["services"]["ledger-exporter"]
        assert exporter["image"] == h.image
        assert exporter["entrypoint"] == ["python3", "-m", "vllm_ledger"]
        assert exporter["command"] == [
            "exporter", "--root", "/vllm-ledger/usage", "--listen", "0.0.0.0:9464", "--no-gpu",
        ]  # fmt: skip
        assert exporter["environment"] == {"PYTHONPATH": "/vllm-ledger/plugin"}
        assert [(v["source"], v["target"], v["read_only"]) for v in exporter["volumes"]] == [
            ("/srv/artifacts/ledger-plugin", "/vllm-ledger/plugin", True),
            ("/srv/artifacts/usage", "/vllm-ledger/usage", True),  # read-only: vLLM writes it
        ]


def test_compose_key_file_is_a_secret() -> None:
    doc = load_compose(compose_file(host("gpu-node"), usage=True))
    svc = doc["services"]["vllm"]
    assert doc["secrets"] == {"vllm_api_key": {"file": "/srv/secrets/vllm-api.key"}}
    assert svc["secrets"] == ["vllm_api_key"]
    assert svc["entrypoint"][:2] == ["/bin/sh", "-c"] and svc["entrypoint"][3] == "sh"
    assert svc["command"][:2] == ["serve", "/models/Qwen2.5-72B-Instruct-AWQ"]


def test_compose_key_variable_is_interpolated_at_up() -> None:
    h = host("gpu-node", api_key_file=None, api_key_env="MY_KEY", gpus="all")
    svc = load_compose(compose_file(h))["services"]["vllm"]
    assert svc["environment"]["VLLM_API_KEY"] == "${MY_KEY:?the API key variable MY_KEY is not set}"
    assert svc["deploy"]["resources"]["reservations"]["devices"][0]["count"] == "all"


def test_compose_hostile_values_are_literal() -> None:
    data = {**HOSTILE, "mode": "docker", "image": "img:1", "gpus": [0]}
    h = parse_host(data)
    svc = load_compose(compose_file(h, usage=True))["services"]["vllm"]
    args, env = docker_argv(h, True)
    assert unescape(svc["command"]) == args
    assert {k: unescape(v) for k, v in svc["environment"].items()} == env
    assert svc["command"][1] == HOSTILE_MODEL.replace("$", "$$")


def test_golden_compose_files_validate() -> None:
    for path in DATA.glob("*.yaml"):
        load_compose(path.read_text())


# ---- the CLI ----------------------------------------------------------------------------------


def test_units_cli_writes_each_file_and_refuses_a_fifo(tmp_path: Path) -> None:
    out = tmp_path / "units"
    out.mkdir()
    fifo = out / "vllm-8001-ledger-check.timer"
    import os

    os.mkfifo(fifo)
    rc, _, err = run_cli("render", "--host", str(DATA / "cpu-bare.json"), "--units", str(out))
    assert (rc, err) == (
        2,
        f"vllm-ledger: error: --units {fifo} is a FIFO, not a regular file: give a file name, "
        "e.g. --units units/\n",
    )
    fifo.unlink()
    rc, _, err = run_cli("render", "--host", str(DATA / "cpu-bare.json"), "--units", str(out))
    assert rc == 0, err
    assert sorted(p.name for p in out.iterdir()) == [
        "vllm-8001-ledger-check.service",
        "vllm-8001-ledger-check.timer",
        "vllm-8001-ledger-exporter.service",
    ]
    assert sorted(err.splitlines()[:3]) == [
        f"wrote {out / name}"
        for name in (
            "vllm-8001-ledger-check.service",
            "vllm-8001-ledger-check.timer",
            "vllm-8001-ledger-exporter.service",
        )
    ]
    assert err.splitlines()[3].startswith(f"review them, then install: cp {out}/* ")


def test_units_need_the_artifacts_dir(tmp_path: Path) -> None:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({"model": "m", "mode": "bare"}))
    rc, _, err = run_cli("render", "--host", str(hf), "--units", str(tmp_path / "u"))
    assert (rc, err) == (
        2,
        f"vllm-ledger: error: host file {hf}: artifacts_dir: required with --usage "
        "(the ledger goes to ARTIFACTS/usage)\n",
    )
    assert not (tmp_path / "u").exists()


def test_systemd_cli_output_and_message(tmp_path: Path) -> None:
    out = tmp_path / "vllm.service"
    rc, _, err = run_cli(
        "render", "--host", str(DATA / "cpu-bare.json"), "--output", str(out), "--mode", "systemd"
    )
    assert rc == 0
    sysusers = tmp_path / "vllm.sysusers.conf"
    assert err == (
        f"wrote {sysusers}\n"
        f"wrote {out} (systemd mode, ledger off); review it, then install it: cp {out} "
        "/etc/systemd/system/vllm-8001.service && systemctl daemon-reload && "
        "systemctl enable --now vllm-8001.service\n"
    )
    assert sysusers.read_text().endswith('\nu vllm - "vLLM server" /var/lib/vllm\n')


@needs_systemd
def test_the_sysusers_file_creates_the_units_account(tmp_path: Path) -> None:
    """``systemd-sysusers --root`` applies the file to an empty root: the account the unit
    names (User=, Group=, its home the unit's StateDirectory) appears there."""
    text = sysusers_text(host("cpu-bare"))
    assert text is not None
    conf = tmp_path / "vllm.conf"
    conf.write_text(text)
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    proc = subprocess.run(
        ["systemd-sysusers", f"--root={root}", str(conf)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    (entry,) = (root / "etc" / "passwd").read_text().splitlines()
    name, _, uid, gid, gecos, home, _ = entry.split(":")
    assert (name, gecos, home, uid == gid) == ("vllm", "vLLM server", "/var/lib/vllm", True)
    unit = vllm_unit(host("cpu-bare"))
    for line in (
        "User=vllm",
        "Group=vllm",
        "StateDirectory=vllm",
        "WorkingDirectory=/var/lib/vllm",
    ):
        assert f"\n{line}\n" in unit


def test_a_named_user_gets_no_sysusers_file_and_keeps_its_home_writable() -> None:
    h = host("cpu-bare", user="alice")
    assert sysusers_text(h) is None
    unit = vllm_unit(h, usage=True)
    assert "User=alice\n" in unit and "Group=" not in unit and "StateDirectory" not in unit
    assert "WorkingDirectory=~\n" in unit
    assert "ReadWritePaths=/srv/artifacts\nReadWritePaths=-/home/alice\n" in unit
    assert "ReadWritePaths=-/root\n" in vllm_unit(host("cpu-bare", user="root"))


def test_cache_folders_from_extra_env_are_writable() -> None:
    h = host(
        "cpu-bare",
        extra_env=(("HF_HOME", "/srv/hf"), ("OTHER", "/x"), ("VLLM_CACHE_ROOT", "/srv/vc")),
    )
    assert writable_paths(h, True) == ["/srv/artifacts", "/srv/hf", "/srv/vc"]
    assert writable_paths(h, False) == ["/srv/hf", "/srv/vc"]
    with pytest.raises(ConfigError) as exc:
        vllm_unit(host("cpu-bare", extra_env=(("HF_HOME", "/srv/a b"),)))
    assert str(exc.value).startswith("extra_env.HF_HOME: '/srv/a b' cannot go in a systemd unit")


def test_vllm_unit_keeps_gpu_access_and_jit() -> None:
    """What would stop CUDA is never there: device sandboxing, a device allow-list (also
    implied by ProtectClock), W^X memory (JIT), a system call filter."""
    for name in ("gpu-node", "cpu-bare"):
        unit = vllm_unit(host(name), usage=True)
        for key in (
            "PrivateDevices",
            "DeviceAllow",
            "DevicePolicy",
            "ProtectClock",
            "MemoryDenyWriteExecute",
            "SystemCallFilter",
            "PrivateUsers",
        ):
            assert f"\n{key}=" not in unit, (name, key)
        for line in (
            "Restart=always",
            "RestartSec=10",
            "LimitNOFILE=65536",
            "LimitMEMLOCK=infinity",
            "NoNewPrivileges=yes",
            "ProtectSystem=strict",
            "PrivateTmp=yes",
            "ReadWritePaths=/srv/artifacts",
        ):
            assert f"\n{line}\n" in unit, (name, line)
        unit_section = unit.split("[Service]")[0]
        assert "\nStartLimitIntervalSec=0\n" in unit_section


def test_compose_mode_needs_an_image(tmp_path: Path) -> None:
    rc, _, err = run_cli(
        "render", "--host", str(DATA / "cpu-bare.json"), "--output", "-", "--mode", "compose"
    )
    assert rc == 2
    assert "image: required in docker mode" in err
