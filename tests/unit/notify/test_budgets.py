"""notify/budgets.py through the notifier: a host's budgets at soft and then hard are queued
once each per budget and period, across a restart of the notifier, from the real status
command (run here by a stand-in ``ssh``: the process boundary), and listed by
``notifier status``."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from tests.inproc import run_cli
from tests.usage_hosts import Call, local_ssh, midday_zone, usage_entry, write_host_root
from vllm_ledger.formats.status import parse
from vllm_ledger.notify.budgets import budget_key, levels, notices
from vllm_ledger.notify.service import Notifier
from vllm_ledger.notify.state_read import read_budget_levels

SECRET = "unit-command-secret"


def _budgets(path: Path, zone: str) -> Path:
    path.write_text(
        f'zone = "{zone}"\nenforce = true\n\n'
        '[[budget]]\nkey = "team-a"\ntokens = 1_000_000\nname = "team-a-day"\n\n'
        '[[budget]]\nuser = "has space"\ntokens = 10\nfigure = "input"\nname = "spacey"\n'
        'period = "month"\nsoft = 9.0\nhard = 10.0\n'  # no request names this user: ok
    )
    return path


def _notifier(tmp_path: Path, root: Path, budgets: Path) -> Notifier:
    config = tmp_path / "private.json"
    config.write_text(json.dumps({
        "usage": {"19001": usage_entry(root, budgets), "19002": usage_entry(root, budgets)},
        "notifier": {"lang": "en", "startup_wait_s": 0},
    }))  # fmt: skip
    n = Notifier(
        config,
        env={"VLLM_LEDGER_COMMAND_SECRET": SECRET},
        listen=("127.0.0.1", 0),
        ssh=str(local_ssh(tmp_path)),
    )
    n.endpoint.server_close()
    return n


def _drain(n: Notifier) -> list[str]:
    """The text of every pending delivery (each then marked sending)."""
    out = []
    while (d := n.store.next_pending()) is not None:
        out.append(d.text)
    return out


def test_soft_then_hard_once_each_across_restarts(tmp_path: Path) -> None:
    now = time.time()
    zone = midday_zone(now)
    root = tmp_path / "usage"
    write_host_root(root, "run-1", [Call(now - 600, "team-a", "tiny", prompt=800_000, gen=50_000)])
    budgets = _budgets(tmp_path / "budgets.toml", zone)
    n = _notifier(tmp_path, root, budgets)
    try:
        assert n.poller.poll_once()[19001].state == "ok"
        posted = _drain(n)
        n.poller.poll_once()  # the next round: the same level, nothing more
        assert _drain(n) == []
    finally:
        n.store.close()
    # two ports of one host: one message
    assert len(posted) == 1 and posted[0].startswith(
        "BUDGET SOFT: key team-a used 850K of 1.0M tokens (85.0%) · :19001, :19002 · day "
    ), posted
    assert posted[0].endswith(" · budget team-a-day\n")
    n = _notifier(tmp_path, root, budgets)  # a restart
    try:
        n.poller.poll_once()
        assert _drain(n) == []
        write_host_root(root, "run-2", [Call(now - 300, "team-a", "tiny", prompt=200_000)])
        n.poller.poll_once()
        hard = _drain(n)
        n.poller.poll_once()
        assert _drain(n) == []
    finally:
        n.store.close()
    assert len(hard) == 1 and hard[0].startswith(
        "BUDGET HARD: key team-a used 1.1M of 1.0M tokens (105.0%) · :19001, :19002 · day "
    ), hard
    assert "· enforced: answered 429 until " in hard[0]
    n = _notifier(tmp_path, root, budgets)
    try:
        n.poller.poll_once()
        assert _drain(n) == []
    finally:
        n.store.close()
    _code, out, _err = run_cli("notifier", "status", "--config", str(tmp_path / "private.json"),
                             "--tz", "UTC")  # fmt: skip
    lines = out.splitlines()
    start = lines.index("budgets near (soft) or over (hard), as last polled:")
    assert lines[start + 1].startswith(
        "  HARD key team-a :19001, :19002: 1,050,000 of 1,000,000 total (105.0%), period ends "
    ), lines[start + 1]
    assert lines[start + 2].startswith("digests: ")  # the user budget is ok: not listed


def _doc(level: str, fraction: float, start: int = 1_796_000_000) -> bytes:
    from tests.unit.formats.test_status import GOOD

    row = {
        "name": "b", "kind": "tenant", "value": "acme", "figure": "output", "limit": 100,
        "used": round(100 * fraction), "fraction": fraction, "soft": 0.8, "hard": 1.0,
        "level": level, "start": start, "end": start + 86400, "projected": None, "enforce": False,
    }  # fmt: skip
    block = {"rows": [row], "truncated": 0, "truncated_over": 0, "problem": None, "currency": ""}
    return json.dumps({**GOOD, "budgets": block}).encode()


def test_notices_are_keyed_by_host_budget_period_and_level() -> None:
    soft = notices("h", ":1", parse(_doc("soft", 0.9)), "en")
    assert [(o.key, o.text is not None) for o in soft] == [("budget:h:b:1796000000:soft", True)]
    hard = notices("h", ":1", parse(_doc("hard", 1.2)), "zh")
    # straight past hard: the soft key is recorded with it, never announced after
    assert [(o.key, o.text is not None) for o in hard] == [
        (budget_key("h", "b", 1_796_000_000, "soft"), False),
        (budget_key("h", "b", 1_796_000_000, "hard"), True),
    ]
    assert hard[1].text is not None and hard[1].text.startswith("小鲁班 · 预算超限:租户 acme")
    assert hard[1].keep_until_ts == 1_796_000_000 + 86400 + 2 * 86400
    next_day = notices("h", ":1", parse(_doc("soft", 0.9, 1_796_086_400)), "en")
    assert next_day[0].key == "budget:h:b:1796086400:soft"  # a new period: announced again
    assert notices("h", ":1", parse(_doc("ok", 0.1)), "en") == []
    assert [b.level for b in levels(":1", parse(_doc("hard", 1.2)), "en")] == ["hard"]
    notes = json.loads(_doc("hard", 1.2))
    notes["budgets"].update(problem="config", truncated=20, truncated_over=4)
    got = levels(":1", parse(json.dumps(notes).encode()), "en")
    assert [(b.level, b.used) for b in got] == [("problem", 0.0), ("more", 4.0), ("hard", 120.0)]


def test_a_budget_dropped_for_a_full_outbox_is_announced_at_the_next_poll(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from vllm_ledger.notify import outbox

    now = time.time()
    root = tmp_path / "usage"
    write_host_root(root, "run-1", [Call(now - 600, "team-a", "tiny", prompt=900_000)])
    n = _notifier(tmp_path, root, _budgets(tmp_path / "budgets.toml", midday_zone(now)))
    try:
        monkeypatch.setattr(outbox, "MAX_PENDING", 0)
        n.poller.poll_once()
        assert n.store.outbox()[1] == 2  # dropped (once per port), not recorded as made
        monkeypatch.setattr(outbox, "MAX_PENDING", 1000)
        n.poller.poll_once()
        assert [t[:12] for t in _drain(n)] == ["BUDGET SOFT:"]
        with sqlite3.connect(n.store.path) as db:
            assert len(read_budget_levels(db)) == 1
    finally:
        n.store.close()


def test_a_hostile_budget_in_a_hosts_document_reaches_no_message(tmp_path: Path) -> None:
    """A host printing a budget whose value carries an escape sequence and a mention: the
    document is unparseable, nothing is queued or recorded."""
    hostile = json.loads(_doc("hard", 1.2))
    hostile["budgets"]["rows"][0]["value"] = "\x1b]8;;http://evil\x07<!channel>"
    (tmp_path / "doc.json").write_text(json.dumps(hostile))
    root = tmp_path / "usage"
    root.mkdir()
    n = _notifier(tmp_path, root, _budgets(tmp_path / "budgets.toml", "UTC"))
    (tmp_path / "ssh").write_text(f"#!/bin/sh\nexec cat {tmp_path / 'doc.json'}\n")
    try:
        assert n.poller.poll_once()[19001].state == "unparseable"
        assert _drain(n) == []
        with sqlite3.connect(n.store.path) as db:
            assert read_budget_levels(db) == []
    finally:
        n.store.close()
