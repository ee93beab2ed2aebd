"""Real processes on 127.0.0.1 for the notifier's tests: a fake chat platform, a stand-in for
vLLM's ``/health``, and the notifier itself as a child process (stopped by pid).

``FakePlatform`` is a real HTTP server. It sends signed commands to the notifier the way a
chat platform's outgoing webhook (or a relay in front of it) would, and records every message
the notifier posts to its incoming webhook (``/hook``), whatever the platform format. It can
answer 500, hang past the notifier's deadline, or hold one request until told to let go.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import hmac
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from devtools.ports import free_port
from tests.conftest import REPO
from vllm_ledger.notify.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER, sign

SECRET = b"test-command-secret"
SLACK_SECRET = b"test-slack-signing-secret"
DINGTALK_SECRET = b"SECtest-dingtalk-app-secret"


def message_text(body: dict[str, Any]) -> str:
    """The text of one post, in any of the formats the notifier speaks."""
    if "msg_type" in body:
        return str(body["content"]["text"])
    if "msgtype" in body:
        return str(body["text"]["content"])
    if "message" in body:  # the generic JSON webhook (apprise's json:// body)
        return str(body["message"])
    return str(body.get("text", ""))


class FakePlatform:
    def __init__(self) -> None:
        self.posts: list[str] = []
        self.raw: list[tuple[str, dict[str, Any]]] = []
        self.fail_when: Callable[[str], int | None] = lambda text: None  # HTTP status to answer
        self.hang_when: Callable[[str], bool] = lambda text: False  # no answer until close()
        self.hold_when: Callable[[str], bool] = lambda text: False
        self.release = threading.Event()
        self.holding = threading.Event()
        self.unhang = threading.Event()
        self._lock = threading.Lock()
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                text = message_text(body)
                with platform._lock:
                    platform.posts.append(text)
                    platform.raw.append((self.path, body))
                if platform.hold_when(text):
                    platform.holding.set()
                    platform.release.wait(30)
                if platform.hang_when(text):
                    platform.unhang.wait(30)  # past any deliver_timeout_s of these tests
                code = platform.fail_when(text) or 200
                data = b'{"code": 0, "errcode": 0}'
                with contextlib.suppress(OSError):
                    self.send_response(code)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.port = int(self.server.server_address[1])
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def hook_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/hook"

    def count(self, needle: str) -> int:
        with self._lock:
            return sum(needle in p for p in self.posts)

    def close(self) -> None:
        self.release.set()
        self.unhang.set()
        self.server.shutdown()
        self.server.server_close()


def send_command(
    port: int,
    message_id: str,
    text: str,
    *,
    secret: bytes = SECRET,
    ts: int | None = None,
    bad_signature: bool = False,
) -> tuple[int, dict[str, Any]]:
    """POST a signed command to the notifier, as the platform does; (HTTP status, answer)."""
    body = json.dumps({"message_id": message_id, "text": text}).encode()
    stamp = str(int(time.time()) if ts is None else ts)
    signature = sign(secret, stamp, body)
    if bad_signature:
        signature = signature[:-4] + "0000"
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/command",
        data=body,
        headers={
            "Content-Type": "application/json",
            TIMESTAMP_HEADER: stamp,
            SIGNATURE_HEADER: signature,
        },
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _post(port: int, path: str, body: bytes, headers: dict[str, str]) -> tuple[int, Any]:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=body,
        headers={"Content-Type": "application/json", **headers},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def send_slack(
    port: int,
    doc: dict[str, Any],
    *,
    secret: bytes = SLACK_SECRET,
    ts: int | None = None,
    bad_signature: bool = False,
) -> tuple[int, Any]:
    """POST an Events API request as Slack signs it: ``v0=`` hex HMAC-SHA256 of
    ``v0:{timestamp}:{body}`` (computed here, not with the notifier's own code)."""
    body = json.dumps(doc).encode()
    stamp = str(int(time.time()) if ts is None else ts)
    mac = hmac.new(secret, b"v0:" + stamp.encode() + b":" + body, hashlib.sha256).hexdigest()
    if bad_signature:
        mac = mac[:-4] + "0000"
    return _post(
        port,
        "/slack/events",
        body,
        {"X-Slack-Request-Timestamp": stamp, "X-Slack-Signature": f"v0={mac}"},
    )


def send_dingtalk(
    port: int,
    doc: dict[str, Any],
    *,
    secret: bytes = DINGTALK_SECRET,
    ts_ms: int | None = None,
) -> tuple[int, Any]:
    """POST an outgoing-robot message as DingTalk signs it: ``sign`` = base64 HMAC-SHA256 of
    ``"{timestamp_ms}\\n{app secret}"`` with the app secret as key."""
    stamp = str(int(time.time() * 1000) if ts_ms is None else ts_ms)
    mac = hmac.new(secret, stamp.encode() + b"\n" + secret, hashlib.sha256).digest()
    sign = base64.b64encode(mac).decode()
    return _post(
        port, "/dingtalk/command", json.dumps(doc).encode(), {"timestamp": stamp, "sign": sign}
    )


class HealthStandIn:
    """A stand-in for vLLM's ``GET /health`` on 127.0.0.1:PORT that can be stopped (the port
    then refuses connections) and started again on the same port."""

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.server: ThreadingHTTPServer | None = None

    def start(self) -> HealthStandIn:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self.send_response(200 if self.path == "/health" else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        ThreadingHTTPServer.allow_reuse_address = True
        self.server = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None


class NotifierProc:
    """``python -m vllm_ledger notifier --config FILE`` as a child, ready when /healthz is."""

    def __init__(self, config: Path, env: dict[str, str], port: int) -> None:
        self.config = config
        self.env = {**os.environ, "PYTHONPATH": str(REPO), **env}
        self.port = port
        self.log = config.with_suffix(".log")
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_args: list[str] = []

    def start(self, timeout_s: float = 20.0) -> NotifierProc:
        with self.log.open("ab") as log:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "vllm_ledger",
                    "notifier",
                    "--config",
                    str(self.config),
                    *self.start_args,
                ],
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"notifier exited: {self.log.read_text()}")
            with contextlib.suppress(OSError):
                url = f"http://127.0.0.1:{self.port}/healthz"
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        return self
            time.sleep(0.05)
        raise RuntimeError(f"notifier not ready: {self.log.read_text()}")

    def kill(self) -> None:
        """SIGKILL: no goodbye, as in a crash."""
        if self.proc is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(10)
            self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.kill()
        self.proc = None

    def status(self) -> dict[str, Any]:
        p = subprocess.run(
            [sys.executable, "-m", "vllm_ledger", "notifier", "status", "--json", "--config",
             str(self.config)],
            env=self.env, capture_output=True, text=True, timeout=30,
        )  # fmt: skip
        assert p.returncode == 0, p.stderr
        doc: dict[str, Any] = json.loads(p.stdout)
        return doc

    def settled_status(self, timeout_s: float = 20.0) -> dict[str, Any]:
        """The status once no delivery is pending or being sent: the platform has a post
        before the notifier has its answer and records it sent."""

        def settled() -> dict[str, Any] | None:
            doc = self.status()
            d = doc["deliveries"]
            return doc if d["pending"] == 0 and d["sending"] == 0 else None

        doc: dict[str, Any] = wait_for("deliveries settled", settled, timeout_s)
        return doc


def write_config(path: Path, usage: dict[str, Any], notifier: dict[str, Any] | None) -> Path:
    doc: dict[str, Any] = {"usage": usage}
    if notifier is not None:
        doc["notifier"] = notifier
    path.write_text(json.dumps(doc))
    return path


def wait_for(what: str, check: Callable[[], Any], timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout_s} s (last: {last!r})")


def setup_notifier(tmp_path: Path, platform: FakePlatform, **settings: Any) -> NotifierProc:
    """A notifier on 127.0.0.1 posting to ``platform`` (Feishu's format, English), whose one
    usage target is an SSH alias with a closed port (figures "unreachable" at once)."""
    (tmp_path / "ssh_config").write_text(
        f"Host closed\n  HostName 127.0.0.1\n  Port {free_port()}\n  User nobody\n"
    )
    (tmp_path / "webhook_url").write_text(platform.hook_url + "\n")
    port = free_port()
    config = write_config(
        tmp_path / "private.json",
        {str(free_port()): {"target": "closed", "code_dir": "/srv/c", "data_dir": "/srv/u"}},
        {
            "listen": f"127.0.0.1:{port}",
            "platform": "feishu",
            "lang": "en",
            "ssh_config": "ssh_config",
            "webhook_url_file": "webhook_url",
            "startup_wait_s": 1,
            # Room for the fake platform's answer on a loaded machine; a test of the deadline
            # itself gives its own.
            "deliver_timeout_s": 10,
            **settings,
        },
    )
    return NotifierProc(config, {"VLLM_LEDGER_COMMAND_SECRET": SECRET.decode()}, port)


def post_json(port: int, path: str, doc: Any, headers: dict[str, str] | None = None) -> Any:
    """(HTTP status, answer, Retry-After or None) of one POST to the notifier."""
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}",
        data=json.dumps(doc).encode(),
        headers={"Content-Type": "application/json", **(headers or {})},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read()), None
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read()), e.headers.get("Retry-After")


def healthz(port: int) -> tuple[int, dict[str, Any]]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def signed_headers(body: bytes, secret: bytes = SECRET) -> dict[str, str]:
    stamp = str(int(time.time()))
    return {TIMESTAMP_HEADER: stamp, SIGNATURE_HEADER: sign(secret, stamp, body)}
