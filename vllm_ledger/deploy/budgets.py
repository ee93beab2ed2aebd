"""Budgets, in the launch files: the budgets file every mode hands vLLM (docs/budgets.md).

The host file's ``budgets`` names the file (with ``--usage``). It is checked when the launch
files are rendered, with the budgets file's own checks (``plan.budgets.load_budgets``: one line
naming what is wrong), and then every mode sets ``VLLM_LEDGER_BUDGETS`` for vLLM:

* bare, systemd, supervisor: the file where it is on the host;
* docker, compose: the file mounted read-only at ``CONTAINER_BUDGETS_DIR/budgets.toml`` (or
  ``.json``: the suffix says how it is read), and a cost budget's price file mounted read-only at
  its own path, so the ``prices`` the budgets file names is found there too;
* kubernetes: both in a ConfigMap rendered with the manifests (``kubernetes_budgets.py``), mounted
  read-only the same way, in vLLM's container and the exporter's (which serves each budget,
  ``exporter --budgets``); a PrometheusRule holds the budgets' alert rules
  (``observe/budget_alerts.py``); the pod template carries the files' digest, so applying a
  changed budgets file restarts the pods (the enforcer reads the file when it starts).

The enforcer runs where it runs in every mode: vLLM's rank 0 starts it in a low-priority child
when ``VLLM_LEDGER_BUDGETS`` names the file (``background.start_enforcer``), beside the ledger
it reads, and starts it again if it exits. Kubernetes too: a sidecar would be one more
container to size and keep alive with the same image and volume, for the same process; and a
pod whose vLLM runs always runs its enforcer.

``read_budgets_file`` is the edge that reads; the rest is pure.
"""

from __future__ import annotations

import hashlib
import posixpath
import shlex
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.deploy.host import Host
from vllm_ledger.errors import ConfigError, LedgerError
from vllm_ledger.plan.budgets import BudgetConfig, load_budgets
from vllm_ledger.plan.prices import read_document
from vllm_ledger.units import BUDGETS_ENV

CONTAINER_BUDGETS_DIR = "/vllm-ledger/budgets"
BUDGETS_SUFFIXES = (".toml", ".json")
MAX_BUDGETS_BYTES = 512 * 1024  # a ConfigMap holds 1 MiB; the price file goes beside it


@dataclass(frozen=True)
class BudgetsFile:
    """What the launch files carry of a checked budgets file: its text (kubernetes' ConfigMap
    holds it), and the price file it names for cost budgets (an absolute path) with its text."""

    text: str
    config: BudgetConfig
    prices: str | None = None
    prices_text: str | None = None

    @property
    def digest(self) -> str:
        """SHA-256 of the texts: the pod template's annotation (a change restarts the pods)."""
        h = hashlib.sha256(self.text.encode())
        if self.prices_text is not None:
            h.update(b"\0" + self.prices_text.encode())
        return h.hexdigest()


def _refuse(what: str) -> ConfigError:
    return ConfigError(f"budgets: {what}", key="budgets", hint="see docs/budgets.md")


def read_budgets_file(path: str) -> BudgetsFile:
    """Check the budgets file at ``path`` with its own checks and read what the launch files
    carry; one ConfigError line naming ``budgets`` otherwise."""
    p = Path(path)
    if p.suffix.lower() not in BUDGETS_SUFFIXES:
        raise _refuse(f"{path}: name the file .toml or .json (the suffix says how it is read)")
    try:
        doc = read_document(p)
    except LedgerError as exc:
        raise _refuse(str(exc)) from None
    prices = doc.get("prices") if isinstance(doc, dict) else None
    if isinstance(prices, str) and not posixpath.isabs(prices):
        raise _refuse(
            f"{path}: prices {prices!r} must be an absolute path: vLLM's enforcer does not run "
            "in this folder"
        )
    try:
        config = load_budgets(p)
        text = _read(p)
    except LedgerError as exc:
        raise _refuse(str(exc)) from None
    if config.rates is None or not isinstance(prices, str):
        return BudgetsFile(text, config)
    try:
        prices_text = _read(Path(prices))
    except LedgerError as exc:
        raise _refuse(str(exc)) from None
    return BudgetsFile(text, config, prices, prices_text)


def _read(path: Path) -> str:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    if len(data) > MAX_BUDGETS_BYTES:
        raise ConfigError(f"{path} is larger than {MAX_BUDGETS_BYTES // 1024} KiB")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path} is not UTF-8 text") from None


def budgets_for(host: Host, usage: bool, given: BudgetsFile | None) -> BudgetsFile | None:
    """The host's budgets file as the launch files carry it: ``given`` (read already), else
    read and checked now; None without budgets or without usage."""
    if not usage or host.budgets is None:
        return None
    return given if given is not None else read_budgets_file(host.budgets)


def budgets_check(host: Host, mode: str, budgets: BudgetsFile | None) -> list[str]:
    """Script lines stopping before anything is done where the budgets file (or its price
    file) is not there: docker would make a folder in its place, bare mode's vLLM must read it."""
    if host.budgets is None or budgets is None:
        return []
    out = []
    for path in (host.budgets, budgets.prices):
        if path is None:
            continue
        word = shlex.quote(path)
        test = f"! -f {word}" if mode == "docker" else f"! -f {word} || ! -r {word}"
        message = shlex.quote(f"budgets file {path} is not a readable file (docs/budgets.md)")
        out.append(f"if [[ {test} ]]; then echo {message} >&2; exit 1; fi")
    return out


def container_budgets(path: str) -> str:
    """Where a container finds the budgets file: its suffix kept (it says how it is read)."""
    return posixpath.join(CONTAINER_BUDGETS_DIR, "budgets" + Path(path).suffix.lower())


def budgets_env(path: str | None) -> list[tuple[str, str]]:
    """``VLLM_LEDGER_BUDGETS`` where vLLM finds the file in this mode; nothing without one."""
    return [(BUDGETS_ENV, path)] if path is not None else []


def container_mounts(path: str | None, budgets: BudgetsFile | None) -> list[tuple[str, str]]:
    """(host path, container path) to mount read-only: the budgets file, and the price file at
    its own path."""
    if path is None:
        return []
    mounts = [(path, container_budgets(path))]
    if budgets is not None and budgets.prices is not None:
        mounts.append((budgets.prices, budgets.prices))
    return mounts


__all__ = [
    "BUDGETS_SUFFIXES",
    "CONTAINER_BUDGETS_DIR",
    "BudgetsFile",
    "budgets_check",
    "budgets_env",
    "budgets_for",
    "container_budgets",
    "container_mounts",
    "read_budgets_file",
]
