"""One module per CLI command: ``NAME``, ``HELP``, ``configure(parser)``, ``run(args)``.

``COMMANDS`` registers each command's name, module and one-line help, so ``vllm-ledger --help``
lists them all while ``cli.py`` imports only the module of the command that runs (a report
never pays for importing what ``advise`` or ``ramp`` need). A test keeps it equal to the
modules and their ``HELP``.
"""

from __future__ import annotations

# name -> (module under vllm_ledger.commands, one-line help: the module's HELP)
COMMANDS: dict[str, tuple[str, str]] = {
    "advise": (
        "advise",
        "read KV cache, queue, GPU, TTFT, power and throughput; say which capacity rule is met",
    ),
    "bundle": ("bundle", "write a plugin folder that PYTHONPATH=DIR vllm serve loads without pip"),
    "check": (
        "check",
        "integrity pass over every ledger file; exit 1 if anything is wrong (for cron)",
    ),
    "compact": (
        "compact",
        "drop per-second rows older than 8 days from finished ledgers; refresh the summary",
    ),
    "cost": (
        "cost",
        "cost per million tokens (allocation and usage bases) and the break-even vs a cloud API",
    ),
    "declare-stop": (
        "declare_stop",
        "record that an instance was stopped on purpose: the report shows that time as declared",
    ),
    "doctor": (
        "doctor",
        "after an upgrade: stats interface, /metrics agreement, writers, storage, attribution, "
        "budgets",
    ),
    "enforce": (
        "enforce",
        "judge the budgets every 5 s and publish who is over (hard budgets), or look once",
    ),
    "export": (
        "export",
        "rows of hour, day or month x model x instance with coverage, as CSV or JSON lines",
    ),
    "exporter": (
        "exporter",
        "serve restart-proof token counters, windows, coverage and GPU readings on /metrics",
    ),
    "fleet": (
        "fleet",
        "every host's exporter windows from Prometheus: per host, per model, fleet total",
    ),
    "observability": (
        "observability",
        "write prometheus.yml, alert rules, alertmanager.yml, a Grafana dashboard and compose.yaml",
    ),
    "keys": (
        "keys",
        "name API keys for attribution: a key names file's line, or the label a key gets",
    ),
    "notifier": ("notifier", "run the chat bot: status replies, health and alerts, sent once"),
    "poll": (
        "poll",
        "ask every configured host for its status (ssh, local or http) and print the bot's reply",
    ),
    "preflight": ("preflight", "check a host before launch: GPU, CPU, RAM, disk, port, clock"),
    "ramp": (
        "ramp",
        "drive an OpenAI-compatible server at rising concurrency; chart throughput, TTFT, KV",
    ),
    "render": (
        "render",
        "a host file as a launch: bare, docker, systemd, compose, supervisor, kubernetes, image",
    ),
    "report": ("report", "sum every ledger into today / 24h / 3d / 7d / total, with coverage"),
    "ssh-key-line": (
        "ssh_key_line",
        "print the authorized_keys line that lets a key run only the status command",
    ),
    "status": (
        "status",
        "print the bounded status JSON for the bot (numbers only, per port, < 60 KiB)",
    ),
    "timeline": (
        "timeline",
        "a window in steps: input, output, cached, hit rate, speed and uncovered time per step",
    ),
    "verify": (
        "verify",
        "compare the current run's ledger with vLLM's /metrics counters (after every upgrade)",
    ),
}
