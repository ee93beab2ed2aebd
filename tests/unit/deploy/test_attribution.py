"""Whose tokens in every launch mode: with usage on, vLLM always gets the ledger's middleware
(``--middleware vllm_ledger.middleware.LedgerMiddleware``), once, and the host file's
``attribution`` settings as the environment the middleware reads; the key names file is
mounted read-only in a container, a Secret's volume in Kubernetes, a credential in systemd.

tests/data/render/attribution/ holds the host file setting every option and what each mode
renders from it (after an intended change: ``UPDATE_GOLDEN=1 pytest
tests/unit/deploy/test_attribution.py``, then review the diff). The rendered files go through the
real checkers: bash runs the scripts with ``vllm``/``docker`` recording their argv and
environment, ``systemd-analyze verify`` reads the unit, kubernetes-validate (strict) the
StatefulSet, PyYAML the compose file. (That the installed vLLM's own ``vllm serve --help``
shows the flag it is given is tests/test_vllm_flags.py's.)
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.conftest import REPO
from tests.inproc import run_cli
from tests.unit.deploy.test_launch import fake_bin, run_script  # noqa: F401 (a fixture)
from vllm_ledger.deploy.attribution import CONTAINER_KEY_NAMES, MIDDLEWARE
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import Host, load_host, parse_host
from vllm_ledger.deploy.image import dockerfile
from vllm_ledger.deploy.kubernetes import manifests
from vllm_ledger.deploy.kubernetes_pod import statefulset
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.serve import serve_args
from vllm_ledger.deploy.supervisor import program_section
from vllm_ledger.deploy.units import vllm_unit
from vllm_ledger.deploy.yamltext import to_yaml
from vllm_ledger.errors import ConfigError
from vllm_ledger.write.middleware import LedgerMiddleware

DATA = REPO / "tests" / "data" / "render" / "attribution"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
NAMES = "/etc/vllm-ledger/key-names.json"
SETTINGS = {
    "VLLM_LEDGER_ATTRIBUTE_USER": "1",
    "VLLM_LEDGER_TENANT_HEADER": "X-Tenant",
}
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def host() -> Host:
    return load_host(DATA / "host.json")


def renders(h: Host, usage: bool) -> dict[str, str]:
    """Every mode's text for ``h`` (kubernetes: the StatefulSet, which runs vLLM)."""
    return {
        "docker": render_script(h, mode="docker", usage=usage),
        "bare": render_script(h, mode="bare", usage=usage),
        "systemd": vllm_unit(h, usage=usage),
        "compose": compose_file(h, usage=usage),
        "supervisor": program_section(h, usage=usage),
        "kubernetes": "\n".join(to_yaml(statefulset(h, usage, None))) + "\n",
    }


GOLDEN = {
    "docker": "docker.usage.sh",
    "bare": "bare.usage.sh",
    "systemd": "systemd.usage.service",
    "compose": "compose.usage.yaml",
    "supervisor": "supervisor.usage.conf",
    "kubernetes": "kubernetes.statefulset.usage.yaml",
}


@pytest.mark.parametrize("mode", sorted(GOLDEN))
def test_each_mode_matches_its_golden_file(mode: str) -> None:
    text = renders(host(), True)[mode]
    path = DATA / GOLDEN[mode]
    if UPDATE:
        path.write_text(text)
    assert path.read_text() == text, f"{path.name} changed: review, then UPDATE_GOLDEN=1"


def test_every_golden_file_is_checked() -> None:
    assert {p.name for p in DATA.iterdir()} == {"host.json", *GOLDEN.values()}


def test_the_middleware_is_passed_once_with_usage_and_never_without() -> None:
    for h in (host(), parse_host({"model": "m", "image": "vllm/vllm-openai:v0.32.0",
                                  "artifacts_dir": "/srv/a"})):  # fmt: skip
        args = serve_args(h, mode="bare", usage=True)
        assert args.count("--middleware") == 1
        assert args[args.index("--middleware") + 1] == MIDDLEWARE
        assert "--middleware" not in serve_args(h, mode="bare", usage=False)
        for mode, text in renders(h, True).items():
            assert text.count(MIDDLEWARE) == 1, mode
        for mode, text in renders(h, False).items():
            assert "middleware" not in text, mode
            assert "VLLM_LEDGER_" not in text and "key-names" not in text, mode
    # What --middleware names is the class the write side defines.
    loaded = importlib.import_module(MIDDLEWARE.rpartition(".")[0])
    assert getattr(loaded, MIDDLEWARE.rpartition(".")[2]) is LedgerMiddleware


def test_the_derived_image_runs_vllm_serve_with_the_middleware() -> None:
    text = dockerfile(host())
    entry = text.splitlines()[-1]
    assert json.loads(entry.removeprefix("ENTRYPOINT ")) == [
        "vllm",
        "serve",
        "--middleware",
        MIDDLEWARE,
    ]
    assert "  && python3 -c 'import vllm_ledger.middleware' \\" in text.splitlines()


# ---- the settings reach vLLM ------------------------------------------------------------------


def _script(tmp_path: Path, mode: str, names: Path) -> Path:
    data = json.loads((DATA / "host.json").read_text())
    data["attribution"]["key_names"] = str(names)
    data["artifacts_dir"] = str(tmp_path / "art")
    data["ledger_code_dir"] = str(REPO)
    data["ledger_python"] = sys.executable
    data["api_key"] = {"env": "TEST_KEY"}
    script = tmp_path / f"{mode}.sh"
    script.write_text(render_script(parse_host(data), mode=mode, usage=True))
    return script


def test_bare_mode_hands_the_settings_to_vllm(tmp_path: Path, fake_bin: Path) -> None:  # noqa: F811
    names = tmp_path / "key names.json"
    script = _script(tmp_path, "bare", names)
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert (code, calls) == (1, [])  # no names file yet: vLLM is not started
    assert err == f"key names file {names} is not a readable file (docs/attribution.md)\n"
    names.write_text("{}")
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert code == 0, err
    [call] = calls
    assert call["argv"][call["argv"].index("--middleware") + 1] == MIDDLEWARE
    got = {k: v for k, v in call["env"].items() if k.startswith("VLLM_LEDGER_")}
    assert got == {
        **SETTINGS,
        "VLLM_LEDGER_KEY_NAMES": str(names),
        "VLLM_LEDGER_DIR": str(tmp_path / "art" / "usage"),
        "VLLM_LEDGER_WRITERS": "2",
        "VLLM_LEDGER_PORT": "19002",
    }


def test_docker_mode_mounts_the_names_file_read_only(tmp_path: Path, fake_bin: Path) -> None:  # noqa: F811
    names = tmp_path / "key-names.json"
    script = _script(tmp_path, "docker", names)
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert (code, calls) == (1, [])  # docker would make a folder where the file is missing
    assert "is not a readable file" in err
    names.write_text("{}")
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert code == 0, err
    [call] = calls
    argv = call["argv"]
    assert f"{names}:{CONTAINER_KEY_NAMES}:ro" in argv
    for name, value in {**SETTINGS, "VLLM_LEDGER_KEY_NAMES": CONTAINER_KEY_NAMES}.items():
        assert argv[argv.index(f"{name}={value}") - 1] == "--env"
    assert argv[argv.index("--middleware") + 1] == MIDDLEWARE


def test_compose_kubernetes_systemd_and_supervisor_carry_them() -> None:
    h = host()
    service = yaml.safe_load(compose_file(h, usage=True))["services"]["vllm"]
    assert {k: v for k, v in service["environment"].items() if k in SETTINGS} == SETTINGS
    assert service["environment"]["VLLM_LEDGER_KEY_NAMES"] == CONTAINER_KEY_NAMES
    assert service["volumes"][-1] == {
        "type": "bind",
        "source": NAMES,
        "target": CONTAINER_KEY_NAMES,
        "read_only": True,
    }
    pod = statefulset(h, True, None)["spec"]["template"]["spec"]
    vllm = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    assert {k: env[k] for k in SETTINGS} == SETTINGS
    assert env["VLLM_LEDGER_KEY_NAMES"] == CONTAINER_KEY_NAMES
    assert vllm["volumeMounts"][-1] == {
        "name": "key-names",
        "mountPath": "/vllm-ledger/key-names",
        "readOnly": True,
    }
    assert pod["volumes"][-1] == {
        "name": "key-names",
        "secret": {
            "secretName": "vllm-attributed-key-names",
            "items": [{"key": "key-names.json", "path": "key-names.json"}],
        },
    }
    assert pod["containers"][1]["name"] == "ledger-exporter"  # the sidecar needs no key names
    assert not any("key-names" in str(m) for m in pod["containers"][1]["volumeMounts"])
    unit = vllm_unit(h, usage=True).splitlines()
    assert "Environment=VLLM_LEDGER_KEY_NAMES=%d/vllm-key-names" in unit
    assert f"LoadCredential=vllm-key-names:{NAMES}" in unit
    section = program_section(h, usage=True)
    assert (
        ',VLLM_LEDGER_ATTRIBUTE_USER="1",VLLM_LEDGER_TENANT_HEADER="X-Tenant",'
        f'VLLM_LEDGER_KEY_NAMES="{NAMES}"\n'
    ) in section


def test_the_kubernetes_header_says_how_to_make_the_secret() -> None:
    from vllm_ledger.deploy.kubernetes import manifests_yaml

    head = manifests_yaml(host(), usage=True).split("\n---\n")[0].splitlines()
    assert (
        "# Key names: kubectl create secret generic vllm-attributed-key-names "
        f"--from-file=key-names.json={NAMES}"
    ) in head
    assert len(manifests(host(), usage=True)) == 5  # the Secret is made by kubectl, not here


@pytest.mark.parametrize("version", ["1.33.0", "1.37.0"])
def test_the_statefulset_passes_kubernetes_validate_strict(version: str) -> None:
    doc = statefulset(host(), True, None)
    assert kubernetes_validate.validate(doc, version, strict=True) == version.rsplit(".", 1)[0]


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="no systemd-analyze here")
def test_the_unit_verifies_clean(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    unit = tmp_path / "vllm-attributed.service"
    unit.write_text(vllm_unit(host(), usage=True).replace("/usr/local/bin/vllm", "/bin/true"))
    p = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (p.returncode, p.stdout + p.stderr) == (0, "")


# ---- what the host file may say ---------------------------------------------------------------

BASE: dict[str, Any] = {"model": "m", "image": "vllm/vllm-openai:v0.32.0", "artifacts_dir": "/a"}


@pytest.mark.parametrize(
    ("attribution", "message"),
    [
        (
            {"tenant_header": "Authorization"},
            "attribution.tenant_header: 'Authorization' cannot name the tenant: it carries the "
            "API key, and a label is stored as it is: name the header your proxy sets, e.g. "
            "X-Tenant",
        ),
        ({"tenant_header": "cookie"}, "cannot name the tenant: it carries session credentials"),
        ({"tenant_header": "X-Request-Id"}, "it is the request id the ledger joins by"),
        (
            {"tenant_header": "X Tenant"},
            'attribution.tenant_header: "X Tenant" is not a header name (letters, digits and '
            "'-', at most 64)",
        ),
        ({"user": "yes"}, 'attribution.user: must be true or false, not "yes"'),
        ({"key_names": "names.json"}, 'attribution.key_names: "names.json" must be an absolute'),
        ({"users": True}, "attribution.users: unknown key (did you mean user?)"),
    ],
)
def test_refused_settings_are_one_line(attribution: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as got:
        parse_host({**BASE, "attribution": attribution})
    assert message in str(got.value) and "\n" not in str(got.value)


@pytest.mark.parametrize(
    ("extra_args", "where"),
    [
        (["--middleware", MIDDLEWARE], 1),
        ([f"--middleware={MIDDLEWARE}"], 0),
    ],
)
def test_the_ledger_middleware_in_extra_args_is_refused(extra_args: list[str], where: int) -> None:
    with pytest.raises(ConfigError) as got:
        parse_host({**BASE, "extra_args": extra_args})
    assert str(got.value) == (
        f"extra_args[{where}]: the ledger's middleware is added by usage: leave it out (a second "
        "copy would see every request twice)"
    )
    # Another middleware of the operator's own is passed on as it is.
    h = parse_host({**BASE, "extra_args": ["--middleware", "mine.Middleware"]})
    args = serve_args(h, mode="bare", usage=True)
    assert args[-4:] == ["--middleware", MIDDLEWARE, "--middleware", "mine.Middleware"]


def test_paths_a_mode_cannot_take_are_refused_naming_the_key(tmp_path: Path) -> None:
    colon = parse_host({**BASE, "attribution": {"key_names": "/etc/a:b.json"}})
    with pytest.raises(ConfigError, match=r"^attribution.key_names: a docker volume path cannot"):
        render_script(colon, mode="docker", usage=True)
    render_script(colon, mode="docker", usage=False)  # not mounted without usage
    spaced = parse_host({**BASE, "attribution": {"key_names": "/etc/key names.json"}})
    with pytest.raises(ConfigError, match=r"^attribution.key_names: '/etc/key names.json' cannot"):
        vllm_unit(spaced, usage=True)
    quoted = parse_host({**BASE, "attribution": {"key_names": "/etc/\"names'.json"}})
    with pytest.raises(ConfigError, match=r"^attribution.key_names: .* supervisor environment"):
        program_section(quoted, usage=True)
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps({**BASE, "attribution": {"tenant_header": "Authorization"}}))
    code, out, err = run_cli("render", "--host", str(hf), "--usage", "--output", "-")
    assert (code, out) == (2, "")
    assert err.startswith(f"vllm-ledger: error: host file {hf}: attribution.tenant_header: ")
    assert err.count("\n") == 1


def test_the_host_file_reads_back_from_a_host() -> None:
    """``host_data`` is ``parse_host``'s inverse for the attribution object too."""
    from vllm_ledger.deploy.host import host_data

    h = host()
    assert host_data(h)["attribution"] == {
        "user": True,
        "tenant_header": "X-Tenant",
        "key_names": NAMES,
    }
    assert parse_host(host_data(h)) == h
    assert "attribution" not in host_data(parse_host(BASE))
