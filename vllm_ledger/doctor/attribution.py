"""The ``attribution`` check: are whose tokens being recorded, and if not, why.

Read from the newest run's ledgers (what the running vLLM wrote) and the installed vLLM's stats
classes (``write/shape.py``), the row says one of:

* **on** (pass): the run's ledgers hold finished requests credited to a key, adapter, user or
  tenant;
* **off** because this vLLM cannot join (warn): its ``FinishedRequestStats`` has no
  ``request_id`` (before vLLM 0.32), so the plugin counts every token and credits nobody; or
  the run was written by such a vLLM (its finished requests carry no id);
* **off** because the middleware is not loaded (FAIL): only ``untagged`` rows, the fix is one
  flag, ``--middleware vllm_ledger.middleware.LedgerMiddleware``;
* **off** because the ledger files predate attribution (FAIL): the plugin is older;
* **unknown** (warn): no finished request yet, nothing to tell by.

``attribution_row`` is pure over ``AttributionFacts``; ``attribution_facts`` and
``check_attribution`` are the edges that read the roots (and import vLLM, when it is there).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from vllm_ledger.doctor.base import Row
from vllm_ledger.errors import LedgerError
from vllm_ledger.read.attribution import FileCredits
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.matched import root_hint
from vllm_ledger.read.snapshot import LedgerSnapshot
from vllm_ledger.read.windows import Window
from vllm_ledger.write.shape import StatsShape

MIDDLEWARE_FLAG = "--middleware vllm_ledger.middleware.LedgerMiddleware"
FIX_ROOT = "is vLLM running with the ledger on (VLLM_LEDGER_DIR) and is --root that folder?"
FIX_MIDDLEWARE = (
    f"add {MIDDLEWARE_FLAG} to vllm serve (render --usage writes it in every mode; "
    "docs/attribution.md), then restart vLLM"
)
FIX_VLLM = (
    "attribution needs vLLM 0.32 or later (FinishedRequestStats.request_id); tokens are still "
    "counted, credited to nobody (docs/attribution.md)"
)
FIX_PLUGIN = (
    "update the plugin vLLM loads (vllm-ledger bundle, or the wheel in vLLM's environment) and "
    "restart vLLM"
)
FIX_WAIT = "send a request (or wait for one), then run the doctor again"
ALL_TIME = Window("all", 0, 2**40)


@dataclass(frozen=True)
class AttributionFacts:
    """What the newest run's ledgers credited, and what the installed vLLM can join."""

    run_id: str | None
    files: int = 0
    files_without: int = 0  # written by a plugin without attribution
    requests: int = 0  # finished requests the ledger counted
    credited: int = 0  # of them, credited to a label
    untagged: int = 0
    ambiguous: int = 0
    aborted: int = 0  # requests that ended unfinished, under their labels (events)
    faults: int = 0  # middleware faults (events)
    keys: int = 0  # distinct keys credited
    adapters: int = 0  # distinct adapters credited
    vllm_version: str | None = None  # the installed vLLM's; None where it cannot be imported
    join_missing: tuple[str, ...] = ()  # what the installed vLLM lacks for the join


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def attribution_row(facts: AttributionFacts) -> Row:
    """The row for ``facts``. Pure."""
    f = facts
    if f.join_missing:
        return Row(
            "attribution",
            True,
            f"off: vLLM {f.vllm_version}: {'; '.join(f.join_missing)}: finished requests cannot "
            "be joined to the middleware's tags",
            FIX_VLLM,
            warn=True,
        )
    if f.run_id is None:
        return Row("attribution", False, "no ledger file to read whose tokens from", FIX_ROOT)
    run = f"run {f.run_id}"
    if f.files_without and f.files_without == f.files:
        return Row(
            "attribution",
            False,
            f"off: {run}'s ledger files were written by a plugin without attribution",
            FIX_PLUGIN,
        )
    others = _others(f)
    if f.credited:
        return Row(
            "attribution",
            True,
            f"on: {run}: {f.credited:,} of {_plural(f.requests, 'finished request')} credited "
            f"({_plural(f.keys, 'key')}, {_plural(f.adapters, 'adapter')}){others}",
        )
    if f.requests == 0:
        seen = (
            f"; the middleware is loaded ({_plural(f.aborted, 'request')} ended unfinished)"
            if f.aborted
            else ""
        )
        return Row(
            "attribution",
            True,
            f"unknown: {run} has no finished request yet{seen}",
            FIX_WAIT,
            warn=True,
        )
    if not (f.untagged or f.ambiguous):
        return Row(
            "attribution",
            True,
            f"off: {run} recorded {_plural(f.requests, 'finished request')} without their ids: "
            "the vLLM that wrote it has no FinishedRequestStats.request_id",
            FIX_VLLM + "; if vLLM was upgraded since, restart it",
            warn=True,
        )
    if not (f.ambiguous or f.aborted or f.faults):
        return Row(
            "attribution",
            False,
            f"off: {run}: only untagged rows ({_plural(f.untagged, 'finished request')}, none "
            "tagged): the middleware is not loaded",
            FIX_MIDDLEWARE,
        )
    return Row(
        "attribution",
        False,
        f"off: {run}: the middleware is loaded but credited no finished request{others}",
        "ambiguous: clients send one X-Request-Id on two requests at once; faults: look for "
        "'vllm-ledger' in vLLM's log (docs/attribution.md)",
    )


def _others(f: AttributionFacts) -> str:
    parts = [
        _plural(n, word)
        for n, word in (
            (f.untagged, "untagged request"),
            (f.ambiguous, "ambiguous request"),
            (f.aborted, "unfinished request"),
            (f.faults, "middleware fault"),
        )
        if n
    ]
    return "; " + ", ".join(parts) if parts else ""


def newest_run_of(snaps: Sequence[LedgerSnapshot]) -> str | None:
    """The run whose first file was created last. Pure."""
    starts: dict[str, float] = {}
    for s in snaps:
        at = s.created_ts if s.created_ts is not None else s.first_bucket_ts
        if at is not None:
            starts[s.run_id] = min(starts.get(s.run_id, at), at)
    return max(starts, key=lambda r: (starts[r], r)) if starts else None


def facts_of(
    run_id: str | None, credits: FileCredits, requests: int, shape: StatsShape | None
) -> AttributionFacts:
    """The facts from one run's credits and finished requests, and the installed vLLM's shape
    (None, or one that cannot be read: not known). Pure."""
    credited = untagged = ambiguous = aborted = faults = 0
    keys: set[str] = set()
    adapters: set[str] = set()
    for (key, adapter, _user, _tenant, reason), c in credits.by_label.items():
        if reason == "":
            credited += c.requests
            if c.requests:
                keys.add(key)
                adapters.add(adapter)
        elif reason == "untagged":
            untagged += c.requests
        elif reason == "ambiguous":
            ambiguous += c.requests
        elif reason == "aborted":
            aborted += c.events
        elif reason == "fault":
            faults += c.events
    known = shape is not None and shape.supported
    return AttributionFacts(
        run_id,
        files=credits.files,
        files_without=credits.without,
        requests=requests,
        credited=credited,
        untagged=untagged,
        ambiguous=ambiguous,
        aborted=aborted,
        faults=faults,
        keys=len(keys),
        adapters=len(adapters),
        vllm_version=shape.vllm_version if shape is not None and known else None,
        join_missing=shape.join_missing if shape is not None and known else (),
    )


def attribution_facts(
    roots: Sequence[Path], shape: StatsShape | None, clock: Callable[[], float] = time.time
) -> AttributionFacts:
    """Read the newest run's credits under ``roots`` (``LedgerError`` when nothing can be
    read)."""
    with LedgerSet.read(roots, clock=clock) as ls:
        snaps = [s for s in ls.snapshots if s.ok]
        run_id = newest_run_of(snaps)
        mine = [s for s in snaps if s.run_id == run_id]
        credits = ls.credits(mine, ALL_TIME)
        requests = sum(v.requests for s in mine for v in ls.sums(s, ALL_TIME).values())
    return facts_of(run_id, credits, requests, shape)


def installed_shape() -> StatsShape | None:
    """The installed vLLM's stats shape, or None where vLLM cannot be imported here."""
    from vllm_ledger.write.plugin import find_shape

    shape = find_shape()
    return shape if shape.supported else None


def check_attribution(
    roots: Sequence[Path],
    *,
    shape_of: Callable[[], StatsShape | None] = installed_shape,
    clock: Callable[[], float] = time.time,
) -> Row:
    shape = shape_of()
    try:
        facts = attribution_facts(roots, shape, clock)
    except LedgerError as exc:
        if shape is not None and shape.join_missing:
            return attribution_row(facts_of(None, FileCredits(), 0, shape))
        return Row("attribution", False, str(exc), FIX_ROOT)
    if facts.run_id is None and not facts.join_missing:
        where = ", ".join(map(str, roots))
        near = root_hint(roots)  # "; did you mean --root ROOT/x?" when one folder off
        return Row("attribution", False, f"no ledger file under {where}{near}", FIX_ROOT)
    return attribution_row(facts)
