#!/usr/bin/env bash
# vLLM launch script (bare mode, usage ledger on), rendered by vllm-ledger 0.1.0.
# Do not edit: change the host file, render again and review the diff.
# Host-file values are single-quoted: '$' and backticks in them are literal on purpose.
# shellcheck disable=SC2016
set -euo pipefail

export CUDA_VISIBLE_DEVICES=0,1,2,3
export HF_HUB_OFFLINE=1
export VLLM_NO_USAGE_STATS=1

# API key: read from a file now, given to vLLM as VLLM_API_KEY (never in argv).
if [[ ! -r /srv/secrets/vllm-api.key ]]; then echo 'API key file /srv/secrets/vllm-api.key is not readable' >&2; exit 1; fi
VLLM_API_KEY="$(< /srv/secrets/vllm-api.key)"
export VLLM_API_KEY

# Usage ledger (--usage): plugin from a PYTHONPATH folder (no network, no pip),
# ledger files on the host so they outlive the container.
mkdir -p -- /srv/artifacts/usage
PYTHONPATH=/srv/vllm-ledger python3 -m vllm_ledger bundle --output /srv/artifacts/ledger-plugin >/dev/null
export PYTHONPATH=/srv/artifacts/ledger-plugin"${PYTHONPATH:+:${PYTHONPATH}}"
export VLLM_LEDGER_DIR=/srv/artifacts/usage
export VLLM_LEDGER_WRITERS=8
export VLLM_LEDGER_PORT=19001
printf '%s\n' 'ledger plugin: /srv/artifacts/ledger-plugin'
printf '%s\n' 'ledger report: PYTHONPATH=/srv/vllm-ledger python3 -m vllm_ledger report --root /srv/artifacts/usage'
printf '%s\n' 'ledger check:  PYTHONPATH=/srv/vllm-ledger python3 -m vllm_ledger verify --metrics-url http://127.0.0.1:19001/metrics --root /srv/artifacts/usage'

exec vllm serve /models/Qwen2.5-72B-Instruct-AWQ \
  --host 0.0.0.0 \
  --port 19001 \
  --served-model-name qwen-72b \
  --tensor-parallel-size 4 \
  --api-server-count 8 \
  --max-model-len 32768 \
  --gpu-memory-utilization 0.92 \
  --max-num-seqs 128 \
  --max-num-batched-tokens 16384 \
  --dtype float16 \
  --quantization awq \
  --shutdown-timeout 10 \
  --middleware vllm_ledger.middleware.LedgerMiddleware \
  --enable-prefix-caching
