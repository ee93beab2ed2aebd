"""The reply to "status": deployment health, then each instance's five windows. Pure.

Built only from this module's own words, validated numbers (``StatusDoc``), health codes,
validated config (port, the last part of an IP) and shape-checked key names (below). No other
remote text can reach it; a final filter drops any control character all the same. Chinese
by default, English with ``lang="en"``. Numbers are human-sized (``1.2M``) and right-aligned;
CJK labels are padded by display width so the columns line up in a monospaced chat block.

A ledger fault (the status could not be fetched; a writer is stale or missing; a ledger
file is bad; problems today; no live writer) is never reported as a vLLM fault, nor the
other way round: each instance has one word for each. Coverage is shown per window.

Each line shows the figures of the instance on its node port: the document's ``instances``
row whose port equals the config key (every instance on that port in the data dir). Without
such a row (a host whose version sends none, or no instance on that port in the data dir) it
shows the whole data dir's figures, and says so on a line of its own.

Where the host's ledgers keep whose tokens, a line names today's top keys (``keys_today``: an
operator's name or ``key:`` and 8 hex, never a key) with their input and output tokens, and
what is not attributed. Those names are the only remote text in the reply: the parser keeps a
name only if it is at most 64 of ``[A-Za-z0-9._@+-:]`` (``formats/status_keys.py``).
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from vllm_ledger.bot.health import Health
from vllm_ledger.bot.humanize import (
    human_count,
    human_rate,
    human_speed,
    ip_last_part,
    signed_count,
    utc_offset,
)
from vllm_ledger.bot.message_words import LANGS, WORDS
from vllm_ledger.bot.poll import CacheEntry, PollResult, reported_health
from vllm_ledger.formats.status import StatusDoc, StatusInstance, StatusWindow
from vllm_ledger.formats.status_keys import StatusKeys
from vllm_ledger.formats.table import aligned
from vllm_ledger.names import POLL_STALE_AFTER_S
from vllm_ledger.read.known import UNKNOWN_MARK
from vllm_ledger.units import format_duration


@dataclass(frozen=True)
class InstanceView:
    port: int
    host: str | None
    health: Health | None
    entry: CacheEntry | None


# ---- layout ----------------------------------------------------------------------------


def _table(rows: Sequence[Sequence[str]]) -> list[str]:
    """Figures right-aligned between the label column and the last one."""
    n = max(len(r) for r in rows)
    return aligned(rows, right=range(1, n - 1))


def _clean(text: str) -> str:
    """Drop control characters except newlines (defence in depth; none should be there)."""
    return "".join(c for c in text if c == "\n" or unicodedata.category(c)[0] != "C")


# ---- the message -----------------------------------------------------------------------


def _label(v: InstanceView) -> str:
    last = ip_last_part(v.host)
    return f"{last}:{v.port}" if last else f":{v.port}"


def _health_line(h: Health | None, w: dict) -> str:
    if h is None or h.state == "unknown":
        return str(w["vllm.unknown"])
    if h.state == "unhealthy":
        return (
            str(w["vllm.unhealthy"]).format(code=h.http_status)
            if h.http_status
            else str(w["vllm.unhealthy_nocode"])
        )
    return str(w.get(f"vllm.{h.state}", w["vllm.unknown"]))


def _mark(win: StatusWindow, w: dict) -> str:
    if win.complete:
        return "✓"
    if win.uncovered_seconds > 0:
        gap = format_duration(win.uncovered_seconds, "rounded", units=w["units"])
        return str(w["gap"]).format(d=gap)
    return "!"


def _host_time(doc: StatusDoc) -> str:
    """The status's cutoff on the host's clock with its offset: ``11-30 09:53:20 +08:00``."""
    t = time.gmtime(doc.cutoff_ts + doc.tz_offset_seconds)
    return f"{time.strftime('%m-%d %H:%M:%S', t)} {utc_offset(doc.tz_offset_seconds)}"


Figures = StatusDoc | StatusInstance


def figures_for(doc: StatusDoc, port: int) -> tuple[Figures, str | None]:
    """The figures a node port's line shows, and why they are the whole data dir's (``old``:
    the host sent no per-port rows; ``absent``: none for this port), or None."""
    if doc.instances is None:
        return doc, "old"
    row = doc.instance(port)
    return (doc, "absent") if row is None else (row, None)


def _whole_note(doc: StatusDoc, port: int, why: str, w: dict) -> str:
    line = str(w[f"whole.{why}"]).format(port=port)
    if why == "absent" and doc.instances_truncated:
        line += str(w["whole.truncated"]).format(n=len(doc.instances or ()))
    return line


def _figures(doc: StatusDoc, part: Figures, w: dict) -> list[str]:
    rows: list[list[str]] = [list(w["cols"])]
    for win in part.windows:
        cells = [
            human_count(win.input_tokens),
            human_count(win.output_tokens),
            human_count(win.cached_tokens),
            human_rate(win.hit_rate),
            human_speed(win.avg_speed),
            human_speed(win.gen_speed),
        ]
        if win.known == "unknown":  # nothing recorded there: not 0 but unknown
            cells = [UNKNOWN_MARK] * len(cells)
        rows.append([w["windows"][win.name], *cells, _mark(win, w)])
    lines = _table(rows)
    writers = dict(part.writers)
    parts = [f"{w['w.' + s]} {n}" for s, n in writers.items() if n]
    if doc.files_bad:  # a file that cannot be read has no known owner: every port shows it
        parts.append(str(w["files_bad"]).format(n=doc.files_bad))
    if parts:
        lines.append(f"{w['writers']}{w['colon']}" + str(w["sep"]).join(parts))
    total = part.window("total")
    if total.problems:
        probs = str(w["list"]).join(f"{w['p'][c]} {n}" for c, n in total.problems)
        lines.append(f"{w['problems']}{w['colon']}{probs}")
    return lines


def keys_line(keys: StatusKeys | None, whole: bool, w: dict) -> str | None:
    """Today's top keys and what is not attributed, on one line; None without keys today.
    ``whole``: the block shows one port's figures, while the keys are the whole data dir's."""
    if keys is None or not keys.rows:
        return None
    named = [
        f"{r.key or w['keys.none']} {human_count(r.input_tokens)}/{human_count(r.output_tokens)}"
        for r in keys.rows
    ]
    parts = [str(w["list"]).join(named)]
    if keys.truncated:
        parts.append(str(w["keys.more"]).format(n=keys.truncated))
    io = f"{signed_count(keys.not_attributed_input)}/{signed_count(keys.not_attributed_output)}"
    na = str(w["keys.na"]).format(io=io)
    if keys.requests_aborted:
        na += str(w["keys.cut"]).format(n=keys.requests_aborted)
    parts.append(na)
    head = str(w["keys"]) + (str(w["keys.whole"]) if whole else "")
    return f"{head}{w['colon']}" + str(w["keys.semi"]).join(parts)


def _ledger_word(entry: CacheEntry | None, port: int) -> tuple[str, bool]:
    """(key of the ledger line, whether it is a ledger fault) from the latest poll."""
    if entry is None:
        return "ledger.pending", False
    if entry.latest.state != "ok" or entry.latest.status is None:
        return f"ledger.{entry.latest.state}", True
    doc = entry.latest.status
    part, _why = figures_for(doc, port)
    writers = dict(part.writers)
    if writers["stale"] or writers["missing"] or doc.files_bad or part.window("today").problems:
        return "ledger.degraded", True
    if not writers["alive"]:
        return "ledger.idle", True
    return "ledger.ok", False


def _instance(
    v: InstanceView, now_monotonic: float, w: dict, stale_after_s: float
) -> tuple[list[str], bool]:
    key, fault = _ledger_word(v.entry, v.port)
    vllm_healthy = v.health is not None and v.health.state == "healthy"
    if key == "ledger.idle" and not vllm_healthy:
        fault = False  # no live writer follows from vLLM being down: not a ledger fault
    ledger = str(w.get(key, w["ledger.unparseable"]))
    if fault and v.health is not None and v.health.state == "healthy":
        ledger += str(w["not_vllm"])
    head = f"── {_label(v)} ──"
    lines = [head, f"{_health_line(v.health, w)} · {ledger}"]
    entry = v.entry
    ok = entry.last_ok if entry is not None else None
    if entry is None or ok is None or ok.status is None:
        lines.append(str(w["never"]) + " · " + str(w["unknown_figures"]))
        return lines, fault
    age_s = entry.age_s(now_monotonic) or 0.0
    age = format_duration(age_s, "rounded", units=w["units"])
    when = w["stale"] if entry.stale(now_monotonic, stale_after_s) else w["age"]
    lines.append(f"{str(when).format(age=age)} · {str(w['asof']).format(t=_host_time(ok.status))}")
    if ok.clock_hint and ok.clock_offset_s is not None:
        off = ok.clock_offset_s
        lines.append(
            str(w["clock"]).format(dir=w["fast"] if off > 0 else w["slow"], s=round(abs(off)))
        )
    part, why = figures_for(ok.status, v.port)
    if why is not None:
        lines.append(_whole_note(ok.status, v.port, why, w))
    lines.extend(_figures(ok.status, part, w))
    several = len(ok.status.instances or ()) > 1
    keys = keys_line(ok.status.keys_today, why is None and several, w)
    if keys is not None:
        lines.append(keys)
    return lines, fault


def shown_health(probed: Health | None, entry: CacheEntry | None, port: int) -> Health:
    """The health a reply shows: the bot's own probe where it has one that is not
    ``unknown``, else the deployment host's own probe from the latest status (``unknown``
    when that poll failed: a ledger fault is never a vLLM fault)."""
    if probed is not None and probed.state != "unknown":
        return probed
    return reported_health(entry, port)


def render_message(
    instances: Sequence[InstanceView],
    *,
    now_monotonic: float,
    lang: str = "zh",
    stale_after_s: float = POLL_STALE_AFTER_S,
    refused: Sequence[tuple[str, str]] = (),
) -> str:
    """The whole reply, as plain text with aligned columns. ``refused`` names the config
    entries that were refused, as (key, field): they count as deployments and get a line
    each (nothing was run for them)."""
    w = WORDS.get(lang)
    if w is None:
        raise ValueError(f"unknown language {lang!r}: use one of {', '.join(LANGS)}")
    # Where the bot probed nothing itself, the deployment host's own probe (status) counts.
    instances = [
        InstanceView(v.port, v.host, shown_health(v.health, v.entry, v.port), v.entry)
        for v in instances
    ]
    counts: dict[str, int] = {}
    for v in instances:
        state = v.health.state if v.health is not None else "unknown"
        counts[state] = counts.get(state, 0) + 1
    summary = str(w["sep"]).join(
        [
            f"{w[s]} {counts[s]}"
            for s in ("healthy", "unhealthy", "down", "unknown")
            if counts.get(s)
        ]
        + ([str(w["refused"]).format(n=len(refused))] if refused else [])
    )
    lines = [
        str(w["title"]),
        str(w["deploy"]).format(n=len(instances) + len(refused))
        + (f"{w['colon']}{summary}" if summary else ""),
    ]
    any_fault = False
    for v in sorted(instances, key=lambda v: v.port):
        block, fault = _instance(v, now_monotonic, w, stale_after_s)
        any_fault = any_fault or fault
        lines.extend(block)
    for key, field in refused:
        where = f"usage[{key}]" + (f".{field}" if field else "")
        lines += [f"── {key} ──", str(w["refused.line"]).format(where=where)]
    lines.append(str(w["legend"]))
    if any_fault:
        lines.append(str(w["footer"]))
    return _clean("\n".join(lines) + "\n")


def render_host(doc: StatusDoc, *, lang: str = "zh") -> str:
    """The reply ``render_message`` makes of one host's status document, as if the bot had just
    polled it (``vllm-ledger status --text``): a block per port row of the document, labelled
    by its port, its health the host's own probe, no clock hint (the document is read where it
    was made)."""
    views = []
    for row in doc.instances or ():
        polled = PollResult(row.port, "ok", doc, doc.clock_ts, doc.clock_ts, 0.0, 0.0)
        views.append(InstanceView(row.port, None, None, CacheEntry(polled, polled)))
    return render_message(views, now_monotonic=0.0, lang=lang)


__all__ = [
    "InstanceView",
    "figures_for",
    "keys_line",
    "render_host",
    "render_message",
    "shown_health",
]
