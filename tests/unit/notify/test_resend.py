"""``notifier resend`` asking the running notifier (notify/resend.py): one request id per
delivery however often it is asked, and an unreachable notifier one line saying what to do."""

from __future__ import annotations

import json

from vllm_ledger.notify.resend import NotifierUnreachable, body, request_id


def test_one_request_id_per_delivery() -> None:
    assert request_id(12) == "cli-resend-12"
    assert json.loads(body(12)) == {"request_id": "cli-resend-12", "delivery_id": 12}
    assert body(12) == body(12)


def test_an_unreachable_notifier_says_to_start_it() -> None:
    exc = NotifierUnreachable("127.0.0.1:9095")
    assert str(exc).startswith("the notifier at 127.0.0.1:9095 did not answer")
    assert exc.hint == (
        "start it (`vllm-ledger notifier --config FILE`) and run the same command again: one "
        'delivery is resent once however often it is asked (docs/notifier.md, "Resending")'
    )
