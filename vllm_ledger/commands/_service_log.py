"""The log lines of a long-running command (exporter, notifier): plain text or JSON lines."""

from __future__ import annotations

import logging
import os
import sys

from vllm_ledger import units

JSON_LOG_KEYS = ("asctime", "levelname", "name", "processName", "process", "message")


def service_logging() -> None:
    """Log lines of a long-running command (exporter, notifier) to stderr, INFO and up, with
    the time and the logger's name: a refused request or a cut client is one line there (and in
    journald under systemd). Commands that print a result and exit keep WARNING. With
    ``VLLM_LEDGER_LOG_FORMAT=json`` each line is a JSON object with the keys vLLM's own JSON
    formatter writes (``JSON_LOG_KEYS``), so one log pipeline parses both."""
    if os.environ.get(units.LOG_FORMAT_ENV) != "json":
        logging.basicConfig(
            level=logging.INFO,
            format="%(asctime)s %(levelname)s %(name)s: %(message)s",
            stream=sys.stderr,
        )
        return
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLineFormatter())
    logging.basicConfig(level=logging.INFO, handlers=[handler])


class JsonLineFormatter(logging.Formatter):
    """One JSON object a line: ``JSON_LOG_KEYS``, and ``exc_info`` when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        import json

        record.message = record.getMessage()
        record.asctime = self.formatTime(record)
        line = {key: getattr(record, key) for key in JSON_LOG_KEYS}
        if record.exc_info:
            line["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(line, ensure_ascii=False)
