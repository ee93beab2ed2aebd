"""What bounds one client request (vllm_ledger/http/limits.py): the seconds left of its deadline,
and the errors that name its URL, its limit and what to check."""

from __future__ import annotations

import errno
import time

import pytest

from vllm_ledger.errors import AnswerTooLarge, BadResponse, RemoteError, RemoteTimeout
from vllm_ledger.http.limits import Limits

URL = "http://127.0.0.1:8000/metrics"


def _limits(seconds_left: float) -> Limits:
    return Limits(URL, 5.0, time.monotonic() + seconds_left, 1024, False, "is it up?")


def test_the_time_left_is_at_least_a_millisecond_until_the_deadline_passes() -> None:
    assert 4.0 < _limits(5.0).left_s() <= 5.0
    with pytest.raises(RemoteTimeout) as exc:
        _limits(-0.1).left_s()
    assert str(exc.value) == f"{URL} did not answer within 5 s: is it up?"


def test_each_error_names_the_url_and_what_to_check() -> None:
    limits = _limits(5.0)
    too_large = limits.too_large()
    assert isinstance(too_large, AnswerTooLarge) and too_large.limit == 1024
    assert str(too_large) == f"{URL} answered more than 1 KiB: check that it is the URL meant"
    bad = limits.bad("framing", "sent a chunk longer than its size")
    assert isinstance(bad, BadResponse) and bad.problem == "framing"
    assert str(bad) == f"{URL} sent a chunk longer than its size: is it up?"
    refused = limits.unreachable(ConnectionRefusedError(errno.ECONNREFUSED, "Connection refused"))
    assert type(refused) is RemoteError
    assert str(refused) == f"cannot read {URL}: Connection refused: is it up?"
    assert str(limits.unreachable(OSError())) == f"cannot read {URL}: OSError: is it up?"
