"""The doctor's interface check under each vLLM release whose env `make compat` built.

`make compat` (scripts/compat.py) builds one virtualenv per release under build/compat/; this
runs `vllm-ledger doctor --only interface` (every class, field and signature the adapter
reads, and one record() round trip through the plugin) with that env's Python and this
checkout on PYTHONPATH. An env that is not there is skipped, with the reason: a fresh clone
has none, and `make test` does not build them.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("compat", REPO / "scripts" / "compat.py")
assert _spec is not None and _spec.loader is not None
compat = importlib.util.module_from_spec(_spec)
sys.modules["compat"] = compat
_spec.loader.exec_module(compat)


@pytest.mark.parametrize("release", compat.RELEASES, ids=[r.name for r in compat.RELEASES])
def test_interface_check_passes_under_each_built_release(release: Any) -> None:
    env_dir = compat.env_dir(release)
    if not (env_dir / compat.READY).exists():
        pytest.skip(f"no env for {release.dist}=={release.version} (`make compat` builds it)")
    env = dict(os.environ, PYTHONPATH=str(REPO), VLLM_TARGET_DEVICE="cpu")
    env.pop("VLLM_LEDGER_DIR", None)
    p = subprocess.run(
        [str(compat.env_python(release)), "-m", "vllm_ledger", "doctor", "--only", "interface"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=str(REPO),
        check=False,
    )
    # vLLM's own warnings go to stdout too: the table starts at its header.
    out = p.stdout.splitlines()
    lines = out[out.index("check      result  what was checked") :] if out else []
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert lines[1].startswith(f"interface  pass    vLLM {release.version}: the 8 stats fields")
    assert "the plugin reads the 0.30-0.33 layout: IterationStats.iteration_timestamp" in lines[1]
    assert lines[2:] == ["1 of 1 checks pass"]
