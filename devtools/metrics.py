"""Read vLLM's own counters from a live /metrics, summed over engine labels."""

from vllm_ledger.read.verify import vllm_counters

__all__ = ["vllm_counters"]
