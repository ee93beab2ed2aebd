"""`status --text`: the bot's message for this host, as the bot renders this host's document;
`status --text --digest`: the digest the notifier posts of it.

One ledger with two ports, read at one instant (--at): the text equals what the bot's own
renderer (`bot.message.render_message`, through `render_host`) makes of `status`'s JSON for the
same root and instant, and it carries the figures.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.credited_ledgers import Call, write_credited_ledger
from tests.inproc import run_cli
from tests.ledgers import ev, write_ledger
from vllm_ledger.bot.message import render_host
from vllm_ledger.bot.pricing import load_pricing
from vllm_ledger.bot.usage_text import HostAnswer, digest_text
from vllm_ledger.formats.status import parse
from vllm_ledger.formats.status_asked import ASKS

T0 = 1_796_000_000  # 2026-11-30 (Asia/Shanghai)
AT = T0 + 3600


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("status-text") / "usage"
    write_ledger(
        root,
        "run-a",
        start_ts=T0,
        end_ts=T0 + 1800,
        port=19001,
        events=[ev(T0 + 10, prompt=1234, gen=567, cached=200), ev(T0 + 20, prompt=66, gen=33)],
    )
    write_ledger(
        root,
        "run-b",
        start_ts=T0,
        end_ts=T0 + 1800,
        port=19002,
        events=[ev(T0 + 30, prompt=4_500_000, gen=7)],
    )
    return root


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_text_is_the_bots_message_of_the_json(root: Path, lang: str) -> None:
    base = ("status", "--root", str(root), "--at", str(AT), "--no-health", "--tz", "UTC")
    code, doc, err = run_cli(*base)
    assert (code, err) == (0, "")
    code, text, err = run_cli(*base, "--text", "--lang", lang)
    assert (code, err) == (0, "")
    assert text == render_host(parse(doc.encode("ascii")), lang=lang)


def test_the_text_carries_the_figures_and_the_host_time(root: Path) -> None:
    code, text, _err = run_cli(
        "status", "--root", str(root), "--at", str(AT), "--no-health", "--text", "--lang", "en"
    )
    assert code == 0
    lines = text.splitlines()
    assert lines[:2] == ["Status", "deployments 2: unchecked 2"]
    assert "── :19001 ──" in lines and "── :19002 ──" in lines
    at_19001 = lines[lines.index("── :19001 ──") :]
    # default zone Asia/Shanghai: AT is 2026-11-30 ... +08:00 on the host
    assert at_19001[2] == "0s ago · as of host time 11-30 09:53:20 +08:00"
    today = next(line for line in at_19001 if line.startswith("today"))
    assert today.split()[1:4] == ["1.3K", "600", "200"]  # input 1300, output 600, cached 200
    at_19002 = lines[lines.index("── :19002 ──") :]
    assert next(line for line in at_19002 if line.startswith("today")).split()[1:3] == [
        "4.5M",
        "7",
    ]


def test_the_text_names_todays_top_keys_from_a_ledger_with_whose_tokens(tmp_path: Path) -> None:
    root = tmp_path / "usage"
    calls = [
        Call(T0 + 10, "team-a", "tiny", prompt=1_234_567, gen=30_000, cached=64),
        Call(T0 + 20, "key:1a2b3c4d", "tiny", prompt=40, gen=9),
        Call(T0 + 30, prompt=5, gen=1, untagged=True),
        Call(T0 + 40, "team-a", "tiny", prompt=20, gen=2, aborted=True),
    ]
    write_credited_ledger(root, "run-k", start_ts=T0, end_ts=T0 + 1800, calls=calls, port=19001)
    base = ("status", "--root", str(root), "--at", str(AT), "--no-health", "--tz", "UTC")
    code, doc, err = run_cli(*base)
    assert (code, err) == (0, "")
    for lang, line in (
        ("zh", "今日密钥用量(输入/输出):team-a 1.2M/30.0K、key:1a2b3c4d 40/9;"
               "未归属 25/3(中断请求 1)"),
        ("en", "keys today (input/output): team-a 1.2M/30.0K, key:1a2b3c4d 40/9; not attributed "
               "25/3 (requests cut: 1)"),
    ):  # fmt: skip
        code, text, err = run_cli(*base, "--text", "--lang", lang)
        assert (code, err) == (0, "")
        assert text == render_host(parse(doc.encode("ascii")), lang=lang)
        assert line in text.splitlines()


def test_the_digest_text_is_the_notifiers_digest_of_the_json(tmp_path: Path) -> None:
    root = tmp_path / "usage"
    calls = [
        Call(T0 + 10, "team-a", "tiny", prompt=1_234_567, gen=30_000, cached=64),
        Call(T0 + 20, "key:1a2b3c4d", "org/lora", prompt=40, gen=9),
    ]
    write_credited_ledger(root, "run-d", start_ts=T0, end_ts=T0 + 1800, calls=calls, port=19001)
    (tmp_path / "prices.toml").write_text(
        'cloud_input_price = 2.0\ncloud_output_price = 8.0\ncurrency = "CNY"\n'
    )
    base = ("status", "--root", str(root), "--at", str(T0 + 86400), "--no-health", "--tz", "UTC")
    code, doc, err = run_cli(*base, "--ask", "digest")
    assert (code, err) == (0, "")
    pricing = load_pricing(tmp_path / "prices.toml")
    for lang in ("zh", "en"):
        code, text, err = run_cli(
            *base, "--text", "--digest", "--lang", lang, "--prices", str(tmp_path / "prices.toml")
        )
        assert (code, err) == (0, "")
        host = [HostAnswer(":19001", "ok", parse(doc.encode("ascii")))]
        assert text == digest_text(host, ASKS["digest"], lang, pricing)
    assert text.splitlines()[3:6] == [
        "tokens: input 1,234,607 · output 30,009 · cached 64 · requests 2",
        "cost: 2.71 CNY (at the price file's rates)",
        "top keys (input/output): team-a 1,234,567/30,000, key:1a2b3c4d 40/9",
    ]
    code, _out, err = run_cli(*base, "--prices", str(tmp_path / "prices.toml"))
    assert (code, err) == (
        2,
        "vllm-ledger: error: --prices prices the digest's text: give it with --text --digest\n",
    )
