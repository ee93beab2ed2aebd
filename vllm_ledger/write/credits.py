"""The recorder's sums of credits (whose tokens, ``write/tags.py``) until its next commit, with
the bound on distinct names per hour.

A credit adds to ``(second, dims)``: prompt, generation and cached tokens, finished requests
and events (aborted requests, middleware faults). Per file and hour at most
``MAX_DISTINCT[kind]`` distinct users, keys and tenants are kept by name (1,000 each by default;
``VLLM_LEDGER_MAX_USERS``, ``VLLM_LEDGER_MAX_KEYS``, ``VLLM_LEDGER_MAX_TENANTS``); any other
is counted under ``other`` (``FOLDED``), and the number of distinct values folded that hour is
kept beside them (``folded``), so a report says how many it could not name. The adapter (the
model a request named) is one of the names vLLM serves: it is not bounded here.

Past those, at most ``DEFAULT_LABEL_SETS`` label sets (key, adapter, user, tenant) per file and hour
(5,000; ``VLLM_LEDGER_MAX_LABEL_SETS``): names that pair freely grow as their product, so the
user of a new set goes to ``other`` (then its key, then its tenant). Per file and hour the
attribution rows are so at most the label sets kept, whatever the traffic.

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

from vllm_ledger import bounds
from vllm_ledger.write.keys import FOLDED
from vllm_ledger.write.tags import Credit, Dims

KINDS = ("key", "user", "tenant")  # the dims that fold: their place in ``Dims``
_PLACE = {"key": 0, "user": 2, "tenant": 3}
DEFAULT_DISTINCT = 1000
DEFAULT_LABEL_SETS = 5000  # (key, adapter, user, tenant) sets per file and hour
MAX_LABEL_SETS_ENV = "VLLM_LEDGER_MAX_LABEL_SETS"
MAX_FOLDED_TRACKED = 100_000  # distinct folded values counted exactly per hour, then "at least"
MAX_LABEL_CHARS = 256
ENV = {
    "key": "VLLM_LEDGER_MAX_KEYS",
    "user": "VLLM_LEDGER_MAX_USERS",
    "tenant": "VLLM_LEDGER_MAX_TENANTS",
}
N_COUNTS = 5  # prompt, generation, cached, requests, events
_MOST = bounds.TOKENS_PER_ENGINE_SECOND


def distinct_limits(env: Mapping[str, str] | None = None) -> dict[str, int]:
    """The per-hour bound of each kind: from the environment (a whole number 1 to 100,000),
    else 1,000."""
    env = os.environ if env is None else env
    out = {}
    for kind, name in ENV.items():
        text = str(env.get(name, "") or "").strip()
        out[kind] = int(text) if text.isdigit() and 0 < int(text) <= 100_000 else DEFAULT_DISTINCT
    return out


def label_set_limit(env: Mapping[str, str] | None = None) -> int:
    """Label sets kept per file and hour (``VLLM_LEDGER_MAX_LABEL_SETS``, 100 to 100,000),
    else 5,000."""
    env = os.environ if env is None else env
    text = str(env.get(MAX_LABEL_SETS_ENV, "") or "").strip()
    return int(text) if text.isdigit() and 100 <= int(text) <= 100_000 else DEFAULT_LABEL_SETS


def credit_ok(credit: Any) -> bool:
    """Whether a credit is what ``TagBook`` makes: five short strings, five counts in bounds."""
    if type(credit) is not tuple or len(credit) != 6:
        return False
    dims = credit[0]
    if type(dims) is not tuple or len(dims) != 5:
        return False
    for d in dims:
        if type(d) is not str or len(d) > MAX_LABEL_CHARS:
            return False
    for n in credit[1:]:
        if type(n) is not int or not 0 <= n <= _MOST:
            return False
    return bool(credit[3] <= credit[1])  # cached within prompt


class _Hour:
    __slots__ = ("folded", "named", "sets")

    def __init__(self) -> None:
        self.named: dict[str, set[str]] = {k: set() for k in KINDS}
        self.folded: dict[str, set[int]] = {k: set() for k in KINDS}
        self.sets: set[Dims] = set()  # label sets kept this hour


class CreditSums:
    """Credits summed per (second, dims) between commits; the fold state per hour."""

    def __init__(
        self, limits: Mapping[str, int] | None = None, max_sets: int | None = None
    ) -> None:
        self.limits = dict(limits or distinct_limits())
        self.max_sets = max_sets if max_sets is not None else label_set_limit()
        self.sums: dict[tuple[int, Dims], list[int]] = {}
        self._hours: dict[int, _Hour] = {}

    def add(self, second: int, credits: Iterable[Credit]) -> None:
        sums = self.sums
        for dims, p, g, c, r, e in credits:
            if dims[0] or dims[2] or dims[3]:  # a key, user or tenant: bounded per hour
                dims = self._fold(second - second % 3600, dims)
            acc = sums.get((second, dims))
            if acc is None:
                sums[(second, dims)] = [p, g, c, r, e]
            else:
                acc[0] += p
                acc[1] += g
                acc[2] += c
                acc[3] += r
                acc[4] += e

    def _fold(self, hour: int, dims: Dims) -> Dims:
        state = self._hours.get(hour)
        if state is not None and dims in state.sets:
            return dims  # a label set kept this hour already: the common case
        if state is None:
            state = self._hours[hour] = _Hour()
            for old in [h for h in self._hours if h < hour - 3600]:
                del self._hours[old]  # an hour long gone: its names are committed
        out = list(dims)
        for kind in KINDS:
            i = _PLACE[kind]
            value = dims[i]
            if not value or value in state.named[kind]:
                continue
            if len(state.named[kind]) < self.limits[kind]:
                state.named[kind].add(value)
                continue
            out[i] = FOLDED
            self._count_folded(state, kind, value)
        got = (out[0], out[1], out[2], out[3], out[4])
        if got in state.sets:
            return got
        if len(state.sets) < self.max_sets:
            state.sets.add(got)
            return got
        # Past the label sets an hour keeps (pairs of names grow as their product): the user
        # goes to ``other`` (such sets kept up to twice the bound: a key stays seen), then the
        # key (three times), then the tenant, until the set is one kept.
        for room, kind in ((2, "user"), (3, "key"), (0, "tenant")):
            i = _PLACE[kind]
            if out[i] and out[i] != FOLDED:
                self._count_folded(state, kind, out[i])
                out[i] = FOLDED
                got = (out[0], out[1], out[2], out[3], out[4])
                if got in state.sets or len(state.sets) < room * self.max_sets:
                    break
        state.sets.add(got)  # at most three times the bound, and the sets of names all folded
        return got

    @staticmethod
    def _count_folded(state: _Hour, kind: str, value: str) -> None:
        folded = state.folded[kind]
        if len(folded) < MAX_FOLDED_TRACKED:
            folded.add(hash(value))

    def folded_rows(self) -> list[tuple[int, str, int]]:
        """(hour, kind, distinct values folded so far in that hour): the most this file knows."""
        return [
            (hour, kind, len(state.folded[kind]))
            for hour, state in sorted(self._hours.items())
            for kind in KINDS
            if state.folded[kind]
        ]

    def rows(self) -> list[tuple[int, Dims, int, int, int, int, int]]:
        """What to commit: ``(second, dims, prompt, generation, cached, requests, events)``."""
        return [(second, dims, *counts) for (second, dims), counts in self.sums.items()]  # type: ignore[misc]

    def clear(self) -> None:
        """After a commit (or when the batch is given up): the sums go, the fold state stays."""
        self.sums = {}
