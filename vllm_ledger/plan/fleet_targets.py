"""How a fleet's hosts are known, and why a host's scrape target is down. Pure.

Hosts are known from three sources (``Found``): the ledger series (now, stamped ahead, or
within the lookback), ``up`` (now or within the lookback) and the store's targets API, the
last two only for the jobs that serve ledger series (``--job``, or every job with a ledger
series within ``plan.fleet_read.JOBS_HISTORY_S``). A target of such a job that is up and serves no
ledger series is not a host (``LedgerTargets.admit`` returns it, for a note); one that is down
is a missing host. docs/fleet.md says what each reason means.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from vllm_ledger.plan.fleet_copies import Sample, host_of
from vllm_ledger.plan.prom import Target

Found = Literal["series", "up", "targets"]
FOUND: tuple[Found, ...] = ("series", "up", "targets")
MAX_WHY_CHARS = 160  # of a scrape error quoted from the targets API
TargetKey = tuple[str, str]  # (job, instance)


def target_of(labels: dict[str, str]) -> TargetKey:
    return labels.get("job", ""), labels.get("instance", "")


@dataclass
class Known:
    """The hosts found so far, where each was found, and its scrape targets; the jobs whose
    targets are hosts (``job``, else ``jobs`` and every job of a ledger series)."""

    job: str | None
    jobs: set[str] = field(default_factory=set)
    found: dict[str, set[Found]] = field(default_factory=dict)
    targets_of: dict[str, set[TargetKey]] = field(default_factory=dict)

    @classmethod
    def of(cls, job: str | None, jobs: Sequence[str] | None) -> Known:
        return cls(job, {job} if job is not None else set(jobs or ()))

    def add(self, labels: dict[str, str], source: Found) -> str:
        hk = host_of(labels)
        self.found.setdefault(hk, set()).add(source)
        self.targets_of.setdefault(hk, set()).add(target_of(labels))
        if self.job is None and source == "series":
            self.jobs.add(labels.get("job", ""))
        return hk

    def ledger_job(self, labels: dict[str, str]) -> bool:
        return labels.get("job", "") in self.jobs

    def has_series(self, hk: str) -> bool:
        return "series" in self.found.get(hk, set())

    def sources(self, hk: str) -> tuple[Found, ...]:
        return tuple(f for f in FOUND if f in self.found[hk])


@dataclass
class LedgerTargets:
    """The targets of the ledger jobs: ``up`` now and within the lookback, the targets API."""

    up_now: dict[TargetKey, float] = field(default_factory=dict)
    labels_of: dict[TargetKey, dict[str, str]] = field(default_factory=dict)
    was_up: set[TargetKey] = field(default_factory=set)
    scraped: dict[TargetKey, Target] = field(default_factory=dict)

    @classmethod
    def of(
        cls,
        up: Sequence[Sample],
        up_seen: Sequence[Sample],
        scrape_targets: Sequence[Target] | None,
        known: Known,
    ) -> LedgerTargets:
        """Only the targets of ``known``'s ledger jobs (so take them after the series)."""
        out = cls()
        for labels, value in up:
            if known.ledger_job(labels):
                t = target_of(labels)
                out.up_now[t] = max(out.up_now.get(t, -math.inf), value)
                out.labels_of[t] = labels
        for labels, _value in up_seen:
            if known.ledger_job(labels):
                out.was_up.add(target_of(labels))
                out.labels_of.setdefault(target_of(labels), labels)
        for st in scrape_targets or ():
            if known.ledger_job(st.labels):
                t = target_of(st.labels)
                if t not in out.scraped or st.health == "up":
                    out.scraped[t] = st
        return out

    def down(self, t: TargetKey) -> str | None:
        """Why target ``t`` is down now, or None (up, or nothing says)."""
        st = self.scraped.get(t)
        error = f": {st.last_error[:MAX_WHY_CHARS]}" if st and st.last_error else ""
        if t in self.up_now:
            return None if self.up_now[t] >= 1 else f"its target is down (up == 0){error}"
        if t in self.was_up:
            return (
                "no up sample now, some within the lookback: its target left the scrape "
                "config, or the store stopped receiving it"
            )
        if st is not None and st.health != "up":
            if st.health == "unknown":
                return "its target has not been scraped yet (health unknown in /api/v1/targets)"
            return f"its target is {st.health} in /api/v1/targets{error}"
        return None

    def admit(self, known: Known) -> list[str]:
        """Add the hosts of these targets to ``known``; return the targets that are up and
        serve no ledger series (``job/instance``): not hosts."""
        idle: list[str] = []
        for t in sorted({*self.up_now, *self.was_up, *self.scraped}):
            labels = self.labels_of.get(t) or self.scraped[t].labels
            hk = host_of(labels)
            if not known.has_series(hk) and self.down(t) is None:
                idle.append(f"{t[0]}/{t[1]}")
                continue
            known.add(labels, "up" if t in self.up_now or t in self.was_up else "targets")
            if t in self.scraped:
                known.found[hk].add("targets")
        return idle

    def host_down(self, hk: str, known: Known) -> str | None:
        """Why host ``hk`` is missing by its targets (the first down one), or None."""
        hts = sorted(known.targets_of[hk])
        why_down = [(t, w) for t in hts if (w := self.down(t)) is not None]
        if not why_down:
            return None
        (j, _i), why = why_down[0]
        return why + (f" (job {j})" if len(hts) > 1 else "")

    def host_up(self, hk: str, known: Known) -> bool:
        """Whether a target of host ``hk`` is up now (``up == 1``)."""
        return any(self.up_now.get(t, 0) >= 1 for t in known.targets_of.get(hk, ()))


__all__ = ["FOUND", "MAX_WHY_CHARS", "Found", "Known", "LedgerTargets", "target_of"]
