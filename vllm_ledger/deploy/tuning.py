"""Launch tuning hints (``render --explain``): the tuning rules and the calibration of
docs/launch.md#tuning-hints-explain. Pure.

Three rules for a single host, applied as written:

* memory, by the GPU's memory in GB (10^9 bytes, ``total_memory / 1e9``): under 16 GB
  ``gpu_memory_utilization`` 0.85; under 24 GB 0.90; else 0.95. With several GPUs the smallest
  decides (vLLM applies the fraction to each). The rule's swap space (4, 8 or 16 GB) is not
  suggested: vLLM 0.18.0 dropped ``--swap-space`` (``SKIPPED``).
* batching, by workload: interactive ``max_num_seqs`` 4 and ``max_num_batched_tokens`` 1024;
  batch 32 and 8192.
* dtype: bfloat16 where the GPU supports it (A100 and later: compute capability 8.0+),
  else float16 (most GPUs), else float32 (the fallback; also a CPU host here).

Calibration: input plus output tokens over requests is the mean length of a request;
when ``max_model_len`` reserves far more (its example: 3K used, 32K reserved) the reservation
is waste. ``calibration`` flags ``max_model_len`` at ``FAR_ABOVE`` times the mean or more and
suggests the smallest power of two at least ``HEADROOM`` times the mean (our margin for
requests longer than the mean).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from vllm_ledger.formats.table import display_width, pad
from vllm_ledger.observe.gpu import GpuReading

Workload = Literal["interactive", "batch"]
WORKLOADS: tuple[Workload, ...] = ("interactive", "batch")
GB = 10**9
FAR_ABOVE = 4
HEADROOM = 4

# GPU models by dtype support, as words of NVML's name ("NVIDIA A100-SXM4-80GB" -> A100).
_BF16_MODELS = frozenset(
    "A100 A800 A10 A10G A16 A2 A30 A40 A4000 A4500 A5000 A5500 A6000 H100 H200 H800 H20 "
    "GH200 B100 B200 GB200 L4 L20 L40 L40S".split()
)
_FP16_MODELS = frozenset("V100 V100S T4 T4G P100 P40 P4".split())
_RTX_BF16_SERIES = "345"  # GeForce RTX 30xx, 40xx, 50xx (Ampere and later); 20xx is Turing

RULE_MEMORY = "memory by GPU size: <16 GB 0.85, <24 GB 0.90, else 0.95"
RULE_BATCH = "batching by request pattern: interactive 4 seqs/1024 tokens, batch 32/8192"
RULE_DTYPE = "precision: bfloat16 where supported, else float16, else float32"
RULE_CALIBRATION = "calibration: mean tokens per request against max_model_len"
# Settings of the rules that no vLLM this project supports (0.30 and later) takes, and why.
SKIPPED = {
    "swap_space": "swap space (--swap-space): not suggested, vLLM 0.18.0 dropped the flag "
    "(the V1 engine never swaps to CPU memory)",
}


@dataclass(frozen=True)
class Gpu:
    """What the hints need of one GPU; a field is None where it is not known."""

    name: str | None
    memory_bytes: int | None


@dataclass(frozen=True)
class Hint:
    """One suggested setting: the key, its value (None: unknown), why, and the rule's source."""

    key: str
    value: str | None
    why: str
    rule: str

    @property
    def flag(self) -> str:
        """The ``vllm serve`` flag that sets it: ``max_num_seqs`` -> ``--max-num-seqs``."""
        return "--" + self.key.replace("_", "-")


def hint_args(hints: Sequence[Hint]) -> list[str]:
    """The flags and values of the hints that have a value (unknown and n/a left out)."""
    return [w for h in hints if h.value not in (None, "n/a") for w in (h.flag, str(h.value))]


def memory_hints(gpus: Sequence[Gpu]) -> list[Hint]:
    """gpu_memory_utilization from the smallest GPU's memory."""
    sizes = [g.memory_bytes for g in gpus if g.memory_bytes is not None]
    if not gpus:
        why = "no GPU in the host file: not a CPU host's setting"
        return [Hint("gpu_memory_utilization", "n/a", why, RULE_MEMORY)]
    if len(sizes) < len(gpus):
        why = "GPU memory unknown (no NVML here and no gpu_memory_gb in the host file)"
        return [Hint("gpu_memory_utilization", None, why, RULE_MEMORY)]
    gb = min(sizes) / GB
    if gb < 16:
        util, band = "0.85", "under 16 GB"
    elif gb < 24:
        util, band = "0.9", "16 to 24 GB"
    else:
        util, band = "0.95", "24 GB or more"
    why = f"smallest GPU has {gb:.1f} GB: {band}"
    return [Hint("gpu_memory_utilization", util, why, RULE_MEMORY)]


def batch_hints(workload: Workload) -> list[Hint]:
    """max_num_seqs and max_num_batched_tokens for the workload kind."""
    if workload == "interactive":
        seqs, tokens, why = "4", "1024", "interactive: few sequences at once keep first tokens fast"
    else:
        seqs, tokens, why = "32", "8192", "batch: many sequences at once for throughput"
    return [
        Hint("max_num_seqs", seqs, why, RULE_BATCH),
        Hint("max_num_batched_tokens", tokens, why, RULE_BATCH),
    ]


def dtype_support(name: str) -> Literal["bfloat16", "float16"] | None:
    """The best half precision a GPU model supports, from its NVML name; None if not known."""
    words = name.upper().replace("-", " ").split()
    if "ADA" in words:  # RTX 6000 Ada Generation
        return "bfloat16"
    for i, word in enumerate(words):
        if word in _BF16_MODELS:
            return "bfloat16"
        if word in _FP16_MODELS:
            return "float16"
        following = words[i + 1] if i + 1 < len(words) else ""
        if word == "RTX" and following[:1].isdigit() and "QUADRO" not in words:
            return "bfloat16" if following[0] in _RTX_BF16_SERIES else "float16"
        if word == "RTX" and "QUADRO" in words:
            return "float16"
    return None


def dtype_hint(gpus: Sequence[Gpu], *, cpu: bool) -> Hint:
    """bfloat16 if every GPU supports it, else float16 if every one does, else float32."""
    if cpu:
        return Hint("dtype", "float32", "no GPU (CPU serving): the fallback", RULE_DTYPE)
    names = [g.name for g in gpus]
    if not names or any(n is None for n in names):
        why = "GPU model unknown (no NVML here and no gpu_name in the host file)"
        return Hint("dtype", None, why, RULE_DTYPE)
    support = [dtype_support(n) for n in names if n is not None]
    shown = ", ".join(sorted({n for n in names if n is not None}))
    if all(s == "bfloat16" for s in support):
        return Hint("dtype", "bfloat16", f"{shown} supports bfloat16", RULE_DTYPE)
    if all(s in ("bfloat16", "float16") for s in support):
        return Hint("dtype", "float16", f"{shown}: float16, not bfloat16", RULE_DTYPE)
    why = f"{shown}: half-precision support not known here, so the fallback"
    return Hint("dtype", "float32", why, RULE_DTYPE)


def tuning_hints(gpus: Sequence[Gpu], workload: Workload, *, cpu: bool) -> list[Hint]:
    """Every tuning hint, in the order the launch script passes the flags."""
    return [*memory_hints([] if cpu else gpus), *batch_hints(workload), dtype_hint(gpus, cpu=cpu)]


@dataclass(frozen=True)
class Calibration:
    """The calibration figures for one window of the ledger."""

    window: str
    requests: int
    mean_prompt_tokens: float | None
    mean_output_tokens: float | None
    max_model_len: int | None
    suggested_max_model_len: int | None
    note: str


def calibration(
    window: str, requests: int, input_tokens: int, output_tokens: int, max_model_len: int | None
) -> Calibration:
    """Mean prompt and output tokens per request against max_model_len, with a suggestion when
    max_model_len is ``FAR_ABOVE`` times the mean request or more."""
    if requests <= 0:
        return Calibration(
            window, 0, None, None, max_model_len, None, f"no requests in the {window} window"
        )
    prompt, output = input_tokens / requests, output_tokens / requests
    mean = prompt + output
    if max_model_len is None:
        note = "max_model_len is not set in the host file (vLLM takes the model's): compare by hand"
        return Calibration(window, requests, prompt, output, None, None, note)
    ratio = max_model_len / mean if mean else float("inf")
    if ratio < FAR_ABOVE:
        note = f"max_model_len is {ratio:.1f}x the mean request: no change suggested"
        return Calibration(window, requests, prompt, output, max_model_len, None, note)
    suggested = 1
    while suggested < HEADROOM * mean:
        suggested *= 2
    if suggested >= max_model_len:
        note = f"max_model_len is {ratio:.1f}x the mean request, but no smaller power of two fits"
        return Calibration(window, requests, prompt, output, max_model_len, None, note)
    note = (
        f"max_model_len is {ratio:.1f}x the mean request ({mean:.0f} tokens): KV cache reserved "
        f"for lengths requests do not use; consider {suggested} ({HEADROOM}x the mean, a power "
        "of two) if your longest requests fit"
    )
    return Calibration(window, requests, prompt, output, max_model_len, suggested, note)


def explain_text(
    hints: Sequence[Hint],
    workload: Workload,
    gpu_source: str,
    calib: Calibration | None,
    notes: Sequence[str] = (),
) -> str:
    """The text ``render --explain`` prints; ``notes``: hints left out and the flag check."""
    lines = [f"Tuning hints, {workload} workload (GPUs: {gpu_source})", ""]
    width = max(display_width(h.key) for h in hints)
    for h in hints:
        value = h.value if h.value is not None else "unknown"
        lines.append(f"  {pad(h.key, width)}  {pad(value, 9)} {h.why}")
        lines.append(f"  {pad('', width)}  {pad('', 9)} rule: {h.rule}")
    lines += [f"  {note}" for note in (*SKIPPED.values(), *notes)]
    if calib is not None:
        lines += [
            "",
            f"Calibration from the ledger ({calib.window} window; {RULE_CALIBRATION})",
        ]
        if calib.mean_prompt_tokens is not None and calib.mean_output_tokens is not None:
            lines.append(f"  requests               {calib.requests}")
            lines.append(f"  mean prompt tokens     {calib.mean_prompt_tokens:.1f}")
            lines.append(f"  mean output tokens     {calib.mean_output_tokens:.1f}")
        shown = calib.max_model_len if calib.max_model_len is not None else "not set"
        lines.append(f"  max_model_len          {shown}")
        if calib.suggested_max_model_len is not None:
            lines.append(f"  suggested              {calib.suggested_max_model_len}")
        lines.append(f"  {calib.note}")
    return "\n".join(lines) + "\n"


__all__ = [
    "SKIPPED",
    "WORKLOADS",
    "Calibration",
    "Gpu",
    "Hint",
    "Workload",
    "batch_hints",
    "calibration",
    "dtype_hint",
    "dtype_support",
    "explain_text",
    "hint_args",
    "host_gpus",
    "memory_hints",
    "tuning_hints",
]


def host_gpus(
    host_gpus_key: str | tuple[int, ...],
    readings: Sequence[GpuReading],
    gpu_name: str | None,
    gpu_memory_gb: float | None,
) -> tuple[list[Gpu], str]:
    """The host file's GPUs and where their facts came from: NVML readings of the listed
    indexes ("all": every one) where NVML read them all, else the host file's ``gpu_name`` and
    ``gpu_memory_gb``, else unknown. ``[]`` for a host file with ``"gpus": []``."""
    if host_gpus_key == ():
        return [], "none (CPU host)"
    by_index = {r.index: r for r in readings}
    wanted = sorted(by_index) if isinstance(host_gpus_key, str) else list(host_gpus_key)
    if wanted and all(i in by_index for i in wanted):
        gpus = [Gpu(by_index[i].name, by_index[i].memory_total_bytes) for i in wanted]
        return gpus, f"{len(gpus)} read through NVML on this machine"
    count = 1 if isinstance(host_gpus_key, str) else len(host_gpus_key)
    memory = None if gpu_memory_gb is None else round(gpu_memory_gb * GB)
    if gpu_name is None and memory is None:
        return [Gpu(None, None)] * count, "unknown (no NVML here, no gpu_name/gpu_memory_gb)"
    return [Gpu(gpu_name, memory)] * count, "from the host file (gpu_name, gpu_memory_gb)"
