"""``render``'s flag check: the ``vllm serve`` argv it writes (its own flags and the host
file's ``extra_args``), and the flags ``render --explain`` suggests, parsed by the installed
vLLM's own parser (doctor/vllmparse.py says how and which vLLM). A refused flag is one line
naming it and the vLLM version; no vLLM found is one line saying the check was skipped.
"""

from __future__ import annotations

from collections.abc import Sequence

from vllm_ledger.deploy.host import Host
from vllm_ledger.deploy.serve import serve_args
from vllm_ledger.deploy.tuning import Hint, hint_args
from vllm_ledger.doctor.vllmparse import (
    CHECK_ENV,
    DROPPED,
    PARSE_TIMEOUT_S,
    Parsed,
    Vllm,
    check_off,
    dropped_note,
    find_vllm,
    parse_serve_argvs,
    refusal,
    refused_flag,
    script_python,
)


def check_serve_args(
    argv: Sequence[str], extra_args: Sequence[str], vllm_executable: str | None = None
) -> str:
    """Parse ``argv`` (``serve MODEL ...``) with the vLLM found here: raises ConfigError (one
    line) for a refused flag; else returns the line to print (checked, or skipped and why)."""
    if check_off():
        return ""
    found = find_vllm(vllm_executable)
    if found is None:
        return (
            "vllm serve flags not checked: no vLLM found here (give its Python in "
            f"${CHECK_ENV}, or {CHECK_ENV}=off)"
        )
    parsed = parse_serve_argvs(found.python, [argv])
    if parsed.why_not:
        return f"vllm serve flags not checked: {parsed.why_not}"
    if parsed.errors[0] is not None:
        raise refusal(parsed.version, parsed.errors[0], extra_args)
    return f"vLLM {parsed.version} ({found.origin}) parses every vllm serve flag written"


BARE_MODES = ("bare", "systemd", "supervisor")  # run the host's vllm_executable, not an image


def check_host(host: Host, mode: str, *, usage: bool) -> str:
    """``check_serve_args`` for what ``render --mode MODE`` writes (image mode: no argv)."""
    if mode == "image":
        return ""
    bare = mode in BARE_MODES
    argv = serve_args(host, mode="bare" if bare else "docker", usage=usage)
    return check_serve_args(argv, host.extra_args, host.vllm_executable if bare else None)


def known_hints(hints: Sequence[Hint], model: str) -> tuple[list[Hint], list[str]]:
    """The hints whose flag the vLLM found here parses (each alone, one subprocess for all),
    and the lines saying which were left out, or why none could be checked."""
    shown = [h for h in hints if h.value not in (None, "n/a")]
    if check_off() or not shown:
        return list(hints), []
    found = find_vllm()
    if found is None:
        return list(hints), [f"flags not checked: no vLLM found here (${CHECK_ENV})"]
    parsed = parse_serve_argvs(found.python, [["serve", model, *hint_args([h])] for h in shown])
    if parsed.why_not:
        return list(hints), [f"flags not checked: {parsed.why_not}"]
    refused = [h for h, e in zip(shown, parsed.errors, strict=True) if e is not None]
    notes = [
        f"{h.key}: not suggested, vLLM {parsed.version} refuses {h.flag}{dropped_note(h.flag)}"
        for h in refused
    ]
    notes.append(f"every flag above parsed by vLLM {parsed.version}'s own parser ({found.origin})")
    return [h for h in hints if h not in refused], notes


__all__ = [
    "BARE_MODES",
    "CHECK_ENV",
    "DROPPED",
    "PARSE_TIMEOUT_S",
    "Parsed",
    "Vllm",
    "check_host",
    "check_off",
    "check_serve_args",
    "dropped_note",
    "find_vllm",
    "known_hints",
    "parse_serve_argvs",
    "refusal",
    "refused_flag",
    "script_python",
]
