"""Write docs/cli.md: the flag vocabulary, then every command's own --help (tests/test_cli.py
checks it is current)."""

from __future__ import annotations

import argparse
import io
import os
import sys
from contextlib import redirect_stdout
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from vllm_ledger.cli import build_parser, command_modules  # noqa: E402

VOCABULARY = """\
## Vocabulary

Every command spells the same thing the same way. An old spelling still works until the next
release, with the value its new spelling takes; it is hidden from `--help` and prints one line
on stderr, once per invocation, naming the new spelling:

    vllm-ledger: note: --interval-s is deprecated; use --interval 30s (it still works until the next release)

A command line that is refused prints only its one error line.

| Concept | Spelling | Examples | Old spellings kept for one release |
|---|---|---|---|
| a span of time | a duration: `30s`, `10m`, `7d`, `1h30m`, `1.5h`, `500ms`, or plain seconds (`30`) | `poll --interval 30s`, `advise --range 30m`, `fleet --stale-after 1m`, `verify --wait 10s` | `poll`: `--interval-s`, `--deadline-s`, `--connect-timeout-s` (now `--interval`, `--deadline`, `--connect-timeout`); `advise`: `--sample-seconds` (now `--sample-for`) |
| a window of the ledger | `--window NAME`: `today`, `yesterday`, `24h`, `3d`, `7d`, `30d`, `this-month`, `last-month`, `total`, the same in `report`, `export`, `cost` and `timeline` (`timeline` also takes any duration ending now, such as `90m` or `2w`) | `cost --window last-month`, `timeline --window yesterday --step 1h` | none (`cost` took five of them, `timeline` three) |
| a file written | `--output FILE` (`-`: standard output, where the command can print it) | `render --output run.sh`, `export --output november.csv` | none |
| a folder written | `--output DIR` | `ramp --output ramp-1`, `observability --output ./monitoring`, `bundle --output ./plugin` | `ramp`: `--out`; the folder as a positional argument of `observability` and `bundle` (still documented, not deprecated) |
| an address to listen on | `--listen HOST:PORT` (`[::1]:9464` for IPv6; port 0: any free port) | `exporter --listen 0.0.0.0:9464` | `exporter`: `--host`, `--port` |
| a config file read | JSON, or TOML (Python 3.11 or later), told apart by the suffix | `poll --config notify.json`, `cost --config prices.toml`, `render --host host.json` | `cost`: a YAML `--config` (prices.yaml) |
| an instance | `--instance HOST:PORT` as `report --by instance` prints it, or a bare port | `report --instance gpu1:8000`, `status --instance 8000` | none |
| a time | one grammar for every flag that takes one, within 2000-2100: a date (`2026-12-01`, or `20261201`), a month (`2026-12`: its first day), a local time (`2026-12-01T08:00`, `2026-12-01 08:00`), ISO 8601 with an offset (`2026-12-01T08:00:00+08:00`, `...Z`), Unix seconds, `today`, `yesterday`, or a duration ago (`7d`, not reaching back before 2000-01-01); a date or local time is read in the command's zone, a range that ends before it starts and a period after the cutoff are said in that zone's words ([ledger.md](ledger.md#times-for---since---until---at-and---from)) | `report --at`, `--since`, `--until`, `export --since`, `timeline --at`, `cost --at`, `status --at`, `declare-stop --from`/`--until` | none (`--at` and `declare-stop` took only Unix seconds and ISO 8601 with an offset; `enforce --at` still does) |
| a step | `--by hour`, `--by day`, `--by month`: where the zone's clock starts one, the same rows in `report`, `export` and `timeline` (with a key: `--by day,model`); `timeline --step DURATION` cuts fixed-length steps instead (`5m`, `90m`; not a calendar step: a day of 23 or 25 hours is still 24 h there) | `report --by day --since 7d`, `export --by day,model`, `timeline --by hour --window today` | `export`: `--step hour`, `--step day`, `--step month` (`--step day` is now `--by day,model,instance`); `timeline`: `--step hour`, `--step day`, `--step month` (now `--by hour`, `--by day`, `--by month`) |
| a time zone | `--tz ZONE`, an IANA name | `--tz Europe/Berlin` | none |

Rules behind the table:

- A duration has units `w`, `d`, `h`, `m`, `s`, `ms`, each at most once, largest first (`1h30m`;
  `30m1h` is refused); there are no months or years. A plain number is seconds; one above the
  flag's range that fits once divided by 1000 is refused as milliseconds. Each flag states its
  range in its one-line error. A flag named after the metric it compares with keeps the unit in
  its name and takes a duration too (`--ttft-p99-seconds 500ms`, `--ledger-uncovered-seconds 1m`).
- `observability` writes its durations (`--scrape-interval`, `--kv-cache-for`, ...) into
  Prometheus's files: as given when Prometheus reads them so, else in Prometheus's units
  (`90` becomes `1m30s`).
- YAML only where the file is another program's own: `observability` writes prometheus.yml, the
  alert rules, alertmanager.yml and compose.yaml. No command reads YAML but the deprecated
  `cost --config *.yaml`; `poll --ssh-config` is ssh's own format.
- Kept as they are, on purpose: `render --host HOST.json` is the host file (not an address);
  `report --html FILE` is a page written beside the text on standard output, named by its
  format; `export --format csv|jsonl` picks among two file formats where `report` and
  `timeline` print text unless `--json` or `--csv` is given.
"""  # noqa: E501  (a markdown table's row is one line)

CSV_DIALECT = """\
## CSV output

`report --csv`, `export` (the default `--format csv`) and `timeline --csv` write one dialect
(`vllm_ledger/formats/csvout.py`):

- one header row; the columns carry the JSON's field names (`input`, `cached`,
  `uncovered_seconds`, ...); RFC 4180 quoting; `\\n` line ends;
- every instant is two columns: `NAME` in ISO 8601 with the zone's offset
  (`2026-11-30T09:00:00+08:00`) and `NAME_unix` in Unix seconds (`start`, `start_unix`,
  `cutoff`, `cutoff_unix`; `export` has `end`/`end_unix` for the step's end);
- booleans are `true`/`false`; a ratio with a zero denominator is an empty cell (unknown,
  never 0), and so is every figure of a row whose figures are unknown (no second of it vouched
  for, nothing counted: its `figures` column says `unknown`; `--zeros` writes 0 there instead,
  [ledger.md](ledger.md#unknown-is-never-zero)); problems are `code=n;code=n`;
- text from a ledger (model and host names, keys) is terminal-safe (control characters shown as
  `\\x1b`) and **formula-safe**: a cell that starts with `=`, `+`, `-`, `@`, `|`, their
  full-width forms `＝` `＋` `－` `＠` (U+FF1D, U+FF0B, U+FF0D, U+FF20), or white space (a
  space, a no-break space U+00A0, U+3000: a spreadsheet may trim it and read what follows) and
  is not a number gets a leading `'`, so a spreadsheet shows `=HYPERLINK(...)` instead of
  running it (a tab or carriage return is already shown escaped). `ramp`'s `ramp.csv` is
  written in the same dialect (its columns keep the table's headings).

Earlier releases wrote three dialects (Unix seconds and `True`/`False` in `report --csv`, ISO
times and `False` in `export`, Unix seconds plus `start_local` in `timeline --csv`); a script
that read `start_local` reads `start` now, and one that read `end` from `timeline --csv` reads
`cutoff_unix`.
"""


def render() -> str:
    os.environ["COLUMNS"] = "100"
    parser = build_parser()
    parts = [
        "# Command reference",
        "",
        "Generated from `--help` by `scripts/gen_cli_docs.py`, below this section.",
        "",
        VOCABULARY,
        CSV_DIALECT,
        "## vllm-ledger",
        "",
    ]
    buf = io.StringIO()
    with redirect_stdout(buf):
        parser.print_help()
    parts += ["```", buf.getvalue().rstrip(), "```", ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    for mod in command_modules():
        p = sub.choices[mod.NAME]
        buf = io.StringIO()
        with redirect_stdout(buf):
            p.print_help()
        parts += [f"## {mod.NAME}", "", "```", buf.getvalue().rstrip(), "```", ""]
    return "\n".join(parts)


if __name__ == "__main__":
    (REPO / "docs" / "cli.md").write_text(render())
    print("wrote docs/cli.md")
