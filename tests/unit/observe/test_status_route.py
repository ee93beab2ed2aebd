"""The exporter's ``/status`` (``observe/status_route.py``): only with the bearer token, read
only, bounded in time and size, one command at a time; ``404`` where no token was given.

The route's handler is called with real requests and runs real child processes (a stand-in
command where a bound is under test: a sleeper, a flood, a failure); the server's own table
is checked on a real exporter on 127.0.0.1.
"""

from __future__ import annotations

import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.ledgers import FakeClock, ev, write_ledger
from vllm_ledger.errors import BadArgument
from vllm_ledger.http.server import Request
from vllm_ledger.observe.exporter import LedgerCollector, start
from vllm_ledger.observe.status_route import StatusRoute, bearer, load_token

TOKEN = "s3cret-status-token"
DOC = '{"schema": 1}'


def _request(
    auth: str | None = f"Bearer {TOKEN}", query: dict[str, list[str]] | None = None
) -> Request:
    headers = {} if auth is None else {"authorization": auth}
    return Request("GET", "/status", query or {}, headers, b"", ("127.0.0.1", 1))


def _python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def test_the_bearer_header_is_read_strictly() -> None:
    assert bearer(f"Bearer {TOKEN}") == TOKEN
    assert bearer(f"bearer  {TOKEN} ") == TOKEN
    assert bearer(f"Basic {TOKEN}") is None
    assert bearer("Bearer") is None
    assert bearer(None) is None


def test_a_missing_or_wrong_token_is_401_and_nothing_runs(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    route = StatusRoute(_python(f"open({str(ran)!r}, 'w')"), TOKEN)
    for auth in (None, "Bearer nope", f"Bearer {TOKEN}x", f"Basic {TOKEN}", TOKEN):
        answer = route(_request(auth))
        assert answer.status == 401, auth
        assert ("WWW-Authenticate", 'Bearer realm="status"') in answer.headers
    assert not ran.exists()


def test_the_document_is_the_commands_stdout_with_an_ask_as_its_last_words() -> None:
    route = StatusRoute(_python(f"import sys; print({DOC!r}, sys.argv[1:])"), TOKEN)
    assert route(_request()).body == f"{DOC} []\n".encode()
    asked = route(_request(query={"ask": ["usage:key:7d"]}))
    assert (asked.status, asked.body) == (200, f"{DOC} ['--ask', 'usage:key:7d']\n".encode())
    for query in ({"ask": ["rm -rf"]}, {"ask": ["digest", "digest"]}):
        assert route(_request(query=query)).status == 400


def test_exit_3_is_a_document_and_any_other_failure_is_502() -> None:
    three = StatusRoute(_python(f"import sys; print({DOC!r}); sys.exit(3)"), TOKEN)
    assert three(_request()).status == 200
    assert StatusRoute(_python("import sys; sys.exit(2)"), TOKEN)(_request()).status == 502


def test_past_the_cap_is_502_and_past_the_deadline_504_within_it() -> None:
    flood = StatusRoute(_python("print('x' * 200_000)"), TOKEN)
    assert flood(_request()).status == 502
    sleeper = StatusRoute(_python("import time; time.sleep(60)"), TOKEN, deadline_s=1.5)
    began = time.monotonic()
    assert sleeper(_request()).status == 504
    assert time.monotonic() - began < 10.0  # the group is killed on time, not after 60 s


def test_one_run_at_a_time_and_a_fresh_answer_reused(tmp_path: Path) -> None:
    count = tmp_path / "count"
    code = f"open({str(count)!r}, 'a').write('x'); import time; time.sleep(0.5); print(1)"
    route = StatusRoute(_python(code), TOKEN, deadline_s=10)
    answers: list[int] = []
    threads = [threading.Thread(target=lambda: answers.append(route(_request()).status))
               for _ in range(4)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == [200] * 4
    assert count.read_text() == "x"  # four requests, one run


def test_the_token_file_is_checked_at_start(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"{TOKEN}\n")
    assert load_token(path) == TOKEN
    path.write_text("two\nlines\n")
    with pytest.raises(BadArgument, match=r"^--status-token-file .*: must hold one line"):
        load_token(path)
    with pytest.raises(BadArgument, match="No such file"):
        load_token(tmp_path / "absent")


def _get(url: str, auth: str | None = None, method: str = "GET") -> int:
    req = urllib.request.Request(url, method=method)
    if auth is not None:
        req.add_header("Authorization", auth)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return int(r.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_the_exporter_serves_status_only_when_given_a_token(tmp_path: Path) -> None:
    root = tmp_path / "ledger"
    write_ledger(root, "run-1", start_ts=1e9, end_ts=1e9 + 60, events=[ev(1e9 + 5, prompt=8)])
    plain = LedgerCollector([root], tz="UTC", clock=FakeClock(1e9 + 61), say=lambda _l: None)
    route = StatusRoute(_python(f"print({DOC!r})"), TOKEN)
    bare, served = start(plain, port=0), start(plain, port=0, status=route)
    try:
        assert _get(f"http://127.0.0.1:{bare.port}/status", f"Bearer {TOKEN}") == 404
        url = f"http://127.0.0.1:{served.port}"
        assert _get(f"{url}/status") == 401
        assert _get(f"{url}/status", f"Bearer {TOKEN}") == 200
        assert _get(f"{url}/status", f"Bearer {TOKEN}", method="POST") == 405
        assert _get(f"{url}/metrics") == 200  # the scrape needs no token
    finally:
        bare.stop()
        served.stop()
