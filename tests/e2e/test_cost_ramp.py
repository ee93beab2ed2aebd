"""cost, ramp and advise against one real vLLM 0.32 server on CPU (started once for the module,
with --api-key, as every rendered launch is).

ramp authenticates with the host file's key (a file), and with a wrong key or none every request
is refused: the failures reported with HTTP 401, exit 4, no knee drawn.

The ramp's HTML page is opened in Debian's headless Chromium and the screenshot is read back
with PIL: the chart's line colours must be on the page (and are not on a page without it).
The knee and table tests at the bottom need no server.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from devtools.traffic import send_mix
from devtools.vllm_server import VllmServer
from tests.conftest import run_cli
from tests.e2e.prom import Prometheus
from tests.e2e.settle import settle
from tests.ledgers import ev, write_ledger
from vllm_ledger.formats.ramp import OUTPUT_NAMES, render_files, render_table
from vllm_ledger.plan.ramp import StepResult, find_knee, percentile

CHROMIUM = "/usr/bin/chromium"
API_KEY = "sk-ramp-test-key"
PRICES = {"electricity": 1.2, "hardware": 30000.0, "years": 4.0, "ops": 0.25, "watts": 350.0}
PRICE_FLAGS = (
    "--power-watts", "350", "--electricity-price", "1.2", "--hardware-price", "30000",
    "--lifetime-years", "4", "--ops-per-hour", "0.25",
)  # fmt: skip
# matplotlib's C0 (throughput), C1 (TTFT P50), C2 (TPOT): the lines drawn on the chart
LINE_RGB = {"C0": (31, 119, 180), "C1": (255, 127, 14), "C2": (44, 160, 44)}


@pytest.fixture(scope="module")
def served(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, plugin_bundle: Path
) -> Iterator[tuple[VllmServer, Path]]:
    """One real `vllm serve` with the ledger on, for every test in this module."""
    d = tmp_path_factory.mktemp("cost-ramp")
    root = d / "ledger"
    server = VllmServer(
        tiny_model,
        env={"VLLM_LEDGER_DIR": str(root)},
        pythonpath=[plugin_bundle],
        log_path=d / "vllm.log",
        extra_args=("--api-key", API_KEY),
    )
    server.start()
    try:
        yield server, root
    finally:
        server.stop()


def _busy_seconds_from_files(root: Path, start: int, cutoff: int) -> int:
    """Independent check: distinct seconds with output, read straight from the ledger files."""
    seconds: set[int] = set()
    for f in root.rglob("*.ledger.sqlite"):
        with sqlite3.connect(f"file:{f}?mode=ro", uri=True) as conn:
            q = "SELECT ts FROM buckets WHERE generation_tokens > 0 AND ts >= ? AND ts < ?"
            seconds.update(r[0] for r in conn.execute(q, (start, cutoff)))
    return len(seconds)


@pytest.mark.e2e
def test_cost_on_a_real_ledger_matches_a_hand_computation(
    served: tuple[VllmServer, Path],
) -> None:
    server, root = served
    send_mix(server.url, "tiny", rounds=2, api_key=API_KEY)
    counters = settle(server)
    time.sleep(2.2)  # the report leaves out the unfinished second; let the last commit land
    at = str(int(time.time()))
    code, out, err = run_cli("report", "--root", str(root), "--json", "--at", at)
    assert code == 0, err
    w = json.loads(out)["windows"]["total"]
    assert {k: w[k] for k in ("input", "output", "cached")} == {
        k: counters[k] for k in ("input", "output", "cached")
    }
    cost_args = ("cost", "--root", str(root), "--at", at, "--window", "total", *PRICE_FLAGS)
    code, out, err = run_cli(*cost_args, "--json")
    assert code == 0, err
    doc = json.loads(out)

    # By hand, from `report --json` and the prices alone.
    p = PRICES
    per_hour = p["watts"] / 1000 * p["electricity"] + p["hardware"] / (p["years"] * 8760) + p["ops"]
    hours = w["wall_seconds"] / 3600
    total = w["input"] + w["output"]
    alloc_out = hours * per_hour / (w["output"] / 1e6)
    alloc_total = hours * per_hour / (total / 1e6)
    assert doc["wall_seconds"] == w["wall_seconds"] and doc["hours"] == hours
    assert round(doc["allocation"]["per_million_output"], 2) == round(alloc_out, 2)
    assert round(doc["allocation"]["per_million_total"], 2) == round(alloc_total, 2)
    assert doc["uncovered_seconds"] == w["uncovered_seconds"]
    assert doc["lower_bound"] is (w["uncovered_seconds"] > 0)

    busy = _busy_seconds_from_files(root, w["start"], w["cutoff"])
    assert 0 < busy <= w["wall_seconds"]
    assert doc["busy_seconds"] == busy and doc["busy_resolution_seconds"] == 1
    usage_out = p["watts"] / 1000 * p["electricity"] * busy / 3600 / (w["output"] / 1e6)
    assert round(doc["usage"]["per_million_output"], 2) == round(usage_out, 2)

    code, text, err = run_cli(*cost_args)
    assert code == 0, err
    assert f"{alloc_out:,.2f}" in text and f"{usage_out:,.2f}" in text
    assert f"output {w['output']:,}" in text


@pytest.mark.e2e
def test_ramp_three_steps_agree_with_the_servers_counters(
    served: tuple[VllmServer, Path], tmp_path: Path
) -> None:
    server, _root = served
    out_dir = tmp_path / "ramp"
    # The URL, the model and the key from the host file (its key a file, read by ramp).
    key = tmp_path / "api.key"
    key.write_text(API_KEY + "\n")
    host = tmp_path / "host.json"
    host.write_text(json.dumps({
        "model": "/models/tiny", "served_model_name": "tiny", "host": "127.0.0.1",
        "port": server.port, "api_key": {"file": str(key)},
    }))  # fmt: skip
    code, out, err = run_cli(
        "ramp", "--host", str(host), "--concurrency", "1,2,4",
        "--duration", "3", "--max-tokens", "16", "--output", str(out_dir),
        env={"VLLM_API_KEY": "sk-not-this-one"},  # the host file's key comes first
    )  # fmt: skip
    assert code == 0, err
    for c in (1, 2, 4):
        assert f"concurrency {c:>3}" in err  # a progress bar per step
    doc = json.loads((out_dir / "ramp.json").read_text())
    steps = doc["steps"]
    assert [s["concurrency"] for s in steps] == [1, 2, 4]
    for s in steps:
        assert s["errors"] == 0 and s["requests"] >= s["concurrency"]
        assert s["output_tokens"] == 16 * s["requests"]  # ignore_eos: every request makes 16
        assert s["server_output_tokens"] == s["output_tokens"]
        assert s["server_prompt_tokens"] == s["prompt_tokens"] > 0
        assert s["ttft_p50_s"] <= s["ttft_p99_s"]
        assert s["tpot_s"] > 0 and s["client_tpot_s"] is not None
        assert s["kv_usage_max"] is not None and s["waiting_max"] is not None
    assert out.splitlines()[0].split()[:2] == ["concurrency", "requests"]
    assert out.count("\n") == 5  # header, three steps, knee: no step with errors
    for name in OUTPUT_NAMES:  # the files on stderr, one line each, the path absolute
        assert f"wrote {out_dir / name}\n" in err
    assert "knee: " in out
    png = Image.open(out_dir / "ramp.png")
    assert png.size == (1200, 400)
    page = (out_dir / "ramp.html").read_text()
    assert page.count("<svg") == 1
    assert "src=" not in page and 'href="http' not in page and "url(http" not in page

    shot = _screenshot(tmp_path, out_dir / "ramp.html", "page")
    counts = _line_pixels(shot)
    assert all(n > 150 for n in counts.values()), counts

    # The check can fail: the same page without its chart shows none of the line colours.
    bare = tmp_path / "bare.html"
    start, end = page.index("<svg"), page.index("</svg>") + len("</svg>")
    bare.write_text(page[:start] + page[end:])
    assert max(_line_pixels(_screenshot(tmp_path, bare, "bare")).values()) < 20


@pytest.mark.e2e
def test_ramp_with_a_wrong_key_or_none_reports_401_and_draws_no_knee(
    served: tuple[VllmServer, Path], tmp_path: Path
) -> None:
    server, _root = served
    for env in ({"VLLM_API_KEY": "sk-wrong"}, {"VLLM_API_KEY": ""}):
        out_dir = tmp_path / f"ramp{len(env['VLLM_API_KEY'])}"
        code, out, err = run_cli(
            "ramp", "--url", server.url, "--model", "tiny", "--concurrency", "2",
            "--duration", "1", "--max-tokens", "4", "--no-progress", "--output", str(out_dir),
            env=env,
        )  # fmt: skip
        assert code == 4, err
        doc = json.loads((out_dir / "ramp.json").read_text())
        [step] = doc["steps"]
        assert step["requests"] >= 2 and step["errors"] == step["requests"]
        assert step["first_error_status"] == 401 and step["output_tokens"] == 0
        assert doc["knee"] is None and doc["errors_over_limit"] is True
        lines = out.splitlines()
        assert lines[2].startswith(
            f"errors at concurrency 2: {step['requests']} of {step['requests']} requests "
            "(100.0 %), first HTTP 401: "
        )
        assert lines[3] == doc["verdict"]
        assert lines[3].startswith(f"knee: none drawn: {step['requests']} of ")
        assert "first HTTP 401: " in lines[3] and "--api-key-file" in lines[3]
        assert "sk-wrong" not in out + err + (out_dir / "ramp.json").read_text()


def _screenshot(tmp_path: Path, page: Path, name: str) -> Image.Image:
    shot = tmp_path / f"{name}.png"
    cmd = [
        CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
        "--force-device-scale-factor=1", f"--user-data-dir={tmp_path / ('profile-' + name)}",
        f"--screenshot={shot}", "--window-size=1200,900", page.resolve().as_uri(),
    ]  # fmt: skip
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, start_new_session=True)
    assert shot.exists(), r.stderr[-2000:]
    return Image.open(shot).convert("RGB")


def _line_pixels(img: Image.Image) -> dict[str, int]:
    """Pixels within a small distance of each line colour, in the chart area (top 600 rows)."""
    area = np.asarray(img.crop((0, 0, img.width, min(600, img.height))), dtype=int)
    return {
        name: int((np.abs(area - np.array(rgb)).sum(axis=2) < 40).sum())
        for name, rgb in LINE_RGB.items()
    }


@pytest.mark.e2e
def test_advise_live_on_cpu_says_what_it_cannot_judge(served: tuple[VllmServer, Path]) -> None:
    server, _root = served
    code, out, err = run_cli(
        "advise", "--metrics-url", server.url + "/metrics", "--sample-for", "2s", "--json"
    )
    assert code == 0, err
    doc = json.loads(out)
    assert doc["readings"]["kv_cache_usage"] == 0 and doc["readings"]["num_waiting"] == 0
    assert doc["readings"]["gpu_util_percent"] is None  # no GPU on this machine
    assert {r["rule"]: r["state"] for r in doc["rules"]} == {
        "kv-capacity": "missed",
        "compute-bound": "not judgeable",
        "scheduling-prefill": "not judgeable",
        "power-efficiency": "not judgeable",
    }


def _gpu_and_vllm_exporter(start: float) -> ThreadingHTTPServer:
    """A /metrics on 127.0.0.1: the captured vLLM text with generation growing 100 tokens/s,
    KV-cache usage 0.95 and 3 waiting, plus DCGM lines for one GPU at 98 % and 300 of 450 W.
    The generation sample carries the instant it was counted at (the exposition format's
    timestamp), so Prometheus' rate is 100 however late a loaded machine serves a scrape."""
    base = (Path(__file__).parent.parent / "data" / "vllm-0.32.0-metrics.txt").read_text()
    base = re.sub(r"(?m)^(vllm:kv_cache_usage_perc\{[^}]*\}) \S+$", r"\1 0.95", base)
    base = re.sub(r"(?m)^(vllm:num_requests_waiting\{[^}]*\}) \S+$", r"\1 3.0", base)

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            at_ms = int(time.time() * 1000)
            generated = 121 + 100 * (at_ms / 1000 - start)
            text = re.sub(
                r"(?m)^(vllm:generation_tokens_total\{[^}]*\}) \S+$",
                rf"\g<1> {generated} {at_ms}",
                base,
            )
            text += 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-0"} 98\n'
            text += 'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-0"} 300\n'
            text += 'DCGM_FI_DEV_POWER_MGMT_LIMIT{gpu="0",UUID="GPU-0"} 450\n'
            body = text.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.e2e
def test_cost_and_advise_read_a_real_prometheus(tmp_path: Path) -> None:
    start = time.time()
    exporter = _gpu_and_vllm_exporter(start)
    cfg = tmp_path / "prometheus.yml"
    cfg.write_text(
        "global: {scrape_interval: 1s, evaluation_interval: 1s}\n"
        "scrape_configs:\n"
        "  - job_name: node\n"
        f"    static_configs: [{{targets: ['127.0.0.1:{exporter.server_address[1]}']}}]\n"
    )
    prom = Prometheus(cfg, tmp_path / "tsdb", tmp_path / "prometheus.log").start()
    try:
        deadline = time.monotonic() + 60
        while (prom.scalar("count_over_time(DCGM_FI_DEV_POWER_USAGE[1m])") or 0) < 10:
            assert time.monotonic() < deadline, "Prometheus scraped too little"
            time.sleep(1)
        at = int(time.time()) - 1
        root = tmp_path / "ledger"
        events = [ev(at - 5.5, prompt=3000, gen=1000, cached=1000)]
        write_ledger(root, "run-a", start_ts=at - 8, end_ts=at, events=events)
        code, out, err = run_cli(
            "cost", "--root", str(root), "--at", str(at), "--window", "total",
            "--prometheus", prom.url, *PRICE_FLAGS[2:], "--json",
        )  # fmt: skip
        assert code == 0, err
        doc = json.loads(out)
        assert doc["power_watts"] == 300
        assert doc["power_source"] == "sum(avg_over_time(DCGM_FI_DEV_POWER_USAGE[8s]))"
        assert doc["busy_seconds"] == 1 and doc["wall_seconds"] == 8

        want = {
            "kv-capacity": "met",
            "compute-bound": "met",  # 98 % and throughput flat between the range's halves
            "scheduling-prefill": "not judgeable",  # no first token in the range
            "power-efficiency": "missed",  # 300 W of 450 W is not full load
        }
        # Each half's rate is over 4 s of 1 s scrapes: a scrape a loaded machine delays or
        # drops cuts Prometheus's extrapolation, so one half can read a rise. Asked until the
        # scrapes of the last 8 s were steady (a verdict that never comes fails).
        deadline = time.monotonic() + 45
        while True:
            code, out, err = run_cli("advise", "--prometheus", prom.url, "--range", "8", "--json")
            assert code == 0, err
            doc = json.loads(out)
            got = {x["rule"]: x["state"] for x in doc["rules"]}
            rate = doc["readings"]["gen_tokens_per_s"]
            steady = got == want and rate == pytest.approx(100, rel=0.05)
            if steady or time.monotonic() > deadline:
                break
            time.sleep(1)
        r = doc["readings"]
        assert (r["kv_cache_usage"], r["num_waiting"], r["gpu_util_percent"]) == (0.95, 3, 98)
        assert (r["power_watts"], r["power_limit_watts"]) == (300, 450)
        assert r["gen_tokens_per_s"] == pytest.approx(100, rel=0.05)
        assert got == want, doc["rules"]
    finally:
        prom.stop()
        exporter.shutdown()


# ---- no server needed --------------------------------------------------------------------


def _step(c: int, tokens: int, kv: float = 0.2, seconds: float = 10.0) -> StepResult:
    return StepResult(
        concurrency=c, seconds=seconds, requests=tokens // 16, errors=0, prompt_tokens=tokens,
        output_tokens=tokens, server_prompt_tokens=tokens, server_output_tokens=tokens,
        ttft_p50_s=0.01 * c, ttft_p99_s=0.02 * c, tpot_s=0.005 * c, client_tpot_s=None,
        kv_usage_max=kv, kv_usage_mean=kv / 2, waiting_max=0.0, waiting_mean=0.0,
    )  # fmt: skip


def test_knee_where_throughput_stops_rising() -> None:
    steps = [_step(1, 1000), _step(2, 1900), _step(4, 3500), _step(8, 3700), _step(16, 3000)]
    knee = find_knee(steps)
    assert knee is not None and (knee.index, knee.concurrency) == (3, 8)
    assert knee.reason == "throughput +6 % over concurrency 4 (350.0 -> 370.0 tokens/s)"


def test_knee_where_kv_cache_crosses_90_percent() -> None:
    steps = [_step(1, 1000), _step(2, 1900, kv=0.93), _step(4, 3500, kv=0.99)]
    knee = find_knee(steps)
    assert knee is not None and knee.concurrency == 2
    assert knee.reason == "KV-cache usage reached 93 %"
    assert find_knee(steps[:1]) is None


def test_percentile_is_nearest_rank() -> None:
    values = [float(x) for x in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99)) == (50.0, 99.0)
    assert percentile([3.0], 0.99) == 3.0 and percentile([], 0.5) is None


def test_outputs_table_png_html() -> None:
    steps = [_step(1, 1000), _step(2, 1900), _step(4, 1950)]
    knee = find_knee(steps)
    assert render_table(steps, knee).splitlines() == [
        "concurrency  requests  errors  seconds  output tokens  server output  tokens/s"
        "  TTFT P50 ms  TTFT P99 ms  TPOT ms  KV max %  waiting max",
        "          1        62       0     10.0           1000           1000     100.0"
        "           10           20        5      20.0          0.0",
        "          2       118       0     10.0           1900           1900     190.0"
        "           20           40       10      20.0          0.0",
        "          4       121       0     10.0           1950           1950     195.0"
        "           40           80       20      20.0          0.0",
        "knee: concurrency 4: throughput +3 % over concurrency 2 (190.0 -> 195.0 tokens/s)",
    ]
    files = render_files(steps, knee, "t")
    assert list(files) == ["png", "html", "json", "csv"]
    assert files["png"][:8] == b"\x89PNG\r\n\x1a\n"
    assert files["csv"].decode().splitlines()[1].startswith("1,62,0,10.0,1000")
    page = files["html"].decode()
    assert "<svg" in page and "knee: concurrency 4" in page
    assert json.loads(files["json"])["knee"]["concurrency"] == 4
