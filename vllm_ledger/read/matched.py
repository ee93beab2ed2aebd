"""Whether a view's period matched anything: ``ledgerset.nothing_matched``, and a period that
starts after the cutoff."""

from __future__ import annotations

from vllm_ledger.read.ledgerset import (
    MAX_KNOWN_NAMES,
    LedgerSet,
    NothingMatched,
    nothing_matched,
)
from vllm_ledger.read.periods import is_future
from vllm_ledger.read.snapshot import LedgerSnapshot


def period_matched(
    ls: LedgerSet,
    cutoff_ts: int,
    *,
    instance: int | str | None = None,
    model: str | None = None,
    since_ts: float | None = None,
    until_ts: float | None = None,
    at_ts: float | None = None,
) -> NothingMatched | None:
    """``ledgerset.nothing_matched``, and one case more: a period that starts at or after the
    cutoff (``periods.is_future``: ``--since 2027-01-01``) holds nothing any run can have
    recorded yet, a live one included, so it is ``no_run_in_period`` too (exit 3 and a first
    line saying so, never an empty period and exit 0)."""
    nm = nothing_matched(
        ls, instance=instance, model=model, since_ts=since_ts, until_ts=until_ts, at_ts=at_ts
    )
    if nm is not None or since_ts is None or not is_future(since_ts, cutoff_ts):
        return nm
    every = ls.sources()
    readable = [s for s in every if s.ok]
    models = sorted({",".join(s.instance.served_model_names) or "?" for s in readable})
    instances = sorted({s.instance.key for s in readable})
    never = [s for s in every if isinstance(s, LedgerSnapshot) and s.status == "never_committed"]
    return NothingMatched(
        reason="no_run_in_period",
        roots=tuple(str(r) for r in ls.roots),
        instance=instance,
        model=model,
        since_ts=since_ts,
        until_ts=until_ts,
        models=tuple(models[:MAX_KNOWN_NAMES]),
        instances=tuple(instances[:MAX_KNOWN_NAMES]),
        more_models=max(0, len(models) - MAX_KNOWN_NAMES),
        more_instances=max(0, len(instances) - MAX_KNOWN_NAMES),
        unreadable=len(every) - len(readable),
        never_committed=len(never),
        never_since_ts=min((s.created_ts for s in never if s.created_ts is not None), default=None),
        starting=ls.starting,
    )


__all__ = ["period_matched"]
