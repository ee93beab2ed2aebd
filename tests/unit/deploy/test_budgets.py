"""Budgets in every launch mode: with usage on and the host file's ``budgets``, the budgets file
is checked when rendered (its own one-line errors), and vLLM gets ``VLLM_LEDGER_BUDGETS``: the
host's path outside a container, mounted read-only in one (a cost budget's price file at its
own path), a ConfigMap in Kubernetes, where the exporter sidecar serves the budgets and a
PrometheusRule holds their rules; rank 0 runs the enforcer with it in every mode.

tests/data/render/budgets/ holds the host file, the budgets file the goldens were rendered from
(the host file names it /etc/vllm-ledger/budgets.toml) and what each mode renders (after an
intended change: ``UPDATE_GOLDEN=1 pytest tests/unit/deploy/test_budgets.py``, then review the
diff). The rendered files go through the real checkers: bash runs the scripts with
``vllm``/``docker`` recording their argv and environment, ``systemd-analyze verify`` reads the
unit, kubernetes-validate (strict) the StatefulSet and the ConfigMap, promtool the rules.
"""

from __future__ import annotations

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
from tests.e2e.prom import promtool
from tests.inproc import run_cli
from tests.unit.deploy.test_launch import fake_bin, run_script  # noqa: F401 (a fixture)
from vllm_ledger.deploy.budgets import BudgetsFile, read_budgets_file
from vllm_ledger.deploy.compose import compose_file
from vllm_ledger.deploy.host import Host, load_host, parse_host
from vllm_ledger.deploy.kubernetes import manifests
from vllm_ledger.deploy.launch import render_script
from vllm_ledger.deploy.supervisor import program_section
from vllm_ledger.deploy.units import vllm_unit
from vllm_ledger.deploy.yamltext import to_yaml
from vllm_ledger.errors import ConfigError
from vllm_ledger.observe.budget_alerts import budget_rules_document

DATA = REPO / "tests" / "data" / "render" / "budgets"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"
ON_HOST = "/etc/vllm-ledger/budgets.toml"
IN_CONTAINER = "/vllm-ledger/budgets/budgets.toml"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")


def host() -> Host:
    return load_host(DATA / "host.json")


def budgets() -> BudgetsFile:
    return read_budgets_file(str(DATA / "budgets.toml"))


def _kubernetes(h: Host, b: BudgetsFile) -> str:
    docs = [m.doc for m in manifests(h, usage=True, budgets=b)]
    kept = [d for d in docs if d["kind"] in ("StatefulSet", "ConfigMap")]
    kept = [d for d in kept if d["metadata"]["name"] != "vllm-ledger-dashboard"]
    return "\n---\n".join("\n".join(to_yaml(d)) for d in kept) + "\n"


def renders(h: Host, b: BudgetsFile) -> dict[str, str]:
    return {
        "docker": render_script(h, mode="docker", usage=True, budgets=b),
        "bare": render_script(h, mode="bare", usage=True, budgets=b),
        "systemd": vllm_unit(h, usage=True, budgets=b),
        "compose": compose_file(h, usage=True, budgets=b),
        "supervisor": program_section(h, usage=True, budgets=b),
        "kubernetes": _kubernetes(h, b),
    }


GOLDEN = {
    "docker": "docker.usage.sh",
    "bare": "bare.usage.sh",
    "systemd": "systemd.usage.service",
    "compose": "compose.usage.yaml",
    "supervisor": "supervisor.usage.conf",
    "kubernetes": "kubernetes.usage.yaml",
}


@pytest.mark.parametrize("mode", sorted(GOLDEN))
def test_each_mode_matches_its_golden_file(mode: str) -> None:
    text = renders(host(), budgets())[mode]
    path = DATA / GOLDEN[mode]
    if UPDATE:
        path.write_text(text)
    assert path.read_text() == text, f"{path.name} changed: review, then UPDATE_GOLDEN=1"


def test_every_golden_file_is_checked() -> None:
    assert {p.name for p in DATA.iterdir()} == {"host.json", "budgets.toml", *GOLDEN.values()}


def test_every_mode_names_the_file_once() -> None:
    for mode, text in renders(host(), budgets()).items():
        wanted = IN_CONTAINER if mode in ("docker", "compose", "kubernetes") else ON_HOST
        assert "VLLM_LEDGER_BUDGETS" in text, mode
        assert wanted in text, mode


# ---- the file reaches vLLM ---------------------------------------------------------------------


def _files(tmp_path: Path, cost: bool = False) -> tuple[Path, Path]:
    """A budgets file in a folder with a space, and the price file a cost budget names."""
    folder = tmp_path / "conf dir"
    folder.mkdir(exist_ok=True)
    prices = folder / "prices.toml"
    prices.write_text("cloud_input_price = 2.0\ncloud_output_price = 8.0\n")
    path = folder / "budgets.toml"
    text = (DATA / "budgets.toml").read_text()
    if cost:
        text = f'prices = "{prices}"\n' + text + '\n[[budget]]\nadapter = "tiny"\ncost = 5\n'
    path.write_text(text)
    return path, prices


def _script(tmp_path: Path, mode: str, path: Path) -> Path:
    data = json.loads((DATA / "host.json").read_text())
    data["budgets"] = str(path)
    data["artifacts_dir"] = str(tmp_path / "art")
    data["ledger_code_dir"] = str(REPO)
    data["ledger_python"] = sys.executable
    data["api_key"] = {"env": "TEST_KEY"}
    script = tmp_path / f"{mode}.sh"
    script.write_text(render_script(parse_host(data), mode=mode, usage=True))
    return script


def test_bare_mode_hands_the_file_to_vllm(tmp_path: Path, fake_bin: Path) -> None:  # noqa: F811
    path, _prices = _files(tmp_path)
    script = _script(tmp_path, "bare", path)
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert code == 0, err
    [call] = calls
    assert call["env"]["VLLM_LEDGER_BUDGETS"] == str(path)
    path.unlink()  # gone after rendering: vLLM is not started
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert (code, calls) == (1, [])
    assert err == f"budgets file {path} is not a readable file (docs/budgets.md)\n"


def test_docker_mode_mounts_the_file_and_its_price_file_read_only(
    tmp_path: Path,
    fake_bin: Path,  # noqa: F811
) -> None:
    path, prices = _files(tmp_path, cost=True)
    script = _script(tmp_path, "docker", path)
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert code == 0, err
    [call] = calls
    argv = call["argv"]
    assert argv[argv.index(f"{path}:{IN_CONTAINER}:ro") - 1] == "--volume"
    assert argv[argv.index(f"{prices}:{prices}:ro") - 1] == "--volume"
    assert argv[argv.index(f"VLLM_LEDGER_BUDGETS={IN_CONTAINER}") - 1] == "--env"
    prices.unlink()  # docker would make a folder where the file is missing
    code, _out, err, calls = run_script(script, fake_bin, tmp_path, {"TEST_KEY": "sk-1"})
    assert (code, calls) == (1, [])
    assert err == f"budgets file {prices} is not a readable file (docs/budgets.md)\n"


def _cost_host(tmp_path: Path) -> tuple[Host, BudgetsFile, Path]:
    path, prices = _files(tmp_path, cost=True)
    h = parse_host({**json.loads((DATA / "host.json").read_text()), "budgets": str(path)})
    return h, read_budgets_file(str(path)), prices


def test_compose_systemd_and_supervisor_carry_it(tmp_path: Path) -> None:
    h, b, prices = _cost_host(tmp_path)
    service = yaml.safe_load(compose_file(h, usage=True, budgets=b))["services"]["vllm"]
    assert service["environment"]["VLLM_LEDGER_BUDGETS"] == IN_CONTAINER
    assert service["volumes"][-2:] == [
        {"type": "bind", "source": h.budgets, "target": IN_CONTAINER, "read_only": True},
        {"type": "bind", "source": str(prices), "target": str(prices), "read_only": True},
    ]
    g = host()
    unit = vllm_unit(g, usage=True, budgets=budgets()).splitlines()
    assert f"Environment=VLLM_LEDGER_BUDGETS={ON_HOST}" in unit
    assert f"AssertPathExists={ON_HOST}" in unit
    section = program_section(g, usage=True, budgets=budgets())
    assert f',VLLM_LEDGER_BUDGETS="{ON_HOST}"\n' in section


def test_kubernetes_holds_the_files_in_a_configmap_and_the_rules_in_a_prometheusrule(
    tmp_path: Path,
) -> None:
    h, b, prices = _cost_host(tmp_path)
    made = manifests(h, usage=True, budgets=b)
    docs = {(d.doc["kind"], d.doc["metadata"]["name"]): d.doc for d in made}
    cm = docs[("ConfigMap", "vllm-budgeted-budgets")]
    assert cm["data"] == {"budgets.toml": b.text, "prices.toml": prices.read_text()}
    pod = docs[("StatefulSet", "vllm-budgeted")]["spec"]["template"]
    assert pod["metadata"]["annotations"] == {"vllm-ledger/budgets-sha256": b.digest}
    vllm, exporter = pod["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in vllm["env"]}
    assert env["VLLM_LEDGER_BUDGETS"] == IN_CONTAINER
    mounts = [
        {"name": "budgets", "mountPath": "/vllm-ledger/budgets", "readOnly": True},
        {"name": "budgets", "mountPath": str(prices), "subPath": "prices.toml", "readOnly": True},
    ]
    assert vllm["volumeMounts"][-2:] == mounts
    assert exporter["volumeMounts"][-2:] == mounts
    assert exporter["args"][-2:] == ["--budgets", IN_CONTAINER]
    assert pod["spec"]["volumes"][-1] == {
        "name": "budgets",
        "configMap": {
            "name": "vllm-budgeted-budgets",
            "items": [{"key": "budgets.toml", "path": "budgets.toml"}],
        },
    }
    rule = docs[("PrometheusRule", "vllm-budgeted-budgets")]
    assert rule["spec"] == budget_rules_document(b.config)
    (tmp_path / "rules.yml").write_text(yaml.safe_dump(rule["spec"]))
    checked = promtool("check", "rules", str(tmp_path / "rules.yml"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    # A changed budgets file changes the pod template: applying it restarts the pods.
    changed = BudgetsFile(b.text + "\n", b.config, b.prices, b.prices_text)
    assert changed.digest != b.digest


@pytest.mark.parametrize("version", ["1.33.0", "1.37.0"])
def test_the_manifests_pass_kubernetes_validate_strict(version: str, tmp_path: Path) -> None:
    h, b, _prices = _cost_host(tmp_path)
    for m in manifests(h, usage=True, budgets=b):
        if m.doc["kind"] in ("StatefulSet", "ConfigMap"):
            got = kubernetes_validate.validate(m.doc, version, strict=True)
            assert got == version.rsplit(".", 1)[0], m.filename


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="no systemd-analyze here")
def test_the_unit_verifies_clean(tmp_path: Path) -> None:
    assert SYSTEMD_ANALYZE is not None
    unit = tmp_path / "vllm-budgeted.service"
    text = vllm_unit(host(), usage=True, budgets=budgets())
    unit.write_text(text.replace("/usr/local/bin/vllm", "/bin/true"))
    p = subprocess.run(
        [SYSTEMD_ANALYZE, "verify", "--man=no", str(unit)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert (p.returncode, p.stdout + p.stderr) == (0, "")


# ---- what is refused, in one line --------------------------------------------------------------

BASE: dict[str, Any] = {"model": "m", "image": "vllm/vllm-openai:v0.32.0", "artifacts_dir": "/a"}


def _render(tmp_path: Path, data: dict[str, Any], *flags: str) -> tuple[int, str, str]:
    hf = tmp_path / "host.json"
    hf.write_text(json.dumps(data))
    return run_cli("render", "--host", str(hf), "--output", "-", *flags)


def test_the_command_checks_the_budgets_file_when_it_renders(tmp_path: Path) -> None:
    path, _prices = _files(tmp_path)
    code, out, err = _render(tmp_path, {**BASE, "budgets": str(path)}, "--usage")
    assert (code, err) == (0, ""), err
    assert f"VLLM_LEDGER_BUDGETS={IN_CONTAINER}" in out
    hf = tmp_path / "host.json"
    bad = tmp_path / "bad.toml"
    bad.write_text('[[budget]]\nkey = "a"\ntokens = 5\nperiod = "week"\n')
    relative = tmp_path / "relative.toml"
    relative.write_text('prices = "prices.toml"\n[[budget]]\nkey = "a"\ncost = 5\n')
    cases = [
        (
            {**BASE, "budgets": str(bad)},
            ["--usage"],
            f"budgets: {bad}: budget 1: period must be day or month, not 'week': see "
            "docs/budgets.md",
        ),
        (
            {**BASE, "budgets": str(tmp_path / "none.toml")},
            ["--usage"],
            f"budgets: cannot read {tmp_path / 'none.toml'}: No such file or directory: see "
            "docs/budgets.md",
        ),
        (
            {**BASE, "budgets": str(relative)},
            ["--usage"],
            f"budgets: {relative}: prices 'prices.toml' must be an absolute path: vLLM's "
            "enforcer does not run in this folder: see docs/budgets.md",
        ),
        (
            {**BASE, "budgets": str(path)},
            [],
            "budgets: the budgets are judged from the ledger and refused by its middleware: "
            "render with --usage",
        ),
        (
            {**BASE, "budgets": "/etc/a:b.toml"},
            ["--usage"],
            "budgets: a docker volume path cannot contain ':'",
        ),
        (
            {**BASE, "budgets": "/etc/budgets.yaml"},
            ["--usage"],
            'budgets: "/etc/budgets.yaml" must be an absolute path ending in .toml or .json',
        ),
    ]
    for data, flags, line in cases:
        code, out, err = _render(tmp_path, data, *flags)
        assert (code, out) == (2, ""), (line, err)
        assert err == f"vllm-ledger: error: host file {hf}: {line}\n", line


def test_the_host_file_reads_back_from_a_host() -> None:
    from vllm_ledger.deploy.host import host_data

    h = host()
    assert host_data(h)["budgets"] == ON_HOST
    assert parse_host(host_data(h)) == h
    assert "budgets" not in host_data(parse_host(BASE))


def test_without_budgets_nothing_changes() -> None:
    h = parse_host(BASE)
    assert "BUDGETS" not in render_script(h, mode="docker", usage=True)
    assert [m.doc["kind"] for m in manifests(h, usage=True)] == [
        "StatefulSet", "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap"
    ]  # fmt: skip
    with pytest.raises(ConfigError):
        render_script(parse_host({**BASE, "budgets": "/x.toml"}), mode="docker", usage=False)
