"""vllm-ledger: a restart-proof per-second token ledger for self-hosted vLLM."""

__version__ = "0.1.0"
