"""A real Prometheus (Debian's /usr/bin/prometheus) for tests, plus promtool and PromQL helpers.

The server listens on 127.0.0.1 on a free port, keeps its TSDB under the test's tmp folder and
is stopped by pid.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devtools.ports import free_port

PROMETHEUS = shutil.which("prometheus") or "/usr/bin/prometheus"
PROMTOOL = shutil.which("promtool") or "/usr/bin/promtool"

_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "or", "and", "unless",
    "bool", "offset", "inf", "nan",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression selects (functions, keywords and labels left out)."""
    s = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)  # string literals
    s = re.sub(r"\{[^}]*\}", " ", s)  # label matchers
    s = re.sub(r"\[[^\]]*\]", " ", s)  # ranges
    s = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", s)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", s):
        rest = s[m.end() :].lstrip()
        if rest.startswith("("):
            continue  # a function or aggregation
        if m.group(0).lower() in _KEYWORDS:
            continue
        names.add(m.group(0))
    return names


def is_gpu_metric(name: str) -> bool:
    return name.startswith("DCGM_") or name.startswith("vllm_ledger_gpu_")


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PROMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=cwd)


def rule_test_series(name: str, labels: dict[str, str], values: str) -> dict[str, str]:
    """One input series of a ``promtool test rules`` file: ``name{labels}`` and its values."""
    inner = ",".join(f'{k}="{v}"' for k, v in labels.items())
    return {"series": f"{name}{{{inner}}}", "values": values}


def observability_stack(tmp_path: Path, *args: str) -> Path:
    """``vllm-ledger observability tmp_path/stack ARGS`` run as a user runs it; the folder."""
    from tests.conftest import run_cli

    out = tmp_path / "stack"
    code, _stdout, err = run_cli("observability", str(out), *args)
    assert code == 0, err
    return out


def _spawn_until_ready(
    argv: list[str], ready_url: str, log_path: Path, name: str, timeout_s: float, poll_s: float
) -> subprocess.Popen[bytes]:
    """Start a server in its own session, logging to ``log_path``, and wait until ``ready_url``
    answers 200; a server that exits or is not ready in time is stopped and raised."""
    log = open(log_path, "ab")  # noqa: SIM115
    proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{name} exited with {proc.returncode}; log: {log_path}")
        with contextlib.suppress(OSError):
            with urllib.request.urlopen(ready_url, timeout=2) as r:
                if r.status == 200:
                    return proc
        time.sleep(poll_s)
    _stop(proc)
    raise TimeoutError(f"{name} not ready after {timeout_s} s; log: {log_path}")


def _stop(proc: subprocess.Popen[bytes] | None) -> None:
    """SIGTERM by pid, SIGKILL after 20 s."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(10)


NODE_EXPORTER = shutil.which("prometheus-node-exporter") or "/usr/bin/prometheus-node-exporter"


@contextlib.contextmanager
def node_exporter(port: int, log: Path) -> Iterator[str]:
    """A real node exporter (Debian's) on 127.0.0.1:PORT (its address), stopped by pid."""
    proc = _spawn_until_ready(
        [NODE_EXPORTER, f"--web.listen-address=127.0.0.1:{port}"],
        f"http://127.0.0.1:{port}/metrics",
        log,
        "prometheus-node-exporter",
        30.0,
        0.2,
    )
    try:
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)


@dataclass
class Prometheus:
    config: Path
    data_dir: Path
    log_path: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 60.0) -> Prometheus:
        self.port = self.port or free_port()
        self.proc = _spawn_until_ready(
            [
                PROMETHEUS,
                f"--config.file={self.config}",
                f"--storage.tsdb.path={self.data_dir}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--web.enable-lifecycle",
            ],
            self.url + "/-/ready",
            self.log_path,
            "prometheus",
            timeout_s,
            0.3,
        )
        return self

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None

    def api(self, path: str, **params: str) -> dict[str, Any]:
        url = f"{self.url}/api/v1/{path}"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                doc: dict[str, Any] = json.loads(r.read())
        except urllib.error.HTTPError as exc:  # 400 on a bad expression: keep the error text
            doc = json.loads(exc.read())
        return doc

    def query(self, expr: str) -> dict[str, Any]:
        """The /api/v1/query answer: {"status": ..., "data": {"resultType", "result"}}."""
        return self.api("query", query=expr)

    def vector(self, expr: str) -> list[dict[str, Any]]:
        doc = self.query(expr)
        assert doc["status"] == "success", (expr, doc)
        result: list[dict[str, Any]] = doc["data"]["result"]
        return result

    def vector_when_any(self, expr: str, timeout_s: float = 30.0) -> list[dict[str, Any]]:
        """``vector(expr)``'s first non-empty answer within ``timeout_s`` (else the empty one).

        A gauge's series is stale for a moment after one failed scrape (a 1 s scrape that timed
        out on a loaded machine): a single read can find it empty though the target is fine.
        """
        deadline = time.monotonic() + timeout_s
        while not (result := self.vector(expr)) and time.monotonic() < deadline:
            time.sleep(0.5)
        return result

    def scalar_when_any(self, expr: str, timeout_s: float = 30.0) -> float | None:
        """``scalar(expr)`` once it has a value (``vector_when_any``), or None after the wait."""
        return _one_value(expr, self.vector_when_any(expr, timeout_s))

    def scalar(self, expr: str) -> float | None:
        """The value of a one-element vector, or None when the result is empty."""
        return _one_value(expr, self.vector(expr))

    def targets(self) -> dict[str, tuple[str, str]]:
        """job/instance -> (health, the last scrape's error) of every active target."""
        doc = self.api("targets")
        return {
            t["labels"]["job"] + "/" + t["labels"]["instance"]: (t["health"], t["lastError"])
            for t in doc["data"]["activeTargets"]
        }

    def targets_up(self) -> dict[str, str]:
        return {k: health for k, (health, _err) in self.targets().items()}

    def wait_targets(self, want: dict[str, str], timeout_s: float = 30.0) -> None:
        """Until every target's health is WANT's (job/instance -> "up" or "down").

        One scrape's health is not steady: a scrape of a slow target on a loaded machine can
        time out once and mark it down until the next. Fails with each target's last error.
        """
        deadline = time.monotonic() + timeout_s
        while True:
            seen = self.targets()
            if {k: health for k, (health, _err) in seen.items()} == want:
                return
            if time.monotonic() >= deadline:
                raise AssertionError(f"targets not as {want} within {timeout_s} s: {seen}")
            time.sleep(0.5)


def _one_value(expr: str, result: list[dict[str, Any]]) -> float | None:
    """The value of a one-element vector, or None when ``result`` is empty."""
    if not result:
        return None
    assert len(result) == 1, (expr, result)
    return float(result[0]["value"][1])


VICTORIA_METRICS = shutil.which("victoria-metrics") or "/usr/bin/victoria-metrics"


@dataclass
class VictoriaMetrics:
    """A real VictoriaMetrics single-node (Debian's /usr/bin/victoria-metrics) on 127.0.0.1: a
    remote-write target (``write_url``) with Prometheus' query API at ``url``. A query does not
    hide the newest samples (``-search.latencyOffset=0s``; the default hides the last 30 s), but a
    series written for the first time is served only some time after the write (about a second
    after ``force_flush``, up to 10 s without, in 1.79): a test waits until a query answers what
    it wrote (``vector``). Stopped by pid."""

    data_dir: Path
    log_path: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def write_url(self) -> str:
        return f"{self.url}/api/v1/write"

    def start(self, timeout_s: float = 60.0) -> VictoriaMetrics:
        self.port = self.port or free_port()
        self.proc = _spawn_until_ready(
            [
                VICTORIA_METRICS,
                f"-storageDataPath={self.data_dir}",
                f"-httpListenAddr=127.0.0.1:{self.port}",
                "-retentionPeriod=1d",
                "-search.latencyOffset=0s",
                "-search.disableCache",
            ],
            self.url + "/health",
            self.log_path,
            "victoria-metrics",
            timeout_s,
            0.2,
        )
        return self

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None

    def import_prometheus(self, text: str, **extra_labels: str) -> None:
        """Write exposition text (samples with or without a timestamp in milliseconds; without,
        VictoriaMetrics stamps them on arrival) through ``/api/v1/import/prometheus``, each
        series with ``extra_labels`` added, then flush. A query may still answer without them
        for about a second, each import on its own: wait on a query for what the test needs."""
        params = [("extra_label", f"{k}={v}") for k, v in sorted(extra_labels.items())]
        url = f"{self.url}/api/v1/import/prometheus"
        if params:
            url += "?" + urllib.parse.urlencode(params)
        req = urllib.request.Request(url, data=text.encode(), method="POST")
        with urllib.request.urlopen(req, timeout=60) as r:
            assert r.status in (200, 204), r.status
        self.force_flush()

    def force_flush(self) -> None:
        """Flush every sample written so far (``/internal/force_flush``): new series are served
        about a second later, not at once."""
        with urllib.request.urlopen(self.url + "/internal/force_flush", timeout=60) as r:
            assert r.status == 200, r.status

    def vector(self, expr: str) -> list[dict[str, Any]]:
        """The result of the instant query ``expr`` now (``/api/v1/query``)."""
        url = f"{self.url}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=30) as r:
            doc: dict[str, Any] = json.loads(r.read())
        assert doc["status"] == "success", (expr, doc)
        result: list[dict[str, Any]] = doc["data"]["result"]
        return result


ALERTMANAGER = shutil.which("prometheus-alertmanager") or "/usr/bin/prometheus-alertmanager"


@dataclass
class Alertmanager:
    """A real Alertmanager (Debian's prometheus-alertmanager) on 127.0.0.1, clustering off,
    its state under the test's tmp folder; stopped by pid."""

    config: Path
    data_dir: Path
    log_path: Path
    port: int = 0
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout_s: float = 30.0) -> Alertmanager:
        self.port = self.port or free_port()
        self.proc = _spawn_until_ready(
            [
                ALERTMANAGER,
                f"--config.file={self.config}",
                f"--storage.path={self.data_dir}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--cluster.listen-address=",
            ],
            self.url + "/-/ready",
            self.log_path,
            "alertmanager",
            timeout_s,
            0.2,
        )
        return self

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts it holds now (/api/v2/alerts)."""
        with urllib.request.urlopen(self.url + "/api/v2/alerts", timeout=10) as r:
            doc: list[dict[str, Any]] = json.loads(r.read())
        return doc
