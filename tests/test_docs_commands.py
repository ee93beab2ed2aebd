"""Every command the docs print runs as printed, and every path they name is one the servers
serve.

Each ``$ vllm-ledger ...`` (or ``$ .venv/bin/vllm-ledger ...``) line of a code block in README.md
and docs/*.md, continued lines joined, is run with ``bash -c`` in a scratch folder that holds
what the line names (``_ledgers``: ledgers written by the real recorder at every root the
docs use; ``_scene``: the host files, snapshots, configs). docs/cli.md is generated from
``--help``, whose examples carry no ``$``: it adds nothing here, and a test says so.

The one change made to a printed line is ``REROOT``: an absolute folder the docs use
(``/srv/artifacts/usage``) cannot be written by a test, so each is mapped, explicitly, to the
same path under the scratch folder; a printed absolute path missing from that table fails the
test instead of being skipped. Commands that need a live service are in ``LIVE`` with the
reason; their URLs point at 127.0.0.1:1, where nothing answers, and they must still parse and
end with one line, exit 2. The servers (``exporter``, ``notifier``) are started for real on
127.0.0.1 (``_server``, ``_notifier``) and every path the docs name for them is requested: a
404 fails.
No command may print a traceback or a deprecation note, and no doc may use a spelling the CLI
marks deprecated.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devtools.ports import free_port
from tests.conftest import REPO
from tests.ledgers import ev, write_ledger
from tests.test_readme_commands import VENV_BIN, printed_commands
from vllm_ledger.cli import build_parser
from vllm_ledger.commands import COMMANDS
from vllm_ledger.commands._renamed import Renamed
from vllm_ledger.plan.prices import CONFIG_FORMATS

DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]

# Absolute folders the docs use, each run under the scratch folder at the same relative path.
REROOT = (
    "/srv/artifacts/usage",  # the ledger root of the README and the observability page
    "/srv/LLMDeploy",  # ssh-key-line --code-dir (only printed into the key line)
    "/srv/www",  # report --html /srv/www/ledger.html
    "/srv/lab",  # cost's ledger and ramp's output folder
    "/srv/demo/usage",  # the timeline page's ledger
    "/srv/demo/two-instances",  # the timeline page's two-instance ledger
    "/srv/preflight",  # preflight's host file
    "/etc/notify",  # the notifier's config with a damaged state file
)
_ABSOLUTE = re.compile(r"(?<![\w.:/~-])/(?:srv|tmp|etc|var|opt|home|root|usr|models)/[^\s'\"]*")

# Commands that need a live service: (what the doc shows it against, why it cannot run here).
# Their http URLs are pointed at 127.0.0.1:1 (nothing listens): one line, exit 2.
LIVE: dict[str, str] = {
    "verify": "vLLM's live /metrics",
    "advise --metrics-url": "vLLM's live /metrics",
    "advise --baseline": "a Prometheus server with three days of samples",
    "fleet": "a Prometheus server holding the exporters' series",
    "ramp": "a serving vLLM (OpenAI API)",
}

# A command whose doc shows a failing case: (part of the command, expected exit, why).
FAILING: tuple[tuple[str, int, str], ...] = (
    ("render --host bad.json", 2, "the doc shows the host file's refusals"),
    ("--usage --mode docker", 2, "the doc shows docker mode refused without an image"),
    ("notifier --config /etc/notify/private.json", 2, "the doc shows a damaged state file"),
    ("notifier status", 1, "the doc shows failed deliveries: exit 1"),
    ("check --root ledger", 1, "the fault page's ledger has a problem (here an unclean exit)"),
)

# The servers: their printed lines (part of the command) and the paths the docs name for them.
EXPORTER_PATHS = ("/metrics",)
# Paths the exporter serves only with the bearer token of --status-token-file: 401 without
# it where the printed line gives one, 404 where it does not.
EXPORTER_TOKEN_PATHS = ("/status",)
NOTIFIER_GET = ("/healthz",)
NOTIFIER_POST = ("/command", "/resend", "/alertmanager", "/slack/events", "/dingtalk/command")


def _command_of(cmd: str) -> str:
    return cmd.removeprefix(".venv/bin/").split()[1]


@dataclass(frozen=True)
class Printed:
    doc: str
    command: str

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.command[:60]}"


def _all_printed() -> list[Printed]:
    return [Printed(doc.name, c) for doc in DOCS for c in printed_commands(doc)]


PRINTED = _all_printed()


def _live_reason(cmd: str) -> str | None:
    for key, why in LIVE.items():
        words = key.split()
        if re.search(rf"vllm-ledger {words[0]}\b", cmd) and all(
            w in cmd.split() for w in words[1:]
        ):
            return why
    return None


def _is_server(cmd: str) -> bool:
    return _command_of(cmd) == "exporter"


def _expected_exit(cmd: str) -> int:
    for part, code, _why in FAILING:
        if part in cmd:
            return code
    return 0


def reroot(cmd: str, scratch: Path) -> str:
    """``cmd`` with each ``REROOT`` folder under ``scratch``; any other absolute path fails."""
    for folder in REROOT:
        cmd = re.sub(rf"(?<![\w/]){re.escape(folder)}(?=[/\s]|$)", f"{scratch}{folder}", cmd)
    left = [p for p in _ABSOLUTE.findall(cmd) if not p.startswith(str(scratch))]
    assert not left, f"absolute paths not in REROOT (add them there): {left}"
    return cmd


def to_nowhere(cmd: str) -> str:
    """Every http URL's host and port made 127.0.0.1:1, where nothing listens."""
    return re.sub(r"http://[^/\s]+", "http://127.0.0.1:1", cmd)


# ---- the scene -------------------------------------------------------------------------------

T_DOCRUN = 1_795_944_888.0  # cost's --at
T_DOCDEMO = 1_795_917_600.0  # 2026-11-29T10:00:00+08:00, the timeline page's --at
T_T14 = 1_795_007_300.0  # the timeline page's second --at
PUBKEY = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHnPOYPU6RUqDm43PC0TF4ZzHKrHLi3xHA0SmNX8mK0r bot@notify\n"
)


def _ledger(root: Path, end: float, *, ports: tuple[int, ...] = (8000,)) -> None:
    for i, port in enumerate(ports):
        start = end - 4 * 3600
        write_ledger(
            root,
            f"run-{port}",
            start_ts=start,
            end_ts=end - 60,
            events=[ev(start + 600 + 10 * i, prompt=900, gen=40, cached=300, finished=[(40, 1.5)])],
            port=port,
            heartbeat_every_s=60.0,
        )


def _unclean(root: Path) -> None:
    """A ledger whose writer never closed (the fault page's ``check`` shows a problem, exit 1)."""
    write_ledger(root, "run-1", start_ts=T_DOCDEMO - 3600, end_ts=T_DOCDEMO, clean=False,
                 events=[ev(T_DOCDEMO - 1000, prompt=9, gen=3)])  # fmt: skip


def _ledgers(tmp: Path) -> None:
    """Every ledger root the printed commands read, relative to the scratch folder."""
    now = time.time()
    _ledger(tmp / "build/demo/ledger", now)
    _ledger(tmp / "srv/artifacts/usage", now)
    _ledger(tmp / "R", now, ports=(8000, 8001))  # the ledger page's placeholder root
    _ledger(tmp / "srv/lab/ledger", T_DOCRUN)
    _ledger(tmp / "srv/demo/usage", T_DOCDEMO, ports=(19001, 19002))
    _ledger(tmp / "srv/demo/two-instances", T_T14, ports=(19001, 19002))
    _ledger(tmp / "root", now, ports=(8000, 8001))
    _unclean(tmp / "ledger")


@pytest.fixture(scope="module")
def ledgers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ledgers, written once; each test gets a copy."""
    tmp = tmp_path_factory.mktemp("ledgers")
    _ledgers(tmp)
    return tmp


@pytest.fixture
def scratch(ledgers: Path) -> Iterator[Path]:
    """A scratch folder the bot's user can pass through (``preflight --bot-user nobody`` checks
    that, and pytest's own folders are private), holding a copy of the ledgers."""
    tmp = Path(tempfile.mkdtemp(prefix="docs-commands-"))
    try:
        shutil.copytree(ledgers, tmp, dirs_exist_ok=True)
        tmp.chmod(0o755)  # after the copy, which gives it pytest's private mode
        yield tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _scene(tmp: Path) -> dict[str, str]:
    """What the printed commands name besides the ledgers, under ``tmp``; the environment to
    run them in (``.venv/bin`` first on PATH, as after ``. .venv/bin/activate``)."""
    (tmp / "srv/www").mkdir(parents=True)
    (tmp / "bot_ed25519.pub").write_text(PUBKEY)
    base = (REPO / "tests/data/vllm-0.32.0-metrics.txt").read_text()
    for i in range(3):
        (tmp / f"m{i}.txt").write_text(base)
    # ssh: every alias points at a closed port on 127.0.0.1
    (tmp / "ssh_config").write_text(
        "Host *\n  HostName 127.0.0.1\n  Port 1\n  ConnectTimeout 2\n  User nobody\n"
    )
    usage = {"19001": {"target": "gpu1", "code_dir": "/srv/c", "data_dir": "/srv/u"}}
    (tmp / "notify.json").write_text(json.dumps({"usage": usage}))
    (tmp / "status_token").write_text("doc-status-token\n")  # exporter --status-token-file
    host = json.loads((REPO / "tests/data/render/cpu-bare.json").read_text())
    (tmp / "host.json").write_text(json.dumps({**host, "mode": "bare"}))
    bad = {
        "model": "m",
        "port": "8000",
        "api_key": {"value": "k"},
        "extra_args": ["--api-server-count"],
    }
    (tmp / "bad.json").write_text(json.dumps(bad))
    pf = tmp / "srv/preflight"
    (pf / "model").mkdir(parents=True)
    (pf / "model/config.json").write_text("{}")
    (pf / "host.json").write_text(
        json.dumps(
            {"mode": "bare", "model": str(pf / "model"), "host": "127.0.0.1", "port": free_port(),
             "gpus": [], "artifacts_dir": str(pf / "art")}
        )
    )  # fmt: skip
    etc = tmp / "etc/notify"
    etc.mkdir(parents=True)
    (etc / "private.json").write_text(json.dumps({"usage": usage}))
    (etc / "private.notifier.sqlite").write_bytes(b"this is not a database, not at all\n" * 200)
    (tmp / ".venv").symlink_to(REPO / ".venv")
    return {
        "PATH": f"{VENV_BIN}:/usr/bin:/bin",
        "HOME": str(tmp),
        "LANG": "C.UTF-8",
        "VLLM_LEDGER_DIR": str(tmp / "build/demo/ledger"),
        # render's check of its argv by vLLM's own parser imports vLLM (about 13 s of CPU a
        # command); tests/test_vllm_flags.py asks the parser about every golden render at once.
        "VLLM_LEDGER_FLAG_CHECK": "off",
    }


def _run(cmd: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", cmd], cwd=cwd, env=env, capture_output=True, text=True, timeout=60
    )


def _clean(p: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in p.stderr + p.stdout, p.stderr
    assert "is deprecated" not in p.stderr, p.stderr


# ---- the printed commands --------------------------------------------------------------------


def test_the_docs_print_commands_and_cli_md_prints_none() -> None:
    assert len(PRINTED) >= 30, [p.id for p in PRINTED]
    assert not printed_commands(REPO / "docs/cli.md")  # --help's examples carry no `$`
    for part, _code, _why in FAILING:  # every entry of the tables is still used
        assert any(part in p.command for p in PRINTED), part
    for key in LIVE:
        assert any(_live_reason(p.command) == LIVE[key] for p in PRINTED), key


NOTIFIER_LINES = ("notifier status", "notifier resend")
OFFLINE = [
    p
    for p in PRINTED
    if not _live_reason(p.command)
    and not _is_server(p.command)
    and not any(k in p.command for k in NOTIFIER_LINES)
]


@pytest.mark.parametrize("printed", OFFLINE, ids=lambda p: p.id)
def test_a_printed_command_runs_as_printed(printed: Printed, scratch: Path) -> None:
    env = _scene(scratch)
    p = _run(reroot(printed.command, scratch), scratch, env)
    _clean(p)
    want = _expected_exit(printed.command)
    assert p.returncode == want, (p.returncode, p.stdout.splitlines(), p.stderr)
    if want == 2:
        assert p.stderr.startswith("vllm-ledger: error: "), p.stderr


@pytest.mark.parametrize(
    "printed", [p for p in PRINTED if _live_reason(p.command)], ids=lambda p: p.id
)
def test_a_printed_command_that_needs_a_service_parses(printed: Printed, scratch: Path) -> None:
    env = _scene(scratch)
    cmd = to_nowhere(reroot(printed.command, scratch))
    p = _run(cmd, scratch, env)
    _clean(p)
    errors = [line for line in p.stderr.splitlines() if line.startswith("vllm-ledger: error: ")]
    assert len(errors) == 1 and "127.0.0.1:1" in errors[0], (cmd, p.stderr)
    if "$(" in cmd:  # the inner command failed; the outer one ran without its flags
        assert p.returncode == 0, (p.returncode, p.stderr)
    else:
        assert p.returncode == 2 and p.stderr.count("\n") == 1, (p.returncode, p.stderr)


# ---- the servers, started for real -----------------------------------------------------------

_SERVING = re.compile(r"serving (http://127\.0\.0\.1:\d+)/")
_TRAILING = re.compile(
    r"\s*&?\s*(#.*)?$"
)  # `... &   # on the vLLM host`: started, not backgrounded


def doc_paths() -> tuple[set[str], set[str]]:
    """The paths the docs name for the notifier and for the exporter."""
    notifier: set[str] = set()
    exporter: set[str] = {"/metrics"}
    for doc in DOCS:
        if doc.name == "cli.md":
            continue
        text = doc.read_text()
        notifier |= set(
            re.findall(r"\b(?:NOTIFIER|HOST|127\.0\.0\.1|internal|\d):9095(/[\w/-]+)", text)
        )
        exporter |= set(re.findall(r":1?9464(/[\w/-]+)", text))
        if doc.name in ("notifier.md", "contributing.md"):
            notifier |= set(re.findall(r"\b(?:GET|POST) (/[A-Za-z][\w/-]*)", text))
        if doc.name == "notifier.md":
            notifier |= set(re.findall(r"`(/[a-z][\w/-]*)`", text))
    return notifier - set(NOT_NOTIFIER), exporter


# Backticked paths of the notifier's page that are not its routes, and why.
NOT_NOTIFIER = {
    "/etc/localtime": "a file (the zone of the host)",
    "/health": "vLLM's own endpoint, which the notifier probes",
}


def _status(url: str, method: str = "GET") -> int:
    data = b"{}" if method == "POST" else None
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return int(r.status)
    except urllib.error.HTTPError as e:
        return int(e.code)


@contextlib.contextmanager
def _server(cmd: str, cwd: Path, env: dict[str, str]) -> Iterator[str]:
    """``cmd`` started in its own session; yields the base URL it says it serves; stopped by
    its process id."""
    proc = subprocess.Popen(
        ["bash", "-c", f"exec {cmd}"],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        said = []
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            line = proc.stderr.readline()
            said.append(line)
            m = _SERVING.search(line)
            if m:
                yield m.group(1)
                break
            assert line, f"{cmd} ended: {''.join(said)}"
        else:
            raise AssertionError(f"{cmd}: no 'serving' line: {''.join(said)}")
        assert "Traceback" not in "".join(said) and "is deprecated" not in "".join(said), said
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)


EXPORTER_LINES = [p for p in PRINTED if _is_server(p.command)]


def _listen_here(cmd: str) -> str:
    """The exporter's printed line, started on a free port: its ``--listen`` (or the default
    127.0.0.1:9464, which may be taken here) replaced by 127.0.0.1:0, ``&`` and a comment
    dropped."""
    cmd = _TRAILING.sub("", cmd)
    if "--listen" in cmd:
        return re.sub(r"--listen \S+", "--listen 127.0.0.1:0", cmd)
    return f"{cmd} --listen 127.0.0.1:0"


@pytest.mark.parametrize("printed", EXPORTER_LINES, ids=lambda p: p.id)
def test_the_printed_exporter_serves_every_documented_path(printed: Printed, scratch: Path) -> None:
    env = _scene(scratch)
    _notifier_paths, paths = doc_paths()
    with _server(_listen_here(reroot(printed.command, scratch)), scratch, env) as base:
        for path in sorted(paths):
            if path in EXPORTER_TOKEN_PATHS:
                with_token = "--status-token-file" in printed.command
                assert _status(base + path) == (401 if with_token else 404), path
                continue
            assert _status(base + path) == 200, path


def _notifier_config(tmp: Path) -> int:
    """``private.json`` for a notifier on a free port of 127.0.0.1 whose webhook refuses (every
    delivery fails) and whose one target is an SSH alias at a closed port."""
    port = free_port()
    for name, value in {
        "command_secret": "test-command-secret",
        "webhook_url": "http://127.0.0.1:1/hook",
        "slack_signing_secret": "test-slack-secret",
        "dingtalk_app_secret": "SECtest-dingtalk",
    }.items():
        (tmp / name).write_text(value + "\n")
        (tmp / name).chmod(0o600)
    notifier = {
        "listen": f"127.0.0.1:{port}",
        "platform": "feishu",
        "lang": "en",
        "ssh_config": "ssh_config",
        "command_secret_file": "command_secret",
        "webhook_url_file": "webhook_url",
        "slack_signing_secret_file": "slack_signing_secret",
        "dingtalk_app_secret_file": "dingtalk_app_secret",
        "startup_wait_s": 1,
        "deliver_timeout_s": 1,
    }
    usage = {"19001": {"target": "gpu1", "code_dir": "/srv/c", "data_dir": "/srv/u"}}
    (tmp / "private.json").write_text(json.dumps({"usage": usage, "notifier": notifier}))
    return port


@contextlib.contextmanager
def _notifier(tmp: Path, env: dict[str, str]) -> Iterator[str]:
    port = _notifier_config(tmp)
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        ["vllm-ledger", "notifier", "--config", "private.json"],
        cwd=tmp,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=(tmp / "notifier.log").open("wb"),
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, (tmp / "notifier.log").read_text()
            with contextlib.suppress(OSError):
                if _status(base + "/healthz") in (200, 503):
                    break
            assert time.monotonic() < deadline, (tmp / "notifier.log").read_text()
            time.sleep(0.1)
        yield base
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(15)
    assert "Traceback" not in (tmp / "notifier.log").read_text()


@pytest.mark.e2e  # a notifier process
def test_the_notifier_serves_every_documented_path(scratch: Path) -> None:
    env = _scene(scratch)
    paths, _exporter_paths = doc_paths()
    assert {"/alertmanager", "/healthz", "/command"} <= paths, paths
    with _notifier(scratch, env) as base:
        for path in sorted(paths):
            method = "GET" if path == "/healthz" else "POST"
            assert _status(base + path, method) not in (404, 405), (method, path)


NOTIFIER_PRINTED = [p for p in PRINTED if any(k in p.command for k in NOTIFIER_LINES)]


@pytest.mark.e2e  # a notifier process
def test_the_printed_notifier_commands_run_against_a_running_notifier(scratch: Path) -> None:
    """``notifier status`` and ``notifier resend 1`` as printed, with delivery #1 an alert the
    refusing webhook failed (the page shows such a failure: status exits 1)."""
    assert len(NOTIFIER_PRINTED) == 2, NOTIFIER_PRINTED
    env = _scene(scratch)
    alert = {
        "version": "4",
        "status": "firing",
        "alerts": [
            {
                "status": "firing",
                "labels": {"alertname": "LedgerDocs", "instance": "gpu1:8000"},
                "annotations": {"summary": "a test alert"},
                "startsAt": "2026-11-30T10:00:00Z",
                "fingerprint": "0123456789abcdef",
            }
        ],
    }
    with _notifier(scratch, env) as base:
        req = urllib.request.Request(
            base + "/alertmanager",
            data=json.dumps(alert).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as r:
            assert r.status in (200, 202), r.status
        deadline = time.monotonic() + 20
        while "failed 1" not in _run(NOTIFIER_PRINTED[0].command, scratch, env).stdout:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        for printed in NOTIFIER_PRINTED:
            p = _run(printed.command, scratch, env)
            _clean(p)
            assert p.returncode == _expected_exit(printed.command), (
                p.returncode,
                p.stdout,
                p.stderr,
            )


# ---- deprecated spellings --------------------------------------------------------------------


def deprecated_flags() -> dict[str, set[str]]:
    """Per command, the old flag spellings its parser keeps (``Renamed``: hidden, with a note)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return {
        name: {o for a in p._actions if isinstance(a, Renamed) for o in a.option_strings}
        for name, p in sub.choices.items()
    }


def _invocations(text: str) -> Iterator[tuple[str, list[str]]]:
    """(command, its words) for each ``vllm-ledger COMMAND ...`` or ``-m vllm_ledger COMMAND``
    in ``text``: code blocks line by line (continued lines joined), inline code spans."""
    lines = re.sub(r"\\\n\s*", " ", text).splitlines()
    spans = re.findall(r"`([^`\n]+)`", text)
    for chunk in [*lines, *spans]:
        for m in re.finditer(
            r"(?:vllm-ledger|-m vllm_ledger) ([a-z][a-z-]*)((?: [^`|;&)]*)?)", chunk
        ):
            yield m.group(1), m.group(2).split()
    for span in spans:  # `exporter --listen ...`: a command named without the program
        words = span.split()
        if len(words) > 1 and words[0] in COMMANDS and words[1].startswith("-"):
            yield words[0], words[1:]


def test_no_doc_uses_a_deprecated_spelling() -> None:
    old = deprecated_flags()
    assert old["exporter"] >= {"--port", "--host"} and old["ramp"] >= {"--out"}, old
    found = []
    for doc in DOCS:
        if doc.name == "cli.md":  # generated; its vocabulary table names the old spellings
            continue
        for command, words in _invocations(doc.read_text()):
            for word in words:
                flag = word.split("=")[0]
                if flag in old.get(command, ()):
                    found.append(f"{doc.name}: {command} {flag}")
            if command == "cost":  # JSON or TOML; a YAML config still reads, with a note
                for i, word in enumerate(words[:-1]):
                    if word == "--config" and Path(words[i + 1]).suffix not in CONFIG_FORMATS:
                        found.append(f"{doc.name}: cost --config {words[i + 1]}")
    assert not found, found
