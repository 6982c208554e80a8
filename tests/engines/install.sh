#!/usr/bin/env bash
# A venv holding vLLM 0.33.0, SGLang 0.5.23 and Ray 2.60.0 for their argument parsers only: the
# engines themselves without their dependencies (--no-deps: no CUDA wheels), CPU torch from
# local disk when present, and the few pure-Python packages their parsers import.
#
# usage: tests/engines/install.sh VENV
set -euo pipefail
venv="${1:?usage: $0 VENV}"
python3 -m venv "$venv"
py="$venv/bin/python"
"$py" -m pip install -q --upgrade pip
cpu_torch="$(ls /opt/wheels/torch-*+cpu-*.whl 2>/dev/null | head -1 || true)"
if [ -n "$cpu_torch" ]; then
    "$py" -m pip install -q "$cpu_torch"
else
    "$py" -m pip install -q --index-url https://download.pytorch.org/whl/cpu torch
fi
"$py" -m pip install -q --no-deps vllm==0.33.0 sglang==0.5.23 ray==2.60.0
"$py" -m pip install -q -r "$(dirname "$0")/parser-requirements.txt"
