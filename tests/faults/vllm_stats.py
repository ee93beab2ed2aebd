"""Real vLLM stats objects and a real plugin instance for the in-process fault tests."""

from __future__ import annotations

from vllm.config import ParallelConfig, VllmConfig
from vllm.v1.engine import FinishReason
from vllm.v1.metrics.stats import FinishedRequestStats, IterationStats, PrefillStats

from vllm_ledger.plugin import LedgerStatLogger


def plugin() -> LedgerStatLogger:
    cfg = VllmConfig(parallel_config=ParallelConfig(_api_process_count=1, _api_process_rank=0))
    return LedgerStatLogger(cfg, [0])


def iteration(
    ts: float,
    prompt: int = 0,
    cached: int = 0,
    gen: int = 0,
    finished: tuple = (),
    request_id: str = "r",
) -> IterationStats:
    it = IterationStats()
    it.iteration_timestamp = ts
    ps = PrefillStats()
    ps.set(prompt, cached, 0)
    it.prompt_token_stats.update_from_output(ps)
    it.num_generation_tokens = gen
    for n, d in finished:
        it.finished_requests.append(
            FinishedRequestStats(
                finish_reason=FinishReason.LENGTH,
                request_id=request_id,
                num_generation_tokens=n,
                decode_time=d,
            )
        )
    return it
