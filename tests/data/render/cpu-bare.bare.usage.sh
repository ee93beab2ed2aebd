#!/usr/bin/env bash
# vLLM launch script (bare mode, usage ledger on), rendered by vllm-ledger 0.1.0.
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

# Usage ledger (--usage): plugin from a PYTHONPATH folder (no network, no pip),
# ledger files on the host so they outlive the container.
mkdir -p -- /srv/artifacts/usage
if [[ ! -f /srv/artifacts/ledger-plugin/VLLM_LEDGER_BUNDLE ]]; then echo 'no ledger plugin bundle in /srv/artifacts/ledger-plugin: run '"'"'vllm-ledger bundle --output /srv/artifacts/ledger-plugin'"'"' or set ledger_code_dir in the host file' >&2; exit 1; fi
export PYTHONPATH=/srv/artifacts/ledger-plugin"${PYTHONPATH:+:${PYTHONPATH}}"
export VLLM_LEDGER_DIR=/srv/artifacts/usage
export VLLM_LEDGER_WRITERS=2
export VLLM_LEDGER_PORT=8001
printf '%s\n' 'ledger plugin: /srv/artifacts/ledger-plugin'
printf '%s\n' 'ledger report: vllm-ledger report --root /srv/artifacts/usage'
printf '%s\n' 'ledger check:  vllm-ledger verify --metrics-url http://127.0.0.1:8001/metrics --root /srv/artifacts/usage'

exec vllm serve '/srv/models/tiny llama' \
  --host 127.0.0.1 \
  --port 8001 \
  --served-model-name tiny \
  --data-parallel-size 2 \
  --api-server-count 2 \
  --max-model-len 1024 \
  --dtype float32 \
  --shutdown-timeout 15 \
  --middleware vllm_ledger.middleware.LedgerMiddleware \
  --enforce-eager \
  --block-size 32
