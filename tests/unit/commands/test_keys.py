"""`vllm-ledger keys hash` and `keys label`: the key on stdin (piped in to the CLI run here, or
typed at a real pseudo-terminal with echo off to a real CLI process), never in argv and never in
what is printed."""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import os
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.inproc import run_cli
from vllm_ledger.write import keys

KEY = b"sk-alice-0123456789"
ALICE = "sha256:" + hashlib.sha256(KEY).hexdigest()


def cli(
    *args: str, stdin: bytes = KEY + b"\n", env: dict[str, str] | None = None
) -> tuple[int, str, str]:
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("VLLM_LEDGER_KEY_NAMES", raising=False)
        return run_cli("keys", *args, env=env, stdin=stdin)


# ---- the command (the pure part is tests/unit/deploy/test_keynames.py's) ---------------------


def test_hash_prints_the_names_file_line_or_the_bare_hash() -> None:
    assert cli("hash", "--name", "alice") == (0, f'"alice": "{ALICE}"\n', "")
    assert cli("hash") == (0, ALICE + "\n", "")
    code, out, err = cli("hash", "--name", "a b")
    assert (code, out) == (2, "")
    assert err == (
        "vllm-ledger: error: --name 'a b' is not 1-64 letters, digits or ._@+- (starting with a "
        "letter or digit)\n"
    )
    code, out, err = cli("hash", "--name", "other")
    assert (code, out) == (2, "")
    assert err.startswith("vllm-ledger: error: --name: 'other' names the keys folded past")


def test_label_reads_the_roots_secret_and_the_names_file(tmp_path: Path) -> None:
    root = tmp_path / "usage"
    root.mkdir()
    code, out, err = cli("label", "--root", str(root))
    assert (code, out) == (2, "")
    assert err == (
        f"vllm-ledger: error: {root} has no key secret yet (.vllm-ledger-key-secret): vLLM "
        "with the ledger's middleware makes it on its first start, and no key has a label under "
        "this root until then (docs/attribution.md)\n"
    )
    assert list(root.iterdir()) == []
    secret = keys.root_secret(root)
    label = "key:" + hmac.new(secret, KEY, hashlib.sha256).hexdigest()[:8]
    assert cli("label", "--root", str(root)) == (0, label + "\n", "")
    assert cli("label", env={"VLLM_LEDGER_DIR": str(root)}) == (0, label + "\n", "")
    names = tmp_path / "key-names.json"
    names.write_text(json.dumps({"alice": ALICE}))
    assert cli("label", "--root", str(root), "--key-names", str(names)) == (0, "alice\n", "")
    env = {"VLLM_LEDGER_KEY_NAMES": str(names)}
    assert cli("label", "--root", str(root), env=env) == (0, "alice\n", "")
    names.write_text('{"alice": "sha256:abc"}')
    code, out, err = cli("label", "--root", str(root), "--key-names", str(names))
    assert (code, out) == (2, "")
    assert err.startswith(f"vllm-ledger: error: key names file {names}: alice: 'sha256:abc' is")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("hash", "--root", "/tmp"), "--root is for keys label: hash needs only the key"),
        (("label", "--name", "alice"), "--name is for keys hash: label reads the names from"),
        (("label", "--key-names", "/no/such/file"), "--key-names /no/such/file not found"),
        (("show",), "argument action: invalid choice: 'show'"),
    ],
)
def test_flags_of_the_other_action_are_one_line(args: tuple[str, ...], says: str) -> None:
    code, out, err = cli(*args)
    assert (code, out) == (2, "")
    assert err.startswith("vllm-ledger: error: ") and says in err and err.count("\n") == 1


def test_nothing_on_stdin_is_one_line() -> None:
    assert cli("hash", stdin=b"") == (
        2,
        "",
        "vllm-ledger: error: no key on stdin: pipe it in (e.g. < alice.key) or type it when "
        "asked\n",
    )


def test_the_key_is_never_printed_even_in_errors(tmp_path: Path) -> None:
    secret_key = b"sk-never-shown-4242"
    outputs = [
        cli("hash", stdin=secret_key),
        cli("hash", "--name", "bad name", stdin=secret_key),
        cli("label", "--root", str(tmp_path), stdin=secret_key),
        cli("hash", stdin=secret_key + b"\n" + secret_key),
    ]
    for _code, out, err in outputs:
        assert b"sk-never-shown" not in (out + err).encode()


def test_typed_at_a_terminal_the_key_is_not_echoed() -> None:
    """A real pseudo-terminal as the controlling terminal: the prompt is shown, the key typed is
    not (echo off), the hash is printed."""
    master, slave = os.openpty()

    def controlling() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    proc = subprocess.Popen(
        [sys.executable, "-m", "vllm_ledger", "keys", "hash", "--name", "alice"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        start_new_session=True,
        preexec_fn=controlling,
    )
    os.close(slave)
    seen = b""
    try:
        seen += _read_until(master, b"(not shown): ")
        os.write(master, KEY + b"\n")
        seen += _read_until(master, ALICE.encode())
        assert proc.wait(30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        os.close(master)
    assert seen.startswith(b"API key (not shown): ")
    assert KEY not in seen
    assert f'"alice": "{ALICE}"'.encode() in seen


def _read_until(fd: int, want: bytes, timeout_s: float = 60.0) -> bytes:
    got = b""
    deadline = time.monotonic() + timeout_s
    while want not in got:
        left = deadline - time.monotonic()
        assert left > 0, got
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
    return got
