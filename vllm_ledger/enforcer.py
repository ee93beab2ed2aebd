"""The enforcer: reads every ledger of a root on its own cadence, judges the budgets, and
publishes who is past a hard one for the middleware (``format/overbudget.py``).

It runs outside the serving loop: the API process of rank 0 starts it in a low-priority child
(``python -m vllm_ledger.enforcer ROOT --config FILE``, by ``background.py``, where
``VLLM_LEDGER_BUDGETS`` names the budgets file), or an operator runs
``vllm-ledger enforce`` beside vLLM (a sidecar). Every ``INTERVAL_S`` it reads the root (every
API process's ledger, so usage is host-wide), works out each budget's period so far
(``plan/budgets.py``) and rewrites the over-budget file whole, with the time it was written:
a file the enforcer stopped rewriting goes stale after 30 s and the middleware then refuses
nothing (enforcement fails open, and says so). A non-blocking ``flock`` on
``ROOT/.vllm-ledger-enforcer.lock`` keeps one enforcer per root.

The lag between a key crossing its hard budget and its first refusal is at most the writer's
commit (about 1 s) + ``INTERVAL_S`` + the middleware's look at the file (1 s): under 10 s
(docs/budgets.md). What it does not stop: requests admitted before the refusal, up to their
``max_tokens``.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from zoneinfo import ZoneInfo

from vllm_ledger.format import overbudget
from vllm_ledger.plan.budgets import BudgetConfig, BudgetState, evaluate, load_budgets, over_entries
from vllm_ledger.read.attribution import FileCredits
from vllm_ledger.read.ledgerset import LedgerSet
from vllm_ledger.read.windows import Window
from vllm_ledger.read.zone import resolve_zone

logger = logging.getLogger("vllm.ledger.enforcer")

INTERVAL_S = 5.0
LOCK_NAME = ".vllm-ledger-enforcer.lock"


def judge(root: Path, config: BudgetConfig, clock: Callable[[], float]) -> list[BudgetState]:
    """Every budget's state now, from one read of the root."""
    now = clock()
    tz = ZoneInfo(config.zone or resolve_zone(None, os.environ, [root]).name)
    with LedgerSet.read([root], clock=lambda: now) as ls:
        sources = ls.sources()

        def credits_for(w: Window, kind: str) -> FileCredits:
            return ls.credits(sources, w, kind)

        return evaluate(config, credits_for, int(now), tz)


def publish_once(
    root: Path,
    config: BudgetConfig,
    clock: Callable[[], float],
    fresh_s: float = overbudget.FRESH_S,
) -> list[BudgetState]:
    """Judge the budgets and rewrite the over-budget file (stale after ``fresh_s`` unless
    rewritten); returns the states."""
    states = judge(root, config, clock)
    over = [overbudget.Over(k, v, float(end), name) for k, v, end, name in over_entries(states)]
    overbudget.write(root, over, written_ts=clock(), fresh_s=fresh_s)
    return states


@contextlib.contextmanager
def _lock(root: Path) -> Iterator[bool]:
    fd = os.open(str(root / LOCK_NAME), os.O_CREAT | os.O_RDWR, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        yield True
    finally:
        os.close(fd)


def run(
    root: Path,
    config_path: Path,
    *,
    interval_s: float = INTERVAL_S,
    clock: Callable[[], float] = time.time,
    stop: threading.Event | None = None,
) -> int:
    """Publish every ``interval_s`` until ``stop`` (or forever), reading the budgets file again
    when it changes. Returns 0 when another enforcer already holds the root, 2 when the budgets
    file cannot be used at start."""
    stop = stop or threading.Event()
    try:
        config = load_budgets(config_path)
    except Exception as exc:
        logger.error("vllm-ledger enforcer: %s", exc)
        return 2
    with _lock(root) as mine:
        if not mine:
            logger.info("vllm-ledger enforcer: another enforcer holds %s", root)
            return 0
        failures = 0
        stamp = _stamp(config_path)
        while not stop.is_set():
            config, stamp = _reloaded(config_path, config, stamp)
            try:
                # Six rounds missed and the file is stale: 30 s at the default cadence.
                publish_once(root, config, clock, fresh_s=max(3.0, 6 * interval_s))
                failures = 0
            except Exception as exc:  # a bad read: the file goes stale, enforcement fails open
                failures += 1
                if failures == 1 or failures % 60 == 0:
                    logger.error("vllm-ledger enforcer: %s (%d in a row)", exc, failures)
            stop.wait(interval_s)
    return 0


def _stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _reloaded(
    path: Path, config: BudgetConfig, stamp: tuple[int, int, int] | None
) -> tuple[BudgetConfig, tuple[int, int, int] | None]:
    """The budgets file read again where it changed since ``stamp``; a change that cannot be
    used keeps the budgets in force (logged once per change): a typo never lifts every
    budget."""
    now = _stamp(path)
    if now == stamp:
        return config, stamp
    try:
        fresh = load_budgets(path)
    except Exception as exc:
        logger.error("vllm-ledger enforcer: %s; the budgets read before stay in force", exc)
        return config, now
    logger.info("vllm-ledger enforcer: %s read again (%d budgets)", path, len(fresh.budgets))
    return fresh, now


def main(argv: list[str] | None = None) -> int:
    from vllm_ledger.maintenance import lower_priority

    p = argparse.ArgumentParser(prog="python -m vllm_ledger.enforcer")
    p.add_argument("root", type=Path)
    p.add_argument("--config", type=Path, required=True)
    p.add_argument("--interval", type=float, default=INTERVAL_S)
    args = p.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    lower_priority()
    return run(args.root, args.config, interval_s=max(1.0, min(args.interval, 60.0)))


if __name__ == "__main__":  # pragma: no cover - the child's entry
    sys.exit(main())
