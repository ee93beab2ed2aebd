"""The stack's files: ``documents(spec)``, every file's content as data (pure), each rendered
(YAML through PyYAML, the ``observability`` extra; the dashboard as JSON) and written under the
output folder by ``write_stack``, and the Alertmanager token written once (a new random one,
mode 0600, when its file does not exist; never replaced)."""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vllm_ledger.errors import BadArgument, MissingExtra
from vllm_ledger.observe.alerts import rules_document
from vllm_ledger.observe.budget_alerts import budget_rules_document
from vllm_ledger.observe.dashboard import dashboard
from vllm_ledger.observe.stack import (
    ALERTMANAGER_YML,
    ALERTS_YML,
    BUDGETS_YML,
    COMPOSE_YAML,
    DASHBOARD_JSON,
    DASHBOARDS_YML,
    DATASOURCE_YML,
    HEADER,
    PROMETHEUS_YML,
    StackSpec,
    alertmanager_config,
    dashboard_provisioning,
    datasource_provisioning,
    prometheus_config,
)
from vllm_ledger.observe.stack_compose import compose


def documents(spec: StackSpec) -> dict[str, Any]:
    """Every file of the stack, by path relative to the output folder, as data."""
    budgets: dict[str, Any] = {}
    if spec.budgets is not None:
        budgets[BUDGETS_YML] = budget_rules_document(spec.budgets, spec.budgets_runbook)
    return {
        PROMETHEUS_YML: prometheus_config(spec),
        ALERTS_YML: rules_document(spec.thresholds, spec.alerts, spec.runbook),
        **budgets,
        ALERTMANAGER_YML: alertmanager_config(spec),
        COMPOSE_YAML: compose(spec),
        DATASOURCE_YML: datasource_provisioning(),
        DASHBOARDS_YML: dashboard_provisioning(),
        DASHBOARD_JSON: dashboard(
            spec.max_model_len, ledger_mountpoint=spec.thresholds.ledger_mountpoint
        ),
    }


def _yaml(doc: Any) -> str:
    try:
        import yaml
    except ImportError as exc:
        raise MissingExtra("PyYAML", "observability") from exc
    return HEADER + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=1000)


def render(path: str, doc: Any) -> str:
    if path.endswith(".json"):
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return _yaml(doc)


@dataclass(frozen=True)
class Written:
    """What ``write_stack`` wrote: the stack's files, and the token's file (``token_created``
    when it wrote a new token there, False when the file was already there)."""

    files: list[Path]
    token_file: Path
    token_created: bool


def token_path(out_dir: Path, spec: StackSpec) -> Path:
    return out_dir / spec.token_file  # an absolute token_file stays itself


def _check_token_file(path: Path) -> None:
    if os.path.lexists(path) and not path.is_file():
        raise BadArgument(
            f"{path} is not a regular file (docker compose makes a folder where a mounted file "
            "is missing)",
            hint="remove it and run again, or give another token file",
            argument="token_file",
            value=str(path),
        )


def _create_token_file(path: Path) -> bool:
    """A new random token in ``path``, mode 0600, unless the file exists (then kept as is)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        _check_token_file(path)
        return False
    except OSError as exc:
        raise BadArgument(
            f"cannot write the Alertmanager token {path}: {exc.strerror}",
            hint="give a token file in a folder that exists",
            argument="token_file",
            value=str(path),
        ) from exc
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(secrets.token_urlsafe(32) + "\n")
    return True


def write_stack(out_dir: Path, spec: StackSpec) -> Written:
    """Write the stack under ``out_dir`` (created if needed), and a new token in its token file
    when that file does not exist."""
    if out_dir.exists() and not out_dir.is_dir():
        raise BadArgument(f"{out_dir} exists and is not a directory: pass a folder for the stack")
    token = token_path(out_dir, spec)
    _check_token_file(token)
    written = []
    for rel, doc in documents(spec).items():
        text = render(rel, doc)
        path = out_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return Written(written, token, _create_token_file(token))


__all__ = ["Written", "documents", "render", "token_path", "write_stack"]
