"""Fixtures shared by the tests: the tiny model, a plugin bundle, real vLLM servers; an
isolated root for the in-process plugin, a ledger root with one closed run, a fake chat
platform, the exporter's servers to stop."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hypothesis import settings

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devtools.file_order import load_seconds, longest_first  # noqa: E402
from devtools.tiny_model import make_tiny_model  # noqa: E402
from devtools.vllm_server import VllmServer, free_port  # noqa: E402
from vllm_ledger.deploy.bundle import bundle  # noqa: E402

if TYPE_CHECKING:
    from tests.e2e.notifier_fakes import FakePlatform
    from tests.rawhttp import DripServer
    from vllm_ledger.observe.server import MetricsServer

# render parses its vllm serve argv with the installed vLLM (about 10 s a render here): off for
# the suite, on in tests/test_vllm_flags.py, which parses every golden render's argv at once.
os.environ.setdefault("VLLM_LEDGER_FLAG_CHECK", "off")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest files first (``devtools/file_order.py``): with ``--dist loadfile
    --no-loadscope-reorder`` both workers stay busy to the end."""
    files: dict[str, list[pytest.Item]] = {}
    for item in items:
        files.setdefault(item.nodeid.split("::", 1)[0], []).append(item)
    items[:] = longest_first(list(files.items()), load_seconds())


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    return make_tiny_model(REPO / "build" / "tiny-model").resolve()


@pytest.fixture(scope="session")
def plugin_bundle(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin as a PYTHONPATH folder: how vLLM loads it in these tests (no install)."""
    dest = tmp_path_factory.mktemp("bundle") / "plugin"
    bundle(dest)
    return dest


ServerFactory = Callable[..., VllmServer]


@pytest.fixture
def vllm_server(tiny_model: Path, plugin_bundle: Path, tmp_path: Path) -> Iterator[ServerFactory]:
    """Start real `vllm serve` processes on 127.0.0.1; all are stopped, by pid, at the end.

    ``vllm_server(ledger_dir, extra_args=[...], ledger=True)`` returns a started server.
    """
    started: list[VllmServer] = []

    def start(
        ledger_dir: Path | None = None,
        *,
        extra_args: tuple[str, ...] = (),
        ledger: bool = True,
        served_name: str | tuple[str, ...] = "tiny",
        env: dict[str, str] | None = None,
        port: int | None = None,
    ) -> VllmServer:
        e = dict(env or {})
        if ledger_dir is not None:
            e["VLLM_LEDGER_DIR"] = str(ledger_dir)
        s = VllmServer(
            tiny_model,
            port=free_port() if port is None else port,
            served_name=served_name,
            extra_args=extra_args,
            env=e,
            pythonpath=[plugin_bundle] if ledger else [],
            log_path=tmp_path / f"vllm-{len(started)}.log",
        )
        started.append(s)
        s.start()
        return s

    yield start
    for s in started:
        s.stop()


@pytest.fixture
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated ledger root for the in-process plugin: run ``run-a``, no maintenance pass,
    the ledger neither disabled nor told how many writers to expect."""
    root = tmp_path / "ledger"
    monkeypatch.setenv("VLLM_LEDGER_DIR", str(root))
    monkeypatch.setenv("VLLM_LEDGER_RUN_ID", "run-a")
    monkeypatch.setenv("VLLM_LEDGER_MAINTENANCE", "0")
    monkeypatch.delenv("VLLM_LEDGER_DISABLE", raising=False)
    monkeypatch.delenv("VLLM_LEDGER_WRITERS", raising=False)
    return root


@pytest.fixture
def platform() -> Iterator[FakePlatform]:
    """A fake chat platform (a real HTTP server on 127.0.0.1) that records what is posted."""
    from tests.e2e.notifier_fakes import FakePlatform

    p = FakePlatform()
    yield p
    p.close()


@pytest.fixture
def servers() -> Iterator[list[MetricsServer]]:
    """The exporter's servers a test started (appended here): each stopped at the end."""
    made: list[MetricsServer] = []
    yield made
    for s in made:
        s.stop()


@pytest.fixture
def drip_server(request: pytest.FixtureRequest) -> Iterator[DripServer]:
    """A ``tests.rawhttp.DripServer`` answering with ``request.param``, a (head, drip) pair
    (``HEADERS_DRIP``, ``BODY_DRIP``); closed at the end."""
    from tests.rawhttp import DripServer

    head, drip = request.param
    server = DripServer(head, drip)
    yield server
    server.close()


SRV_RUN = "20261201-080000-a1b2"


@pytest.fixture
def srv(tmp_path: Path) -> Path:
    """``srv/usage`` is the root: one closed run (``SRV_RUN``, three hours ago) in it."""
    from tests.ledgers import ev, write_ledger

    start = float(int(time.time()) - 3 * 3600)
    root = tmp_path / "srv" / "usage"
    root.mkdir(parents=True)
    write_ledger(root, SRV_RUN, start_ts=start, end_ts=start + 60, events=[ev(start + 10, 100, 20)])
    return root


def run_cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run `python -m vllm_ledger ARGS` as a user would; returns (exit code, stdout, stderr)."""
    import subprocess

    full_env = dict(os.environ)
    full_env["PYTHONPATH"] = str(REPO)
    if env:
        full_env.update(env)
    p = subprocess.run(
        [sys.executable, "-m", "vllm_ledger", *args],
        capture_output=True,
        text=True,
        env=full_env,
        timeout=120,
    )
    return p.returncode, p.stdout, p.stderr


# Hypothesis: "ci" (the default, and what CI runs) is fixed and small enough for `make test`;
# "fuzz" (`make fuzz`, HYPOTHESIS_PROFILE=fuzz) runs many more examples from a random seed.
# No example database: nothing is written into the checkout; a failure prints its blob for
# @reproduce_failure.
settings.register_profile(
    "ci", max_examples=200, derandomize=True, deadline=None, print_blob=True, database=None
)
settings.register_profile(
    "fuzz", max_examples=3000, derandomize=False, deadline=None, print_blob=True, database=None
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or "ci")
