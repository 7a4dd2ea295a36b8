#!/usr/bin/env bash
# THERE, on the lent GPU machine (Python 3.12, torch, onnx, CPU-only onnxruntime): install the carried
# onnxruntime-gpu wheel in front of the CPU build and run the check. See bench/gpu_prepare.sh for the calls.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/bench-gpu-out}"
wheel="/tmp/ort/$(cat .gpu/ort/wheel_name)"
[ -f "$wheel" ] || cat /tmp/ort/part.* > "$wheel"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$wheel"
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/nvidia_smi.txt"
python3 bench/gpu_check.py check --models .gpu/models --out "$OUT" --device cuda 2>&1 | tee "$OUT/gpu_check.log"
