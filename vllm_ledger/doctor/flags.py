"""The ``flags`` row (``doctor --rendered FILE``): the ``vllm serve`` argv of a file ``render``
wrote, parsed by the vLLM found here (deploy/vllmflags.py), so a vLLM upgrade that drops a
flag the host runs with is caught before the next restart.

Every render mode's file is read: a script (``exec vllm serve ...``, docker's ``--entrypoint
vllm IMAGE serve ...``), a systemd unit (``ExecStart=``), a supervisor section (``command=``)
and a compose or Kubernetes YAML (the list of strings that starts with ``serve``).
"""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from vllm_ledger.doctor.base import Row
from vllm_ledger.doctor.vllmparse import (
    CHECK_ENV,
    check_off,
    find_vllm,
    parse_serve_argvs,
    refusal,
    refused_flag,
)

MAX_RENDERED_BYTES = 1024 * 1024
_SHELL_ENDS = frozenset({";", "&&", "||", "|", "&"})
_YAML_ITEM = re.compile(r'^\s*- ("(?:[^"\\]|\\.)*")\s*$')


def _shell_argv(text: str) -> list[str] | None:
    """``serve ...`` from the first logical line where a word named ``vllm`` precedes a
    ``serve``; None where no line has one."""
    for line in text.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:
            continue
        seen_vllm = False
        for i, word in enumerate(words):
            if os.path.basename(word) == "vllm":
                seen_vllm = True
            elif word == "serve" and seen_vllm:
                argv = words[i:]
                ends = [j for j, w in enumerate(argv) if w in _SHELL_ENDS]
                return argv[: ends[0]] if ends else argv
    return None


def _yaml_argv(text: str) -> list[str] | None:
    """The run of ``- "..."`` items that starts with ``serve`` (the project writes JSON
    strings as YAML's double-quoted scalars)."""
    items: list[str] | None = None
    for line in text.splitlines():
        m = _YAML_ITEM.match(line)
        word = json.loads(m.group(1)) if m else None
        if items is not None:
            if word is None:
                return items
            items.append(word)
        elif word == "serve":
            items = [word]
    return items


def serve_argv(text: str) -> list[str] | None:
    """The ``serve MODEL ...`` argv of a rendered file, or None where it has none."""
    return _yaml_argv(text) or _shell_argv(text)


def check_flags(rendered: Path) -> Row:
    """One row: the rendered file's flags parsed by the vLLM found here, or why not."""
    fix_read = "give --rendered a file vllm-ledger render wrote (script, unit, compose, k8s)"
    try:
        with open(rendered, "rb") as f:
            text = f.read(MAX_RENDERED_BYTES).decode("utf-8", "replace")
    except OSError as exc:
        return Row("flags", False, f"cannot read {rendered}: {exc.strerror}", fix_read)
    argv = serve_argv(text)
    if argv is None:
        return Row("flags", False, f"{rendered} has no vllm serve command", fix_read)
    if check_off():
        return Row("flags", True, f"not checked (${CHECK_ENV}=off)", warn=True)
    found = find_vllm()
    if found is None:
        return Row(
            "flags",
            True,
            "not checked: no vLLM found here",
            f"run doctor with vLLM's Python, or name it: {CHECK_ENV}=/path/to/python",
            warn=True,
        )
    parsed = parse_serve_argvs(found.python, [argv])
    if parsed.why_not:
        return Row("flags", False, f"not checked: {parsed.why_not}", "check that vLLM imports")
    error = parsed.errors[0]
    if error is not None:
        flag = refused_flag(error) or "the refused argument"
        return Row(
            "flags",
            False,
            f"{rendered}: {refusal(parsed.version, error, ()).what}",
            f"take {flag} out of the host file (extra_args, or the key that writes it), "
            "render it again and restart vLLM with it",
        )
    flags = sum(w.startswith("-") for w in argv)
    return Row(
        "flags",
        True,
        f"{rendered}: vLLM {parsed.version} ({found.origin}) parses its {flags} flags",
    )


__all__ = ["MAX_RENDERED_BYTES", "check_flags", "serve_argv"]
