"""The ledger against vLLM's live counters (read/verify.py): the counters read from a real
/metrics text, the newest run's totals, and `verify` against a real HTTP server on 127.0.0.1.

A second real vLLM only to show "another server's /metrics" would cost a minute of start-up:
instead the recorded /metrics text of a real vLLM 0.32 is served with its ``_created`` samples
moved (what another server launched at another time would show), from a real HTTP server."""

from __future__ import annotations

import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from tests.ledgers import ev, write_ledger
from tests.rawhttp import RawServer, canned, drip, response
from vllm_ledger.errors import BadArgument, LedgerUnavailable, RedirectRefused, RemoteError
from vllm_ledger.read.verify import (
    SAME_LAUNCH_S,
    Difference,
    OtherServer,
    counters_created_ts,
    fetch_metrics,
    ledger_run,
    ledger_run_totals,
    verify,
    vllm_counters,
)
from vllm_ledger.units import format_instant

# Captured from vLLM 0.32.0 serving the tiny model (see tests/unit/plan/test_advise.py).
METRICS = (REPO / "tests" / "data" / "vllm-0.32.0-metrics.txt").read_text()
AT = 1_800_000_000.0
# What METRICS counts: 1065 prompt tokens (576 of them cached), 121 generated, 12 requests.
COUNTED = {"input": 1065, "output": 121, "cached": 576, "requests": 12}
# The run the tests compare starts here; METRICS is served as if its server started with it.
RUN_START = AT - 3600
_CREATED_LINE = re.compile(r"^(vllm:[a-z_:]+_created\{[^}]*\}) \S+$", re.M)


def created_at(text: str, ts: float) -> str:
    """``text`` with every ``_created`` sample moved to ``ts``: the same figures from a server
    launched at ``ts``."""
    return _CREATED_LINE.sub(lambda m: f"{m.group(1)} {ts!r}", text)


LAUNCHED_WITH_THE_RUN = created_at(METRICS, RUN_START + 1.5)


class MetricsServer:
    """A real HTTP server in a thread serving ``bodies`` at /metrics, one per request in order
    (the last one again and again); it counts the requests."""

    def __init__(self, bodies: list[str]) -> None:
        self.bodies = bodies
        self.requests = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/metrics":
                    self.send_error(404)
                    return
                body = outer.bodies[min(outer.requests, len(outer.bodies) - 1)].encode()
                outer.requests += 1
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/metrics"
        self.thread = threading.Thread(
            target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )

    def __enter__(self) -> MetricsServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


def _with_output(n: int) -> str:
    line = 'vllm:generation_tokens_total{engine="0",model_name="tiny"} 121.0'
    assert line in LAUNCHED_WITH_THE_RUN
    return LAUNCHED_WITH_THE_RUN.replace(line, line.replace("121.0", f"{n}.0"))


def _run(
    root: Path,
    run_id: str,
    start: float,
    *,
    prompt: int,
    gen: int,
    cached: int,
    n: int,
    live_at: float | None = None,
):
    """A run whose ledger holds these totals, ``n`` finished requests among them; closed after
    100 s, or with ``live_at`` still writing then (its last heartbeat a second before)."""
    write_ledger(
        root,
        run_id,
        start_ts=start,
        end_ts=start + 100 if live_at is None else live_at - 1,
        events=[ev(start + 10, prompt=prompt, gen=gen, cached=cached, finished=[(10, 0.5)] * n)],
        clean=live_at is None,
    )


def test_counters_from_real_vllm_metrics() -> None:
    assert vllm_counters(METRICS) == COUNTED
    # Summed over engines (and over every finished_reason of request_success).
    two_engines = METRICS + METRICS.replace('engine="0"', 'engine="1"')
    assert vllm_counters(two_engines) == {k: 2 * v for k, v in COUNTED.items()}


def test_metrics_without_the_counters_name_what_is_missing() -> None:
    text = "\n".join(
        ln
        for ln in METRICS.splitlines()
        if not ln.startswith(("vllm:prompt_tokens_cached_total", "vllm:request_success_total"))
    )
    with pytest.raises(RemoteError) as e:
        vllm_counters(text)
    assert str(e.value) == (
        "/metrics has no vllm:prompt_tokens_cached_total, vllm:request_success_total:"
        " is this a vLLM 0.32+ server?"
    )


def test_the_newest_run_is_the_one_that_started_last(tmp_path: Path) -> None:
    # Named so that the newest by name is the oldest by time.
    _run(tmp_path, "run-z", AT - 7200, prompt=5, gen=1, cached=0, n=1)
    _run(tmp_path, "run-a", AT - 3600, prompt=1065, gen=121, cached=576, n=12)
    assert ledger_run_totals([tmp_path], clock=lambda: AT) == ("run-a", COUNTED)
    assert ledger_run_totals([tmp_path], clock=lambda: AT, run_id="run-z") == (
        "run-z",
        {"input": 5, "output": 1, "cached": 0, "requests": 1},
    )
    with pytest.raises(LedgerUnavailable) as e:
        ledger_run_totals([tmp_path], clock=lambda: AT, run_id="run-q")
    assert str(e.value) == "run run-q not found under the roots"
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(LedgerUnavailable) as e:
        ledger_run_totals([empty], clock=lambda: AT)
    assert str(e.value) == f"no ledger file under {empty}: is the plugin on (VLLM_LEDGER_DIR)?"
    # One level too high or too low: the folder that is the root, named.
    root = tmp_path / "srv" / "usage"
    _run(root, "run-a", AT - 3600, prompt=5, gen=1, cached=0, n=1)
    for off in (root.parent, root / "run-a"):
        with pytest.raises(LedgerUnavailable) as e:
            ledger_run_totals([off], clock=lambda: AT)
        assert str(e.value) == f"no ledger file under {off}; did you mean --root {root}?"


def test_verify_matches_a_live_metrics_endpoint(tmp_path: Path) -> None:
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12)
    with MetricsServer([LAUNCHED_WITH_THE_RUN]) as server:
        result = verify([tmp_path], server.url, clock=lambda: AT, sleep=_no_sleep)
    assert result.match is True
    assert (result.run_id, result.ledger, result.vllm) == ("run-a", COUNTED, COUNTED)
    assert (result.differences, result.waited_s, server.requests) == ((), 0.0, 1)


def _no_sleep(s: float) -> None:
    raise AssertionError(f"verify slept {s} s after a match")


def test_verify_waits_for_the_ledger_then_reports_the_difference(tmp_path: Path) -> None:
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12, live_at=AT)
    now = [AT]
    slept: list[float] = []

    def sleep(s: float) -> None:
        slept.append(s)
        now[0] += s

    # vLLM counts one more output token than the ledger ever will: re-checked every second
    # until the wait is over, then named.
    with MetricsServer([_with_output(122)]) as server:
        result = verify([tmp_path], server.url, wait_s=3, clock=lambda: now[0], sleep=sleep)
    assert result.match is False
    assert result.differences == (
        Difference("output", "vllm:generation_tokens_total", ledger=121, vllm=122),
    )
    assert (result.waited_s, slept, server.requests) == (3.0, [1.0, 1.0, 1.0], 4)

    # The ledger catching up is the same as vLLM's counter settling: agreement ends the wait.
    now[0], slept[:] = AT, []
    with MetricsServer([_with_output(122), _with_output(122), LAUNCHED_WITH_THE_RUN]) as server:
        result = verify([tmp_path], server.url, wait_s=10, clock=lambda: now[0], sleep=sleep)
    assert (result.match, result.waited_s, slept, server.requests) == (True, 2.0, [1.0, 1.0], 3)


def test_fetch_names_a_bad_url_and_a_server_that_is_not_there() -> None:
    for bad, problem in (
        ("127.0.0.1:8000", "is not an http:// or https:// URL"),
        ("http:///metrics", "names no host"),
        ("http://127.0.0.1:99999/metrics", "is not a URL"),
    ):
        with pytest.raises(BadArgument) as e:
            fetch_metrics(bad)
        assert str(e.value) == f"metrics_url {bad!r} {problem}: e.g. http://127.0.0.1:8000/metrics"
    with MetricsServer([METRICS]) as server:
        assert fetch_metrics(server.url) == METRICS
        wrong_path = server.url.replace("/metrics", "/other")
        with pytest.raises(RemoteError) as remote:
            fetch_metrics(wrong_path)
        assert str(remote.value).endswith(
            f"HTTP 404 Not Found: vLLM serves its counters at /metrics: --metrics-url {server.url}"
        )
    # Stopped: nothing listens on the port any more.
    with pytest.raises(RemoteError, match=r"Connection refused: is vLLM running there\?$"):
        fetch_metrics(server.url, timeout_s=5)


def test_the_run_starts_with_its_first_writer_and_counters_say_when_they_were_made(
    tmp_path: Path,
) -> None:
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12)
    write_ledger(tmp_path, "run-a", start_ts=RUN_START + 4, end_ts=RUN_START + 50, rank=1)
    run = ledger_run([tmp_path], clock=lambda: AT)
    assert (run.run_id, run.totals, run.start_ts) == ("run-a", COUNTED, RUN_START)
    # The real vLLM 0.32 text: the earliest of the four counters' _created samples.
    assert counters_created_ts(METRICS) == 1.7959441816728034e09
    assert counters_created_ts(created_at(METRICS, RUN_START + 2)) == RUN_START + 2
    no_created = _CREATED_LINE.sub("", METRICS)
    assert counters_created_ts(no_created) is None


@pytest.mark.parametrize(
    ("created", "offset"),
    [(AT - 60, 3540.0), (RUN_START - 86_400, -86_400.0), (RUN_START + SAME_LAUNCH_S, 30.0)],
    ids=["launched after the run", "launched a day before", "at the limit"],
)
def test_another_servers_metrics_are_named_not_reported_as_a_difference(
    tmp_path: Path, created: float, offset: float
) -> None:
    """Same figures or not, counters made at another launch are another server's: named at
    once (no waiting: waiting cannot make them agree), with the two instants."""
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12)
    with MetricsServer([created_at(_with_output(7), created)]) as server:
        result = verify([tmp_path], server.url, wait_s=10, clock=lambda: AT, sleep=_no_sleep)
    assert result.match is False
    assert result.other_server == OtherServer(created, RUN_START)
    assert result.other_server.offset_s == offset
    assert (result.waited_s, server.requests) == (0.0, 1)
    with MetricsServer([created_at(METRICS, created)]) as server:  # equal figures: still named
        result = verify([tmp_path], server.url, clock=lambda: AT, sleep=_no_sleep)
    assert result.differences == () and result.match is False


def test_counters_made_with_the_run_or_without_created_samples_are_compared(
    tmp_path: Path,
) -> None:
    _run(tmp_path, "run-a", RUN_START, prompt=1065, gen=121, cached=576, n=12)
    just_inside = created_at(METRICS, RUN_START + SAME_LAUNCH_S - 0.5)
    without = _CREATED_LINE.sub("", METRICS)  # vLLM's multi-process mode has no _created
    for text in (just_inside, created_at(METRICS, RUN_START - 20), without):
        with MetricsServer([text]) as server:
            result = verify([tmp_path], server.url, clock=lambda: AT, sleep=_no_sleep)
        assert (result.match, result.other_server) == (True, None)


def test_the_command_names_another_server(tmp_path: Path) -> None:
    """`vllm-ledger verify` as a user runs it, on the real clock: exit 1 and one explanation
    instead of four false differences."""
    now = time.time()
    start = float(int(now) - 7200)
    _run(tmp_path, "run-a", start, prompt=1065, gen=121, cached=576, n=12)
    created = start + 3600.0
    with MetricsServer([created_at(_with_output(999), created)]) as server:
        code, out, err = run_cli(
            "verify", "--root", str(tmp_path), "--metrics-url", server.url, "--tz", "Asia/Kolkata"
        )
    # the instants in the zone of the report's rule (here --tz), with the offset
    iso = format_instant(created, ZoneInfo("Asia/Kolkata"))
    iso_start = format_instant(start, ZoneInfo("Asia/Kolkata"))
    assert iso.endswith(" +05:30")
    assert (code, err) == (1, "")
    assert out == (
        "MISMATCH: run run-a\n"
        "  /metrics is another server's (or another launch's): its counters were created at "
        f"{iso}, 3,600 s after this run started ({iso_start}); the figures were not compared: "
        "point --metrics-url at the server that writes this ledger (or pass --run for the run "
        "it serves)\n"
    )


def test_a_dripping_metrics_ends_the_command_at_its_timeout(tmp_path: Path) -> None:
    """`vllm-ledger verify --timeout 1s` against a /metrics that drips a byte every 0.2 s (the
    whole text would take hours): one line and exit 2 after about a second, not the drip."""
    _run(tmp_path, "run-a", time.time() - 600, prompt=1065, gen=121, cached=576, n=12)
    body = METRICS.encode()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n" % len(body)
    with RawServer(drip(head, body)) as server:
        url = server.url("/metrics")
        began = time.monotonic()
        code, out, err = run_cli(
            "verify", "--root", str(tmp_path), "--metrics-url", url, "--timeout", "1s"
        )
        took = time.monotonic() - began
    assert (code, out) == (2, "")
    assert err == f"vllm-ledger: error: {url} did not answer within 1 s: is vLLM running there?\n"
    assert took < 1.0 + 15.0, took  # the interpreter's start-up included; the drip is hours


def test_a_metrics_that_redirects_to_another_host_is_refused(tmp_path: Path) -> None:
    _run(tmp_path, "run-a", time.time() - 600, prompt=1065, gen=121, cached=576, n=12)
    elsewhere = response("302 Found", headers=("Location: http://127.0.0.2:8000/metrics",))
    with RawServer(canned(elsewhere)) as server:
        with pytest.raises(RedirectRefused) as exc:
            fetch_metrics(server.url("/metrics"))
    assert str(exc.value) == (
        f"{server.url('/metrics')} redirects to another host ('127.0.0.2:8000'): not followed: "
        "give the URL that answers without leaving its host"
    )
