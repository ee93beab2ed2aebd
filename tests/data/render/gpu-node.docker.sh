#!/usr/bin/env bash
# vLLM launch script (docker mode), rendered by vllm-ledger 0.1.0.
# Do not edit: change the host file, render again and review the diff.
# Host-file values are single-quoted: '$' and backticks in them are literal on purpose.
# shellcheck disable=SC2016
set -euo pipefail

# API key: read from a file now, given to vLLM as VLLM_API_KEY (never in argv).
if [[ ! -r /srv/secrets/vllm-api.key ]]; then echo 'API key file /srv/secrets/vllm-api.key is not readable' >&2; exit 1; fi
VLLM_API_KEY="$(< /srv/secrets/vllm-api.key)"
export VLLM_API_KEY

docker run --detach \
  --name vllm-primary \
  --restart unless-stopped \
  --gpus '"device=0,1,2,3"' \
  --shm-size 32g \
  --publish 0.0.0.0:19001:19001 \
  --volume /models:/models:ro \
  --volume /srv/hf-cache:/root/.cache/huggingface:rw \
  --env VLLM_API_KEY \
  --env HF_HUB_OFFLINE=1 \
  --env VLLM_NO_USAGE_STATS=1 \
  --entrypoint vllm \
  vllm/vllm-openai:v0.32.0 \
  serve /models/Qwen2.5-72B-Instruct-AWQ \
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
  --enable-prefix-caching
