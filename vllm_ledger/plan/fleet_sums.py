"""What a fleet's hosts serve, summed: each window's figures (``Figures``) and whole-root coverage
(``Coverage``) per host, the figures per (host, model), and which windows each (host, ledger
instance) has complete. Pure.

``Served`` takes each series' one copy (``plan/fleet_copies.py``) through the value gate
(``plan/fleet_checks.py``): a refused value is named and leaves its host's window short, never
summed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from vllm_ledger import figures, names
from vllm_ledger.errors import BadValues
from vllm_ledger.plan.fleet_checks import Refused, check_sample
from vllm_ledger.plan.fleet_copies import Conflict, Sample, host_of, series_text
from vllm_ledger.read.windows import WINDOW_NAMES  # the windows each exporter serves

# The figures each host's exporter serves per window (``vllm_ledger_window_<name>``).
FIGURE_NAMES: tuple[str, ...] = figures.report_names()
COVERAGE_NAMES: tuple[str, ...] = ("uncovered_seconds", "wall_seconds", "complete", "problems")
PREFIX = names.EXPORTER_PREFIX + "_"


@dataclass
@figures.with_figure_fields("report_name", "int | float")
class Figures:
    """One window's figures, summed over series (a host's, a model's, the fleet's): a field per
    ``FIGURE_NAMES`` (one not declared here from ``figures.with_figure_fields``)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    requests: int = 0
    decode_tokens: int = 0
    decode_seconds: float = 0.0

    def add(self, other: Figures) -> None:
        for name in FIGURE_NAMES:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def put(self, name: str, value: float) -> None:
        """Add one sample of ``vllm_ledger_window_<name>``: a count as an integer."""
        whole = _COUNTED[name]
        setattr(self, name, getattr(self, name) + (round(value) if whole else value))

    @property
    def hit_rate(self) -> float | None:
        return self.cached_tokens / self.input_tokens if self.input_tokens else None

    @property
    def gen_speed(self) -> float | None:
        return self.decode_tokens / self.decode_seconds if self.decode_seconds > 0 else None


# Whether a figure is a count (an integer) or a converted one (decode seconds).
_COUNTED: dict[str, bool] = {f.report_name: f.report_divisor == 1 for f in figures.FIGURES}


@dataclass(frozen=True)
class Coverage:
    """A window's coverage as a host's exporter serves it for its whole root."""

    uncovered_seconds: int | None = None
    wall_seconds: int | None = None
    complete: bool = False
    problems: dict[str, int] = field(default_factory=dict)


def empty_windows() -> dict[str, Figures]:
    return {w: Figures() for w in WINDOW_NAMES}


@dataclass
class Served:
    """What the hosts' window gauges add up to, each series once (``take_once``)."""

    report_ok: dict[str, float] = field(default_factory=dict)
    sums: dict[str, dict[str, Figures]] = field(default_factory=dict)
    coverage: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    per_instance: dict[tuple[str, str], dict[str, bool]] = field(default_factory=dict)
    by_model: dict[tuple[str, str], dict[str, Figures]] = field(default_factory=dict)
    model_instances: dict[str, set[tuple[str, str]]] = field(default_factory=dict)
    instances: dict[str, set[str]] = field(default_factory=dict)
    refused: list[Refused] = field(default_factory=list)
    short: dict[str, set[str]] = field(default_factory=dict)  # windows a bad series leaves short

    @classmethod
    def of(cls, unique: Iterable[Sample], conflicts: Iterable[Conflict]) -> Served:
        """The sums of each series' one copy; a window with a conflict is short on its host."""
        served = cls()
        for c in conflicts:
            served.short.setdefault(c.host, set()).update([c.window] if c.window else WINDOW_NAMES)
        for labels, raw in unique:
            served.add(labels, raw)
        return served

    def add(self, labels: dict[str, str], raw: float) -> None:
        """One series (its one copy) into the host's, its model's and its coverage's sums."""
        hk = host_of(labels)
        metric = labels.get("__name__", "")
        name = metric.removeprefix(PREFIX).removeprefix("window_")
        window = labels.get(names.WINDOW_LABEL, "")
        if metric != names.LEDGER_REPORT_OK and window not in WINDOW_NAMES:
            return
        try:
            value = check_sample(name, labels, raw)
        except BadValues as exc:
            self.refused.append(Refused(hk, window, series_text(labels), raw, exc.what))
            self.short.setdefault(hk, set()).update([window] if window else WINDOW_NAMES)
            return
        if metric == names.LEDGER_REPORT_OK:
            self.report_ok[hk] = min(self.report_ok.get(hk, 1.0), value)
            return
        inst = labels.get(names.LEDGER_INSTANCE_LABEL)
        model = labels.get(names.MODEL_NAME_LABEL)
        if inst:
            self.instances.setdefault(hk, set()).add(inst)
        if name in FIGURE_NAMES:
            self.sums.setdefault(hk, empty_windows())[window].put(name, value)
            if model is not None:
                self.by_model.setdefault((hk, model), empty_windows())[window].put(name, value)
                if inst:
                    self.model_instances.setdefault(model, set()).add((hk, inst))
        elif name in COVERAGE_NAMES and inst:
            if name == "complete":
                self.per_instance.setdefault((hk, inst), {})[window] = value == 1.0
        elif name in COVERAGE_NAMES:  # the whole root's: no ledger_instance label
            got = self.coverage.setdefault(hk, {}).setdefault(window, {"problems": {}})
            if name == "problems":
                code = labels.get(names.PROBLEM_LABEL, "?")
                got["problems"][code] = got["problems"].get(code, 0) + round(value)
            elif name == "complete":
                got["complete"] = value == 1.0
            else:
                got[name] = round(value)

    def host_coverage(self, hk: str) -> dict[str, Coverage]:
        got = {
            w: Coverage(
                c.get("uncovered_seconds"),
                c.get("wall_seconds"),
                bool(c.get("complete", False)),
                dict(sorted(c["problems"].items())),
            )
            for w, c in self.coverage.get(hk, {}).items()
        }
        return {w: got.get(w, Coverage()) for w in WINDOW_NAMES}


__all__ = [
    "COVERAGE_NAMES",
    "FIGURE_NAMES",
    "PREFIX",
    "Coverage",
    "Figures",
    "Served",
    "empty_windows",
]
