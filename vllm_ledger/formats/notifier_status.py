"""The forms of ``notifier status``: its text and its JSON (deliveries, alerts left out,
the cursor, health, the budgets near or over as last polled, the digests posted, failures).
Pure: the text shows each time in the zone it is given (the command's ``--tz``, else
``$VLLM_LEDGER_TZ``, else this machine's zone), with its offset (``units.format_instant``);
the JSON keeps Unix seconds.

``NotifierStatus`` is what the command reads from the notifier's state file (through
``notify.store``), with, when the notifier answered its ``/healthz``, each loop's report
(``live``); nothing here opens either. Kinds, states and reasons come from that file, and a
delivery's reason from a chat platform's answer, so the text shows each through
``formats/safe.printable``; the JSON escapes every control character itself.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import timezone, tzinfo
from pathlib import Path
from typing import Any, Protocol

from vllm_ledger.formats.safe import printable
from vllm_ledger.units import format_instant

SUMMARY_STATES = ("sent", "failed", "unknown", "pending", "sending")
# summary keys shown elsewhere than under "deliveries"
_NOT_DELIVERIES = ("cursor", "not_shown_alerts_total", "not_shown_notes_total")


class Delivery(Protocol):
    """What the forms read of one delivery (``notify.store.Delivery`` has it): renderers sit
    below the notifier and never import it."""

    @property
    def id(self) -> int: ...
    @property
    def kind(self) -> str: ...
    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str | None: ...
    @property
    def http_status(self) -> int | None: ...
    @property
    def resend_of(self) -> int | None: ...
    @property
    def created_ts(self) -> float: ...


class BudgetLevel(Protocol):
    """What the forms read of one budget at soft or hard (``notify.store.BudgetLevel``)."""

    @property
    def name(self) -> str: ...
    @property
    def place(self) -> str: ...
    @property
    def who(self) -> str: ...
    @property
    def figure(self) -> str: ...
    @property
    def level(self) -> str: ...
    @property
    def used(self) -> float: ...
    @property
    def limit_value(self) -> float: ...
    @property
    def fraction(self) -> float: ...
    @property
    def end_ts(self) -> int: ...
    @property
    def projected(self) -> float | None: ...


@dataclass(frozen=True)
class NotifierStatus:
    state_file: Path
    summary: Mapping[str, int]  # notify.store.read_summary: counts per state, cursor, ...
    failures: Sequence[Delivery]  # newest first
    recent: Sequence[Delivery]  # newest first
    health: Mapping[int, tuple[str, float]]  # port -> (state, since_ts)
    # the running notifier's /healthz: loop name -> {state, last_progress_s_ago, errors_total,
    # error}; None when it was not asked, {} with ``unreachable`` when it did not answer
    live: Mapping[str, Mapping[str, Any]] | None = None
    unreachable: str | None = None  # the address asked, when it did not answer
    outbox_limit: int = 1000
    # each host's budgets at soft or hard as last polled, hard first, with the poll's time
    # (level "problem": the host cannot use its budgets file; "more": ``used`` more at soft or
    # hard past the document's rows)
    budgets: Sequence[tuple[BudgetLevel, float]] = ()
    # the digests posted: (key, delivery id, queued at), newest first
    digests: Sequence[tuple[str, int | None, float]] = ()

    @property
    def loops_ok(self) -> bool:
        """False when a loop of the running notifier is failing, stuck or gone."""
        return all(r.get("state") == "ok" for r in (self.live or {}).values())


def render_text(s: NotifierStatus, tz: tzinfo = timezone.utc) -> str:
    """The state file, the deliveries by state, the alerts Alertmanager left out, the command
    cursor, each port's health and each failed delivery, one line each; times in ``tz``, with
    their offset."""

    def _local(ts: float) -> str:
        return format_instant(ts, tz)

    summary = s.summary
    health = ", ".join(
        f":{port} {'up' if state == 'up' else 'DOWN'} since {_local(since)}"
        for port, (state, since) in sorted(s.health.items())
    )
    lines = [
        f"state {printable(s.state_file)}",
        "deliveries: "
        + ", ".join(f"{state} {summary[state]}" for state in SUMMARY_STATES)
        + f"; dropped (outbox full) {summary['dropped_total']}",
        _not_shown(summary),
        f"commands: cursor {summary['cursor']}, unanswered {summary['unanswered']}",
        "health: " + (health or "none observed yet"),
        *_budgets(s, _local),
        "digests: "
        + (
            ", ".join(
                f"{printable(key.removeprefix('digest:'))} #{d} at {_local(t)}"
                for key, d, t in s.digests
            )
            or "none posted"
        ),
    ]
    if s.unreachable is not None:
        lines.append(f"loops: not known: the notifier at {printable(s.unreachable)} did not answer")
    elif s.live is not None:
        lines.append("loops: " + ", ".join(_loop(name, r) for name, r in sorted(s.live.items())))
    if s.failures:
        lines.append("failed (never resent by themselves; `vllm-ledger notifier resend ID`):")
        for d in s.failures:
            code = f" {d.http_status}" if d.http_status else ""
            lines.append(
                f"  #{d.id} {printable(d.kind)} {printable(d.state)} {printable(d.reason)}{code}"
                f" at {_local(d.created_ts)}"
            )
    else:
        lines.append("failed: none")
    return "\n".join(lines) + "\n"


def _amount(x: float, figure: str) -> str:
    return f"{x:,.2f}" if figure.startswith("cost") else f"{round(x):,}"


def _budgets(s: NotifierStatus, local: Callable[[float], str]) -> list[str]:
    """One line per budget at soft (near) or hard (over), as each host was last polled."""
    if not s.budgets:
        return ["budgets near or over: none (as last polled)"]
    lines = ["budgets near (soft) or over (hard), as last polled:"]
    for b, polled_ts in s.budgets:
        if b.level == "problem":
            lines.append(
                f"  PROBLEM {printable(b.place)}: the host cannot use its budgets file (run "
                "`vllm-ledger status --budgets FILE` there to see why; docs/budgets.md)"
            )
            continue
        if b.level == "more":
            lines.append(
                f"  MORE {printable(b.place)}: {round(b.used)} more near or over, past the 16 "
                "the host's document lists (not announced)"
            )
            continue
        lines.append(
            f"  {printable(b.level).upper()} {printable(b.who)} {printable(b.place)}: "
            f"{_amount(b.used, b.figure)} of {_amount(b.limit_value, b.figure)} "
            f"{printable(b.figure)} ({b.fraction * 100:.1f}%), period ends {local(b.end_ts)}"
            + ("" if b.projected is None else f", projected {_amount(b.projected, b.figure)}")
            + f" [{printable(b.name)}; polled {local(polled_ts)}]"
        )
    return lines


def _not_shown(summary: Mapping[str, int]) -> str:
    """The alerts Alertmanager left out of its messages (past ``max_alerts``), each group's
    count sent to the chat as one note."""
    alerts = summary.get("not_shown_alerts_total", 0)
    if not alerts:
        return "alerts left out by Alertmanager (max_alerts): none"
    notes = summary.get("not_shown_notes_total", 0)
    return (
        f"alerts left out by Alertmanager (max_alerts): {alerts}, "
        f"in {notes} group notification(s), each noted in the chat"
    )


def _loop(name: str, r: Mapping[str, Any]) -> str:
    state = str(r.get("state"))
    text = f"{printable(name)} {'ok' if state == 'ok' else printable(state).upper()}"
    if r.get("error"):
        text += f" ({printable(r['error'])})"
    text += f" {r.get('last_progress_s_ago')} s ago"
    if r.get("errors_total"):
        text += f", {r['errors_total']} error(s)"
    return text


def status_dict(s: NotifierStatus) -> dict[str, Any]:
    return {
        "state_file": str(s.state_file),
        "deliveries": {k: v for k, v in s.summary.items() if k not in _NOT_DELIVERIES},
        "alerts_not_shown": {
            "alerts_total": s.summary.get("not_shown_alerts_total", 0),
            "notes_total": s.summary.get("not_shown_notes_total", 0),
        },
        "outbox": {
            "pending": s.summary.get("pending", 0),
            "limit": s.outbox_limit,
            "dropped_total": s.summary.get("dropped_total", 0),
        },
        "loops": None if s.live is None else {k: dict(v) for k, v in sorted(s.live.items())},
        "loops_unreachable": s.unreachable,
        "cursor": s.summary["cursor"],
        "health": {str(p): {"state": st, "since": t} for p, (st, t) in sorted(s.health.items())},
        "failures": [
            {
                "id": d.id,
                "kind": d.kind,
                "state": d.state,
                "reason": d.reason,
                "http_status": d.http_status,
                "created": d.created_ts,
            }
            for d in s.failures
        ],
        "recent": [
            {"id": d.id, "kind": d.kind, "state": d.state, "resend_of": d.resend_of}
            for d in s.recent
        ],
        "budgets": [
            {
                "name": b.name,
                "place": b.place,
                "who": b.who,
                "figure": b.figure,
                "level": b.level,
                "used": b.used,
                "limit": b.limit_value,
                "fraction": b.fraction,
                "end": b.end_ts,
                "projected": b.projected,
                "polled": polled_ts,
            }
            for b, polled_ts in s.budgets
        ],
        "digests": [{"key": k, "delivery_id": d, "queued": t} for k, d, t in s.digests],
    }


def render_json(s: NotifierStatus) -> str:
    return json.dumps(status_dict(s), ensure_ascii=True, sort_keys=True) + "\n"


__all__ = ["NotifierStatus", "render_json", "render_text", "status_dict"]
