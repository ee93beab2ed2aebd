"""Run `python -m vllm_ledger` commands in one process under a fixed wall clock.

Used by the golden tests (tests/golden/test_golden.py) and their generator. Reads a JSON list
of jobs on stdin, ``[{"argv": [...], "clock": 1795000000.5}, ...]``, and writes a JSON list of
``{"exit": int, "stdout": str, "stderr": str}`` to stdout, one per job.

``time.time`` (and ``time.time_ns``) are replaced *before* vllm_ledger is imported, so every
``clock=time.time`` default is bound to this fake: commands without ``--at`` (``status``,
``check``) and the ``generated_at`` stamp then read the job's ``clock``. Each job runs the
package's ``__main__`` (exactly what ``python -m vllm_ledger ARGV`` runs) with stdout and stderr
captured. Nothing else of vllm_ledger is imported, so modules may move freely.
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys
import time

_now = [0.0]


def _fake_time() -> float:
    return _now[0]


def _fake_time_ns() -> int:
    return round(_now[0] * 1e9)


def main() -> int:
    if any(name == "vllm_ledger" or name.startswith("vllm_ledger.") for name in sys.modules):
        print("vllm_ledger was imported before the clock was faked", file=sys.stderr)
        return 2
    time.time = _fake_time
    time.time_ns = _fake_time_ns
    jobs = json.load(sys.stdin)
    real_stdout = sys.stdout
    results = []
    for job in jobs:
        _now[0] = float(job["clock"])
        out, err = io.StringIO(), io.StringIO()
        saved_argv = sys.argv
        sys.argv = ["vllm-ledger", *job["argv"]]
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    runpy.run_module("vllm_ledger", run_name="__main__", alter_sys=False)
                    code = 0
                except SystemExit as exc:
                    code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = saved_argv
        results.append({"exit": code, "stdout": out.getvalue(), "stderr": err.getvalue()})
    json.dump(results, real_stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
