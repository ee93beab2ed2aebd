"""``vllm-ledger poll --json`` shows the health the text reply shows: where the config names
no HTTP host (the bot's original config shape), the deployment host's own per-port probe from
the status document. (Kept beside the notifier's tests: it is the same rule, ``shown_health``.)"""

from __future__ import annotations

import json

from tests.unit.formats.test_status import GOOD, _row
from vllm_ledger.bot.capped import CappedRun
from vllm_ledger.bot.health import Health
from vllm_ledger.bot.poll import Poller, PollResult, classify
from vllm_ledger.bot.validate import Target
from vllm_ledger.commands.poll import render_once


def _status(rows: list[dict[str, object]]) -> bytes:
    return json.dumps({**GOOD, "instances": rows, "instances_truncated": 0}).encode()


def test_poll_json_health_follows_the_status_rows_like_the_text() -> None:
    data = _status(
        [
            {**_row(19001), "health": {"state": "healthy", "http_status": 200}},
            {**_row(19002), "health": {"state": "unhealthy", "http_status": 503}},
        ]
    )
    state, doc = classify(CappedRun("exit", 0, data))
    targets = [Target(p, "gpu", "/srv/code", "/srv/usage") for p in (19001, 19002, 19003)]

    def fetch(t: Target) -> PollResult:
        return PollResult(t.port, state, doc, 1795943918.0, 1795943918.1, 100.0, 0.1)

    poller = Poller(targets, fetch)
    poller.poll_once()
    unknown = {t.port: Health(t.port, "unknown") for t in targets}  # no host: nothing probed
    out = json.loads(
        render_once(targets, [], poller, unknown, as_json=True, lang="en", now_monotonic=101.0)
    )
    shown = [(i["port"], i["health"], i["http_status"]) for i in out["instances"]]
    assert shown == [(19001, "healthy", 200), (19002, "unhealthy", 503), (19003, "unknown", None)]
    text = render_once(targets, [], poller, unknown, as_json=False, lang="en", now_monotonic=101.0)
    assert "deployments 3: healthy 1, unhealthy 1, unchecked 1" in text
