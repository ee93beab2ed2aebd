"""`vllm-ledger ARGS` run in this process, as ``python -m vllm_ledger ARGS`` runs it: the unit
lane's CLI runner.

A fresh interpreter costs 0.1-0.5 s of CPU a command, nearly all of it imports; the unit lane
ran about 400 of them, half its CPU. Here the command is ``cli.main(ARGS)``, its standard output
and error captured, ``os.environ`` changed for the call only (``TZ`` applied with
``time.tzset``), and a ``SystemExit`` (argparse's ``--help``) read as the exit status the process
would have had. Standard input, where given, is those bytes piped in (not a terminal). What
needs a process of its own (a service that runs until a signal, its log lines, a terminal,
``__main__``'s exit) uses ``tests.conftest.run_cli``: so do the tests outside ``tests/unit``,
which run commands as a user does.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
import time
from collections.abc import Callable, Sequence

from tests.conftest import REPO


def run_cli(
    *args: str, env: dict[str, str] | None = None, stdin: bytes | None = None
) -> tuple[int, str, str]:
    """``cli.main(args)`` here; returns (exit status, stdout, stderr) as ``conftest.run_cli``;
    ``stdin``: the bytes on standard input (None: pytest's, which cannot be read)."""
    from vllm_ledger.cli import main

    saved_env = dict(os.environ)
    saved_stdin = sys.stdin
    saved_handlers = logging.root.handlers[:]
    os.environ["PYTHONPATH"] = str(REPO)  # what the command's own children get
    os.environ.update(env or {})
    zone_changed = os.environ.get("TZ") != saved_env.get("TZ")
    if zone_changed:
        time.tzset()
    out, err = io.StringIO(), io.StringIO()
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = _status(main, list(args), err)
    finally:
        sys.stdin = saved_stdin
        os.environ.clear()
        os.environ.update(saved_env)
        logging.root.handlers[:] = saved_handlers
        if zone_changed:
            time.tzset()
    return code, out.getvalue(), err.getvalue()


def _status(main: Callable[[Sequence[str]], int], argv: list[str], err: io.StringIO) -> int:
    try:
        return main(argv)
    except SystemExit as exc:  # argparse's --help and usage errors exit
        if exc.code is None:
            return 0
        if isinstance(exc.code, int):
            return exc.code
        err.write(f"{exc.code}\n")
        return 1
