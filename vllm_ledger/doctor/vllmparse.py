"""The installed vLLM's own ``vllm serve`` parser, asked offline about argument lists.

``parse_serve_argvs`` runs the parser ``vllm serve`` itself builds (``ServeSubcommand.
subparser_init``: ``make_arg_parser`` on a ``FlexibleArgumentParser``) in a subprocess of
vLLM's Python, for many argvs at once: importing vLLM takes seconds and much memory, so the
caller's process never does. Nothing is loaded (no model, no network): only the arguments are
parsed, and only parsing is judged (vLLM's later checks read files of the target host). Used by
``render`` (deploy/vllmflags.py) and ``doctor --rendered`` (doctor/flags.py).

Which vLLM: ``$VLLM_LEDGER_FLAG_CHECK`` names its Python (``off``: no check); else the host
file's ``vllm_executable`` where it exists here; else this Python where it can import vLLM;
else ``vllm`` on PATH.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from vllm_ledger.errors import ConfigError

CHECK_ENV = "VLLM_LEDGER_FLAG_CHECK"
PARSE_TIMEOUT_S = 180.0  # importing vLLM on a loaded 2-core machine takes about 10 s
MARK = "VLLM_LEDGER_FLAGS "
MAX_DETAIL_CHARS = 200

# Flags vLLM dropped, with the release that dropped them (for the one-line refusal).
DROPPED = {
    "--swap-space": "0.18.0",  # vllm-project/vllm#36216: unused since the V1 engine
    "--disable-log-requests": "0.12.0",  # vllm-project/vllm#29402: logging is off by default
}

# Run by vLLM's Python with ``-c``: reads {"argvs": [...]} on stdin, prints MARK + JSON.
PROBE = r"""
import json, sys
argvs = json.load(sys.stdin)["argvs"]
import vllm
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.entrypoints.cli.serve import ServeSubcommand
class Refused(Exception):
    pass
class Parser(FlexibleArgumentParser):
    def error(self, message):
        raise Refused(message)
errors = []
for argv in argvs:
    parser = Parser(description="vLLM CLI")
    ServeSubcommand().subparser_init(parser.add_subparsers(required=False, dest="subparser"))
    try:
        parser.parse_args(argv)
        errors.append(None)
    except (Refused, ValueError, TypeError) as exc:
        errors.append(str(exc) or type(exc).__name__)
out = {"version": getattr(vllm, "__version__", "unknown"), "errors": errors}
sys.stdout.write("\n%s%s\n" % (sys.argv[1], json.dumps(out)))
"""


@dataclass(frozen=True)
class Vllm:
    """A vLLM to ask: the Python that imports it and how it was found."""

    python: str
    origin: str


@dataclass(frozen=True)
class Parsed:
    """vLLM's answer: its version and, per argv, None (accepted) or its parser's error; or,
    where that vLLM could not answer (no parser, a timeout), ``why_not`` and nothing else."""

    version: str
    errors: tuple[str | None, ...]
    why_not: str = ""

    @classmethod
    def unanswered(cls, why: str) -> Parsed:
        return cls("", (), why)


def script_python(executable: str) -> str | None:
    """The Python a console script (``#!/path/python``) runs, or None."""
    try:
        with open(executable, "rb") as f:
            first = f.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if len(words) >= 2 and os.path.basename(words[0]) == "env":
        words = [shutil.which(words[1]) or ""]
    python = words[0] if words else ""
    return python if "python" in os.path.basename(python) and os.path.exists(python) else None


def find_vllm(vllm_executable: str | None = None) -> Vllm | None:
    """The vLLM to check against (module docstring); None: none here. ``off`` is the caller's."""
    named = os.environ.get(CHECK_ENV, "").strip()
    if named and named != "off":
        return Vllm(named, f"${CHECK_ENV}")
    if vllm_executable:
        path = shutil.which(vllm_executable)
        python = script_python(path) if path else None
        if python is not None:
            return Vllm(python, f"the host file's vllm_executable {vllm_executable}")
    if importlib.util.find_spec("vllm") is not None:
        return Vllm(sys.executable, "this Python")
    path = shutil.which("vllm")
    python = script_python(path) if path else None
    return Vllm(python, f"vllm on PATH ({path})") if python else None


def check_off() -> bool:
    return os.environ.get(CHECK_ENV, "").strip() == "off"


def parse_serve_argvs(
    python: str, argvs: Sequence[Sequence[str]], *, timeout_s: float = PARSE_TIMEOUT_S
) -> Parsed:
    """Each argv (``serve MODEL --flag ...``) parsed by vLLM's own serve parser, in one
    subprocess of ``python``; ``why_not`` says why that vLLM could not answer."""
    env = dict(os.environ)
    env.update(
        {
            "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "VLLM_LOGGING_LEVEL": "ERROR",
        }
    )
    try:
        p = subprocess.run(
            [python, "-c", PROBE, MARK],
            input=json.dumps({"argvs": [list(a) for a in argvs]}),
            capture_output=True,
            text=True,
            env=env,
            cwd="/",
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return Parsed.unanswered(f"{python} did not answer within {timeout_s:.0f} s")
    except OSError as exc:
        return Parsed.unanswered(f"{python} cannot run: {exc.strerror}")
    for line in reversed(p.stdout.splitlines()):
        if line.startswith(MARK):
            out = json.loads(line[len(MARK) :])
            return Parsed(str(out["version"]), tuple(out["errors"]))
    last = (p.stderr.strip().splitlines() or ["no output"])[-1]
    why = f"{python} could not build vLLM's serve parser: {last[:MAX_DETAIL_CHARS]}"
    return Parsed.unanswered(why)


def refused_flag(message: str) -> str | None:
    """The flag a parser error names: the first unrecognized one, or ``argument --x: ...``."""
    m = re.match(r"unrecognized arguments: (.*)", message)
    if m:
        words = m.group(1).split()
        return next(
            (w.split("=")[0] for w in words if w.startswith("-")), words[0] if words else None
        )
    m = re.match(r"argument ([^:\s]+): ", message)
    return m.group(1).split("/")[0] if m else None


def dropped_note(flag: str) -> str:
    """``; vLLM 0.18.0 dropped it`` for a flag this module knows was dropped, else ``""``."""
    return f"; vLLM {DROPPED[flag]} dropped it" if flag in DROPPED else ""


def refusal(version: str, message: str, extra_args: Sequence[str]) -> ConfigError:
    """One line: the flag, the vLLM version, why, and where to fix it."""
    flag = refused_flag(message)
    detail = " ".join(message.split())[:MAX_DETAIL_CHARS]
    if flag is None:
        return ConfigError(
            f"vLLM {version} refuses the vllm serve arguments ({detail})",
            "extra_args",
            hint="fix the host file",
        )
    extra = any(a == flag or a.startswith(flag + "=") for a in extra_args)
    key = "extra_args" if extra else flag.lstrip("-").replace("-", "_")
    if message.startswith("unrecognized arguments"):
        what = f"{flag} is not a flag of vLLM {version} (unrecognized argument{dropped_note(flag)})"
        hint = "remove it from extra_args" if extra else f"leave {key} out of the host file"
    else:
        what = f"vLLM {version} refuses {flag} ({detail})"
        hint = f"fix it in {'extra_args' if extra else f'the host file ({key})'}"
    return ConfigError(what, key, hint=hint)


__all__ = [
    "CHECK_ENV",
    "DROPPED",
    "PARSE_TIMEOUT_S",
    "Parsed",
    "Vllm",
    "check_off",
    "dropped_note",
    "find_vllm",
    "parse_serve_argvs",
    "refusal",
    "refused_flag",
    "script_python",
]
