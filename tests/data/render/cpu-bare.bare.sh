#!/usr/bin/env bash
# vLLM launch script (bare mode), rendered by vllm-ledger 0.1.0.
# Do not edit: change the host file, render again and review the diff.
# Host-file values are single-quoted: '$' and backticks in them are literal on purpose.
# shellcheck disable=SC2016
set -euo pipefail

export CUDA_VISIBLE_DEVICES=''
export VLLM_CPU_KVCACHE_SPACE=1
export VLLM_TARGET_DEVICE=cpu

# API key: read from $TINY_API_KEY now, given to vLLM as VLLM_API_KEY (never in argv).
VLLM_API_KEY="${TINY_API_KEY:?the API key variable TINY_API_KEY is not set}"
export VLLM_API_KEY

exec vllm serve '/srv/models/tiny llama' \
  --host 127.0.0.1 \
  --port 8001 \
  --served-model-name tiny \
  --data-parallel-size 2 \
  --api-server-count 2 \
  --max-model-len 1024 \
  --dtype float32 \
  --shutdown-timeout 15 \
  --enforce-eager \
  --block-size 32
