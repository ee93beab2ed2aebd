"""The capacity decision table (docs/cost-and-capacity.md#advise), walked over measured readings.

Four rules, from readings to a diagnosis and an action:

====================  ==========================================  ===============================
rule                  readings                                    action
====================  ==========================================  ===============================
kv-capacity           KV-cache usage > 90 % and waiting > 0       lower --max-model-len; quantise
compute-bound         GPU utilisation > 95 %, throughput flat     add GPUs or a stronger GPU
scheduling-prefill    TTFT P99 high (> 3 s), GPU utilisation      raise --max-num-batched-tokens;
                      < 60 %                                      try another engine (SGLang)
power-efficiency      power at full load, throughput flat         speculative decoding or more
                                                                  aggressive quantisation
====================  ==========================================  ===============================

"Throughput flat" is judged inside the sample: generation tokens/s in its second half is
less than 10 % above the first half (not rising). Gauges (KV usage, waiting, GPU
utilisation, power) are means over the sample; TTFT P99 comes from the histogram's increase
over the sample. A rule whose readings are missing (no GPU metrics, no request started in the
sample) is "not judgeable", never "missed"; so is a rule that needs a reading from a
Prometheus answer the store called partial or gave a warning with (``Readings.told``): a mean
over the engines that answered is not the engines' mean.

``advise`` (pure) walks the table over ``Readings``; ``plan/advise_readings.py`` takes them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from vllm_ledger.names import KV_CACHE_FULL_FRACTION, TTFT_P99_SLOW_SECONDS
from vllm_ledger.plan.advise_readings import READING_NAMES, Readings


@dataclass(frozen=True)
class Thresholds:
    kv_usage: float = KV_CACHE_FULL_FRACTION
    gpu_high_percent: float = 95.0
    gpu_low_percent: float = 60.0
    ttft_p99_seconds: float = TTFT_P99_SLOW_SECONDS  # the TTFT alert's (docs/runbook.md)
    full_power_fraction: float = 0.90  # "full load": power at or above this share of the limit
    flat_rise: float = 0.10  # throughput rising less than this between halves is flat


def throughput_flat(r: Readings, rise: float = Thresholds.flat_rise) -> bool | None:
    """Not rising: the second half's tokens/s is under (1 + rise) x the first half's.

    None when it cannot be told (no halves, or no generation at all in the sample).
    """
    if r.gen_tokens_per_s_halves is None:
        return None
    first, second = r.gen_tokens_per_s_halves
    if first <= 0:
        return None if second <= 0 else False
    return second < first * (1 + rise)


@dataclass(frozen=True)
class Rule:
    name: str
    when: str
    diagnosis: str
    action: str


def rules_for(t: Thresholds) -> tuple[Rule, ...]:
    """The four rules, each saying the thresholds in force (``--ttft-p99-seconds`` and the
    others move them: the label must say what was judged)."""
    return (
        Rule(
            "kv-capacity",
            f"KV-cache usage > {t.kv_usage * 100:g} % and requests waiting > 0",
            "KV-cache capacity bottleneck",
            "lower --max-model-len; quantise the weights or the KV cache (--kv-cache-dtype fp8)",
        ),
        Rule(
            "compute-bound",
            f"GPU utilisation > {t.gpu_high_percent:g} % and throughput no longer rising",
            "compute bottleneck",
            "add GPUs or move to a stronger GPU",
        ),
        Rule(
            "scheduling-prefill",
            f"TTFT P99 high (> {t.ttft_p99_seconds:g} s) with GPU utilisation "
            f"< {t.gpu_low_percent:g} %",
            "inefficient scheduling or prefill",
            "raise --max-num-batched-tokens; try another engine (e.g. SGLang)",
        ),
        Rule(
            "power-efficiency",
            f"power at full load (>= {t.full_power_fraction * 100:g} % of the limit) with "
            "throughput flat",
            "poor energy efficiency",
            "speculative decoding or more aggressive quantisation",
        ),
    )


RULES: tuple[Rule, ...] = rules_for(Thresholds())  # at the default thresholds


@dataclass(frozen=True)
class Verdict:
    rule: Rule
    state: str  # met | missed | not judgeable
    why: str


@dataclass(frozen=True)
class Advice:
    readings: Readings
    verdicts: tuple[Verdict, ...] = field(default_factory=tuple)

    @property
    def met(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.state == "met")

    @property
    def not_judgeable(self) -> tuple[Verdict, ...]:
        return tuple(v for v in self.verdicts if v.state == "not judgeable")


def _fmt(x: float | None, unit: str = "", digits: int = 2) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}{unit}"


def _judge(
    rule: Rule, needs: dict[str, object], met: bool, why: str, doubtful: frozenset[str]
) -> Verdict:
    """The rule's verdict; not judgeable when a reading it needs is missing, or came from an
    answer the store called partial (``doubtful``: those readings' names)."""
    missing = [k for k, v in needs.items() if v is None]
    partial = [k for k, v in needs.items() if v is not None and k in doubtful]
    reasons = ["no reading of " + ", ".join(missing)] if missing else []
    reasons += ["a partial answer for " + ", ".join(partial)] if partial else []
    if reasons:
        return Verdict(rule, "not judgeable", "; ".join(reasons))
    return Verdict(rule, "met" if met else "missed", why)


def advise(r: Readings, t: Thresholds | None = None) -> Advice:
    """Walk the four rules over the readings. Pure."""
    t = t or Thresholds()
    rules = rules_for(t)
    flat = throughput_flat(r, t.flat_rise)
    halves = r.gen_tokens_per_s_halves
    flat_text = "n/a" if halves is None else f"{halves[0]:.1f} -> {halves[1]:.1f} tokens/s"
    kv, wait, gpu, ttft = r.kv_cache_usage, r.num_waiting, r.gpu_util_percent, r.ttft_p99_seconds
    doubtful = frozenset(READING_NAMES[name] for name in r.told)
    verdicts = [
        _judge(
            rules[0],
            {"KV-cache usage": kv, "waiting requests": wait},
            kv is not None and wait is not None and kv > t.kv_usage and wait > 0,
            f"KV {_fmt(None if kv is None else kv * 100, ' %', 1)}, waiting {_fmt(wait)}",
            doubtful,
        ),
        _judge(
            rules[1],
            {"GPU utilisation": gpu, "throughput trend": flat},
            gpu is not None and bool(flat) and gpu > t.gpu_high_percent,
            f"GPU {_fmt(gpu, ' %', 1)}, throughput {flat_text}",
            doubtful,
        ),
        _judge(
            rules[2],
            {"TTFT P99": ttft, "GPU utilisation": gpu},
            ttft is not None
            and gpu is not None
            and ttft > t.ttft_p99_seconds
            and gpu < t.gpu_low_percent,
            f"TTFT P99 {_fmt(ttft, ' s', 3)}, GPU {_fmt(gpu, ' %', 1)}",
            doubtful,
        ),
    ]
    full = None
    if r.power_watts is not None and r.power_limit_watts:
        full = r.power_watts >= t.full_power_fraction * r.power_limit_watts
    verdicts.append(
        _judge(
            rules[3],
            {
                "power": r.power_watts,
                "power limit": r.power_limit_watts or None,
                "throughput trend": flat,
            },
            bool(full) and bool(flat),
            f"power {_fmt(r.power_watts, ' W', 0)} of {_fmt(r.power_limit_watts, ' W', 0)}, "
            f"throughput {flat_text}",
            doubtful,
        )
    )
    return Advice(r, tuple(verdicts))


__all__ = [
    "RULES",
    "Advice",
    "Rule",
    "Thresholds",
    "Verdict",
    "advise",
]
