#!/usr/bin/env bash
# vLLM launch script (docker mode, usage ledger on), rendered by vllm-ledger 0.1.0.
# Do not edit: change the host file, render again and review the diff.
# Host-file values are single-quoted: '$' and backticks in them are literal on purpose.
# shellcheck disable=SC2016
set -euo pipefail

# API key: read from a file now, given to vLLM as VLLM_API_KEY (never in argv).
if [[ ! -r /srv/secrets/vllm-api.keys ]]; then echo 'API key file /srv/secrets/vllm-api.keys is not readable' >&2; exit 1; fi
VLLM_API_KEY="$(< /srv/secrets/vllm-api.keys)"
export VLLM_API_KEY

# Usage ledger (--usage): plugin from a PYTHONPATH folder (no network, no pip),
# ledger files on the host so they outlive the container.
if [[ ! -f /etc/vllm-ledger/key-names.json ]]; then echo 'key names file /etc/vllm-ledger/key-names.json is not a readable file (docs/attribution.md)' >&2; exit 1; fi
mkdir -p -- /srv/artifacts/usage
if [[ ! -f /srv/artifacts/ledger-plugin/VLLM_LEDGER_BUNDLE ]]; then echo 'no ledger plugin bundle in /srv/artifacts/ledger-plugin: run '"'"'vllm-ledger bundle --output /srv/artifacts/ledger-plugin'"'"' or set ledger_code_dir in the host file' >&2; exit 1; fi
printf '%s\n' 'ledger plugin: /srv/artifacts/ledger-plugin'
printf '%s\n' 'ledger report: vllm-ledger report --root /srv/artifacts/usage'
printf '%s\n' 'ledger check:  vllm-ledger verify --metrics-url http://127.0.0.1:19002/metrics --root /srv/artifacts/usage'

docker run --detach \
  --name vllm-attributed \
  --hostname "${HOSTNAME}" \
  --restart unless-stopped \
  --gpus '"device=0"' \
  --shm-size 16g \
  --stop-timeout 20 \
  --publish 0.0.0.0:19002:19002 \
  --volume /srv/artifacts/ledger-plugin:/vllm-ledger/plugin:ro \
  --volume /srv/artifacts/usage:/vllm-ledger/usage:rw \
  --volume /etc/vllm-ledger/key-names.json:/vllm-ledger/key-names/key-names.json:ro \
  --env VLLM_API_KEY \
  --env PYTHONPATH=/vllm-ledger/plugin \
  --env VLLM_LEDGER_ATTRIBUTE_USER=1 \
  --env VLLM_LEDGER_DIR=/vllm-ledger/usage \
  --env VLLM_LEDGER_KEY_NAMES=/vllm-ledger/key-names/key-names.json \
  --env VLLM_LEDGER_PORT=19002 \
  --env VLLM_LEDGER_TENANT_HEADER=X-Tenant \
  --env VLLM_LEDGER_WRITERS=2 \
  --entrypoint vllm \
  vllm/vllm-openai:v0.32.0 \
  serve /models/Qwen2.5-7B-Instruct \
  --host 0.0.0.0 \
  --port 19002 \
  --served-model-name qwen-7b \
  --api-server-count 2 \
  --shutdown-timeout 10 \
  --middleware vllm_ledger.middleware.LedgerMiddleware \
  --enable-lora \
  --lora-modules support=/models/lora/support
