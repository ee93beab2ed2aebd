"""`vllm-ledger enforce`: a real CLI process over a real root the real Recorder wrote. The
one-shot look prints each budget's state (text and JSON) and writes nothing; the sidecar
publishes until SIGTERM, a second one stands by and takes over when the first stops; a bad
budgets file is one line and exit 2."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta
from pathlib import Path

from tests.conftest import REPO
from tests.credited_ledgers import Call, write_credited_ledger
from tests.inproc import run_cli
from tests.unit.test_enforcer import DAY_AT, SH, _budgets, _root
from vllm_ledger.format import overbudget
from vllm_ledger.formats.budget_states import look_text
from vllm_ledger.plan.enforcement import EnforcerLook

AT = str(int(DAY_AT))  # 2026-12-02 15:00 in Asia/Shanghai


def test_the_look_prints_each_budget_and_writes_nothing(tmp_path: Path) -> None:
    root, config = _root(tmp_path), _budgets(tmp_path)
    code, out, err = run_cli("enforce", "--root", str(root), "--config", str(config), "--once",
                             "--at", AT)  # fmt: skip
    assert (code, err) == (0, ""), out + err
    assert out.splitlines() == [
        f"budgets of {config} at 2026-12-02 15:00:00 +08:00 (zone Asia/Shanghai)",
        "budget          who         period  figure        used  limit   used %  level  "
        "projected  refuses       period ends",
        "key-team-a-day  key team-a  day     total tokens   900    900   100.0%  hard       "
        "1,440  yes           2026-12-03 00:00:00 +08:00",
        "key-team-b-day  key team-b  day     total tokens    45    900     5.0%  ok            "
        "72  no            2026-12-03 00:00:00 +08:00",
        "watch-only      key team-a  day     total tokens   900     10  9000.0%  hard       "
        "1,440  not enforced  2026-12-03 00:00:00 +08:00",
        "enforcer: failing open (every request is served): no .vllm-ledger-over-budget.json: "
        "the enforcer has not published one",
    ]
    assert not overbudget.path_in(root).exists()


def test_the_look_as_json(tmp_path: Path) -> None:
    root, config = _root(tmp_path), _budgets(tmp_path)
    overbudget.write(root, [], written_ts=time.time())
    code, out, err = run_cli("enforce", "--root", str(root), "--config", str(config), "--once",
                             "--at", AT, "--json")  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert [k for k in doc] == ["schema", "at", "tz", "root", "config", "budgets", "enforcer"]
    assert (doc["schema"], doc["at"], doc["tz"]) == (1, int(DAY_AT), "Asia/Shanghai")
    assert doc["budgets"][0] == {
        "name": "key-team-a-day", "kind": "key", "value": "team-a", "period": "day",
        "figure": "total", "limit": 900, "used": 900, "fraction": 1.0, "soft": 0.8,
        "hard": 1.0, "level": "hard", "enforce": True, "refused": True,
        "period_start": 1796140800, "period_end": 1796227200, "projected": 1440,
    }  # fmt: skip
    assert [(b["name"], b["used"], b["refused"]) for b in doc["budgets"][1:]] == [
        ("key-team-b-day", 45, False),
        ("watch-only", 900, False),
    ]
    assert doc["enforcer"]["state"] == "fresh" and doc["enforcer"]["over"] == 0


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    root = _root(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text('zone = "Mars/Base"\n[[budget]]\nkey = "a"\ntokens = 5\n')
    cases = [
        (["--config", str(bad), "--once"], f"{bad}: zone 'Mars/Base' is not a known time zone"),
        (["--config", str(bad)], f"{bad}: zone 'Mars/Base' is not a known time zone"),
        (
            ["--config", str(_budgets(tmp_path)), "--json"],
            "--at and --json shape a one-shot look: add --once",
        ),
        (
            ["--config", str(tmp_path / "none.toml"), "--once"],
            f"cannot read {tmp_path / 'none.toml'}: No such file or directory",
        ),
    ]
    for args, line in cases:
        code, out, err = run_cli("enforce", "--root", str(root), *args)
        assert (code, out, err) == (2, "", f"vllm-ledger: error: {line}\n"), args
    code, _out, err = run_cli("enforce", "--root", str(tmp_path / "no"), "--config", str(bad))
    assert code == 2 and "is not a directory: pass --root DIR" in err


def _start(root: Path, config: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "vllm_ledger", "enforce", "--root", str(root), "--config",
         str(config)],
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _written(root: Path) -> float:
    try:
        return overbudget.parse(overbudget.path_in(root).read_bytes())[0]
    except (OSError, ValueError):
        return 0.0


def _wait_for(what: str, done: object, deadline_s: float = 30.0) -> None:
    end = time.monotonic() + deadline_s
    while not done():  # type: ignore[operator]
        assert time.monotonic() < end, what
        time.sleep(0.05)


# A test on a live enforcer lasts a few seconds: one begun this close to a Shanghai midnight
# waits it out first, so its "today" stays one day.
CLEAR_OF_MIDNIGHT_S = 60.0


def _shanghai_midnight(now: float) -> datetime:
    """The midnight that began ``now``'s day in Shanghai."""
    local = datetime.fromtimestamp(now, SH)
    return datetime(local.year, local.month, local.day, tzinfo=SH)


def _root_now(tmp_path: Path) -> tuple[Path, float]:
    """team-a credited 900 tokens a minute ago; the next midnight in Shanghai."""
    root = tmp_path / "now"
    now = time.time()
    left_s = (_shanghai_midnight(now) + timedelta(days=1)).timestamp() - now
    if left_s < CLEAR_OF_MIDNIGHT_S:
        time.sleep(left_s + 0.5)
        now = time.time()
    today = _shanghai_midnight(now)
    at = max(now - 60, today.timestamp())  # today in Shanghai, even a minute after midnight
    calls = [Call(at, key="team-a", adapter="tiny", prompt=800, gen=100)]
    write_credited_ledger(root, "run-n", start_ts=at - 10, end_ts=min(at + 10, now), calls=calls)
    return root, (today + timedelta(days=1)).timestamp()


def test_the_sidecar_publishes_stands_by_and_takes_over(tmp_path: Path) -> None:
    """team-a is past its 900 tokens today: the file lists it until midnight, rewritten every
    5 s; a second enforcer stands by and publishes once the first got SIGTERM (exit 0)."""
    (root, midnight), config = _root_now(tmp_path), _budgets(tmp_path)
    first = _start(root, config)
    second: subprocess.Popen[str] | None = None
    try:
        _wait_for("the first publishes", lambda: _written(root) > 0)
        _written_ts, fresh_s, over = overbudget.parse(overbudget.path_in(root).read_bytes())
        assert (fresh_s, over) == (
            30.0,
            {("key", "team-a"): overbudget.Over("key", "team-a", midnight, "key-team-a-day")},
        )
        second = _start(root, config)
        assert second.stderr is not None
        line = second.stderr.readline()
        assert line.startswith("vllm-ledger enforce: 3 budgets from ")
        assert "standing by to take over" in second.stderr.readline()
        first.send_signal(signal.SIGTERM)
        assert first.wait(30) == 0
        stopped = time.time()
        _wait_for("the second takes over", lambda: _written(root) > stopped)
        second.send_signal(signal.SIGTERM)
        assert second.wait(30) == 0
    finally:
        for p in (first, second):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()


def test_the_enforcer_line_says_what_the_file_does() -> None:
    root = Path("/srv/usage")
    fresh = EnforcerLook(root, "fresh", 100.0, 98.0, 30.0, 1)
    assert look_text(fresh, 2) == (
        "enforcer: enforcing: its file in /srv/usage written 2 s ago lists 1 label"
    )
    assert look_text(fresh, 0) == (
        "enforcer: no budget is enforced (enforce = true refuses past the hard level)"
    )
