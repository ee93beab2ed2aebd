"""`observability --runbook-url`: the published runbook's http(s) address, each alert's
`runbook_url` that address and its section's anchor, in a rules file the real promtool passes;
without it the default path is kept and a note says how to publish the runbook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tests.e2e.prom import promtool
from tests.inproc import run_cli
from vllm_ledger.observe.alerts import DEFAULT_RUNBOOK

BASE = "https://git.example.com/ops/vllm-ledger/blob/main/docs/runbook.md"


def _rules(out: Path) -> list[dict[str, Any]]:
    doc = yaml.safe_load((out / "alerts.yml").read_text())
    return list(doc["groups"][0]["rules"])


def test_each_alert_links_to_the_published_runbook(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    code, _out, err = run_cli("observability", str(out), "--runbook-url", BASE)
    assert code == 0, err
    assert "runbook" not in err  # nothing to say: the address was given
    rules = _rules(out)
    assert len(rules) >= 3
    for r in rules:
        assert r["annotations"]["runbook_url"] == f"{BASE}#{r['alert'].lower()}"
    check = promtool("check", "rules", "alerts.yml", cwd=out)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "SUCCESS" in check.stdout


def test_without_it_the_default_is_kept_and_publishing_is_explained(tmp_path: Path) -> None:
    out = tmp_path / "stack"
    code, _out, err = run_cli("observability", str(out))
    assert code == 0, err
    for r in _rules(out):
        assert r["annotations"]["runbook_url"] == f"{DEFAULT_RUNBOOK}#{r['alert'].lower()}"
    assert (
        f"note: each alert's runbook_url is {DEFAULT_RUNBOOK}#alertname, a path a chat cannot "
        "open: publish docs/runbook.md (your Git host or wiki) and pass its address as "
        "--runbook-url URL (docs/runbook.md)\n"
    ) in err
    check = promtool("check", "rules", "alerts.yml", cwd=out)
    assert check.returncode == 0, check.stdout + check.stderr


def test_a_runbook_url_must_be_an_http_page_without_an_anchor(tmp_path: Path) -> None:
    for value, why in [
        ("docs/runbook.md", "is not an http:// or https:// URL"),
        ("ftp://h/runbook.md", "is not an http:// or https:// URL"),
        ("https:///runbook.md", "names no host"),
        (f"{BASE}#kvcachenearfull", "has a '#'"),
    ]:
        code, out, err = run_cli("observability", str(tmp_path / "s"), "--runbook-url", value)
        assert (code, out) == (2, ""), value
        assert err.startswith(f"vllm-ledger: error: --runbook-url {value[:80]!r} {why}"), err
        assert err.count("\n") == 1
    assert not (tmp_path / "s").exists()


def test_the_help_says_how_to_publish_the_runbook() -> None:
    code, out, _err = run_cli("observability", "--help")
    assert code == 0
    flat = " ".join(out.split())
    assert "Publish docs/runbook.md where your team can open it" in flat
    assert "--runbook-url https://git.example.com/ops/vllm-ledger/blob/main/docs/runbook.md" in flat
