"""Who is writing: the run, the writer's rank in it, and the instance it belongs to.

A *run* is one launch of ``vllm serve``. Every API process of that launch must arrive at the
same run id without talking to the others, so the id is derived from the launching process
(the API process itself with one API server, its parent with several): host name, pid and
the process's start time, which together never repeat. ``VLLM_LEDGER_RUN_ID`` overrides it
(launch scripts may set it explicitly).

Standard library only: this runs inside vLLM.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from vllm_ledger import __version__
from vllm_ledger.units import ROOT_ENV, WRITERS_ENV

_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def model_label(names: Sequence[str]) -> str:
    """The served model names as one label (``report --by model``, the exporter's
    ``model_name``): joined by commas, ``?`` when there are none."""
    return ",".join(names) or "?"


@dataclass(frozen=True)
class InstanceInfo:
    """Facts about the vLLM instance a run belongs to. Nothing about requests."""

    served_model_names: tuple[str, ...] = ()
    port: int | None = None
    host_name: str = ""
    vllm_version: str = ""
    ledger_version: str = __version__

    @property
    def key(self) -> str:
        """The instance a run belongs to: host and port (or model when no port is known)."""
        if self.port is not None:
            return f"{self.host_name}:{self.port}"
        return f"{self.host_name}:{model_label(self.served_model_names)}"

    def to_meta(self) -> dict[str, str]:
        d = asdict(self)
        return {
            "served_model_names": ",".join(d["served_model_names"]),
            "port": "" if self.port is None else str(self.port),
            "host_name": self.host_name,
            "vllm_version": self.vllm_version,
            "ledger_version": self.ledger_version,
        }

    @classmethod
    def from_meta(cls, meta: Mapping[str, str]) -> InstanceInfo:
        port = meta.get("port", "")
        names = meta.get("served_model_names", "")
        return cls(
            served_model_names=tuple(n for n in names.split(",") if n),
            port=int(port) if port.isdigit() else None,
            host_name=meta.get("host_name", ""),
            vllm_version=meta.get("vllm_version", ""),
            ledger_version=meta.get("ledger_version", ""),
        )


@dataclass(frozen=True)
class WriterIdentity:
    """One writer: an API process of one run."""

    run_id: str
    writer_rank: int
    expected_writers: int
    engine_indexes: tuple[int, ...] = (0,)
    pid: int = 0
    instance: InstanceInfo = field(default_factory=InstanceInfo)

    @property
    def name(self) -> str:
        return f"{self.run_id}/w{self.writer_rank}"


def process_start_ts(pid: int, proc: Path = Path("/proc")) -> float | None:
    """Wall-clock start time of a process from /proc, or None where it cannot be read."""
    try:
        stat = (proc / str(pid) / "stat").read_text()
        fields = stat[stat.rindex(")") + 2 :].split()
        start_ticks = int(fields[19])
        btime = next(
            int(line.split()[1])
            for line in (proc / "stat").read_text().splitlines()
            if line.startswith("btime ")
        )
        return btime + start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def derive_run_id(launcher_pid: int, host_name: str, start_ts: float | None) -> str:
    """A run id shared by every API process of one launch, sortable by start time."""
    if start_ts is None:
        start_ts = time.time()
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(start_ts))
    host = _SAFE.sub("-", host_name)[:40] or "host"
    return f"{stamp}-{host}-{launcher_pid}"


def sanitize_run_id(value: str) -> str | None:
    value = value.strip()
    return value if RUN_ID_RE.match(value) else None


# deploy_usage (docs/migrating-from-deploy-usage.md) named it LLMDEPLOY_USAGE_WRITERS: an alias.
WRITERS_ENV_ALIASES = ("LLMDEPLOY_USAGE_WRITERS",)
MAX_EXPECTED_WRITERS_ENV = 4096  # the reader refuses more (read/values.py)
_WHOLE_NUMBER = re.compile(r"[0-9]{1,4}")


def expected_writers_from_env(env: Mapping[str, str]) -> tuple[int | None, str | None]:
    """The expected writer count the environment sets, and the variable it came from.

    ``VLLM_LEDGER_WRITERS`` first, then its aliases; the first one that is set (not empty)
    decides, and a value that is not a whole number from 1 to 4096 sets nothing. Never raises.
    """
    for name in (WRITERS_ENV, *WRITERS_ENV_ALIASES):
        value = str(env.get(name, "") or "").strip()
        if not value:
            continue
        if _WHOLE_NUMBER.fullmatch(value) and 0 < int(value) <= MAX_EXPECTED_WRITERS_ENV:
            return int(value), name
        return None, name
    return None, None


def default_root(env: Mapping[str, str]) -> Path:
    """``VLLM_LEDGER_DIR``, else ``$XDG_DATA_HOME/vllm-ledger``, else ``~/.local/share/...``."""
    if env.get(ROOT_ENV):
        return Path(env[ROOT_ENV]).expanduser()
    data_home = env.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "vllm-ledger"


def host_name() -> str:
    import socket  # only writers need it; readers import this module for InstanceInfo

    return socket.gethostname()
