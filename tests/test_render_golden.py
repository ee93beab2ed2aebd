"""Golden files pin the rendered scripts and the host-file schema byte for byte.

tests/data/render/NAME.json is a host file; NAME.MODE.sh and NAME.MODE.usage.sh are what
`vllm-ledger render` writes for it (NAME.systemd*.service and NAME.compose*.yaml for the
systemd and compose modes, NAME.units/ for `render --units`); host.schema.json is
`render --print-schema`. After an
intended change, rewrite them with ``UPDATE_GOLDEN=1 pytest tests/test_render_golden.py`` and
review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import run_cli
from vllm_ledger.deploy.hostschema import schema_json

DATA = Path(__file__).resolve().parent / "data" / "render"
UPDATE = os.environ.get("UPDATE_GOLDEN") == "1"

CASES = [
    ("gpu-node", "docker", False),
    ("gpu-node", "docker", True),
    ("gpu-node", "bare", True),
    ("cpu-bare", "bare", False),
    ("cpu-bare", "bare", True),
]


def check_golden(path: Path, text: str) -> None:
    if UPDATE:
        path.write_text(text)
    assert path.read_text() == text, f"{path.name} changed: review, then UPDATE_GOLDEN=1"


@pytest.mark.parametrize(("name", "mode", "usage"), CASES)
def test_rendered_script_matches_golden(name: str, mode: str, usage: bool, tmp_path: Path) -> None:
    out = tmp_path / "run.sh"
    flags = ["--mode", mode] + (["--usage"] if usage else [])
    rc, _, err = run_cli(
        "render", "--host", str(DATA / f"{name}.json"), "--output", str(out), *flags
    )
    assert rc == 0, err
    check_golden(DATA / f"{name}.{mode}{'.usage' if usage else ''}.sh", out.read_text())


def test_stdout_output_is_the_same_bytes(tmp_path: Path) -> None:
    rc, out, err = run_cli(
        "render", "--host", str(DATA / "gpu-node.json"), "--output", "-", "--usage"
    )
    assert (rc, err) == (0, "")
    assert out == (DATA / "gpu-node.docker.usage.sh").read_text()


def test_schema_matches_golden() -> None:
    check_golden(DATA / "host.schema.json", schema_json())


# systemd and compose: NAME.systemd[.usage].service, NAME.compose[.usage].yaml.
SERVICE_CASES = [
    ("gpu-node", "systemd", False, "service"),
    ("gpu-node", "systemd", True, "service"),
    ("cpu-bare", "systemd", False, "service"),
    ("cpu-bare", "systemd", True, "service"),
    ("gpu-node", "compose", False, "yaml"),
    ("gpu-node", "compose", True, "yaml"),
]
# render --units: NAME.units/ holds every unit written (gpu-node with the notifier's).
UNIT_CASES = [
    ("gpu-node", ["--notifier-config", "/etc/vllm-ledger/notifier.json"]),
    ("cpu-bare", []),
]


def golden_name(name: str, mode: str, usage: bool, ext: str) -> str:
    return f"{name}.{mode}{'.usage' if usage else ''}.{ext}"


@pytest.mark.parametrize(("name", "mode", "usage", "ext"), SERVICE_CASES)
def test_rendered_service_matches_golden(
    name: str, mode: str, usage: bool, ext: str, tmp_path: Path
) -> None:
    out = tmp_path / f"out.{ext}"
    flags = ["--mode", mode] + (["--usage"] if usage else [])
    rc, _, err = run_cli(
        "render", "--host", str(DATA / f"{name}.json"), "--output", str(out), *flags
    )
    assert rc == 0, err
    assert out.stat().st_mode & 0o777 == 0o644  # a unit or compose file is not run
    check_golden(DATA / golden_name(name, mode, usage, ext), out.read_text())


@pytest.mark.parametrize(("name", "flags"), UNIT_CASES)
def test_rendered_units_match_golden(name: str, flags: list[str], tmp_path: Path) -> None:
    out = tmp_path / "units"
    rc, _, err = run_cli(
        "render", "--host", str(DATA / f"{name}.json"), "--units", str(out), *flags
    )
    assert rc == 0, err
    folder = DATA / f"{name}.units"
    written = {p.name: p.read_text() for p in out.iterdir()}
    if UPDATE:
        folder.mkdir(exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for unit_name, text in written.items():
            (folder / unit_name).write_text(text)
    assert written == {p.name: p.read_text() for p in folder.iterdir()}, (
        f"{folder.name} changed: review, then UPDATE_GOLDEN=1"
    )


def test_every_golden_file_is_checked() -> None:
    expected = {f"{n}.{m}{'.usage' if u else ''}.sh" for n, m, u in CASES}
    assert {p.name for p in DATA.glob("*.sh")} == expected
    assert {p.stem for p in DATA.glob("*.json")} == {"host.schema", *{n for n, _, _ in CASES}}
    services = {golden_name(*case) for case in SERVICE_CASES}
    assert {p.name for p in DATA.glob("*.service")} | {p.name for p in DATA.glob("*.yaml")} == (
        services
    )
    assert {p.name for p in DATA.glob("*.units")} == {f"{n}.units" for n, _ in UNIT_CASES}
