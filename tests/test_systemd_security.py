"""The vLLM unit's sandbox, scored by the real ``systemd-analyze security --offline=yes``: the
overall exposure (0 = locked down, 10 = none) stays below 5.0 ("OK") for the golden host files,
with and without the ledger, for the dedicated account and a named one, and is the figure
docs/launch.md gives. Each test prints the figure it measured (``pytest -rA`` shows it) and
names it in its assertion messages."""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from vllm_ledger.deploy.host import load_host
from vllm_ledger.deploy.units import vllm_unit

DATA = REPO / "tests" / "data" / "render"
LAUNCH_DOC = REPO / "docs" / "launch.md"
SYSTEMD_ANALYZE = shutil.which("systemd-analyze")
MAX_EXPOSURE = 5.0
_OVERALL = re.compile(r"Overall exposure level for (\S+): (\d+\.\d) ")
_DOCS_FIGURE = re.compile(r"rates the golden units at exposure (\d+\.\d) \(")


def exposure(unit: Path) -> float:
    """The overall exposure ``systemd-analyze security --offline=yes`` gives ``unit``; printed."""
    assert SYSTEMD_ANALYZE is not None
    proc = subprocess.run(
        [SYSTEMD_ANALYZE, "security", "--offline=yes", "--no-pager", str(unit)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    found = _OVERALL.search(proc.stdout)
    assert found is not None, proc.stdout + proc.stderr
    assert found.group(1) == unit.name
    figure = float(found.group(2))
    print(f"systemd-analyze security --offline=yes: {unit.name} exposure {figure}")
    return figure


def docs_figure() -> float:
    """The exposure docs/launch.md states for the golden units."""
    (figure,) = _DOCS_FIGURE.findall(LAUNCH_DOC.read_text())
    return float(figure)


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="no systemd-analyze here")
@pytest.mark.parametrize("name", ["gpu-node", "cpu-bare"])
@pytest.mark.parametrize("usage", [False, True])
@pytest.mark.parametrize("user", [None, "alice"])
def test_vllm_unit_exposure_is_below_5(
    name: str, usage: bool, user: str | None, tmp_path: Path
) -> None:
    exe = tmp_path / "vllm"
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    h = dataclasses.replace(load_host(DATA / f"{name}.json"), vllm_executable=str(exe), user=user)
    unit = tmp_path / f"{name}.service"
    unit.write_text(vllm_unit(h, usage=usage))
    figure = exposure(unit)
    assert figure < MAX_EXPOSURE, f"{unit.name} exposure {figure}, not below {MAX_EXPOSURE}"
    documented = docs_figure()
    assert figure == documented, f"{unit.name} exposure {figure}; docs/launch.md says {documented}"


@pytest.mark.skipif(SYSTEMD_ANALYZE is None, reason="no systemd-analyze here")
def test_the_figure_in_the_docs_is_the_golden_units(tmp_path: Path) -> None:
    """docs/launch.md states the exposure of the golden units; all four score the same."""
    figures = {}
    for path in sorted(DATA.glob("*.systemd*.service")):
        unit = tmp_path / path.name
        unit.write_text(path.read_text().replace("/usr/local/bin/vllm", "/bin/true"))
        figures[path.name] = exposure(unit)
    assert len(figures) == 4, figures
    assert len(set(figures.values())) == 1, f"the golden units score differently: {figures}"
    (figure,) = set(figures.values())
    documented = docs_figure()
    assert figure == documented, f"golden units exposure {figure}; docs/launch.md says {documented}"
    assert f"exposure {figure} " in LAUNCH_DOC.read_text()
