#!/usr/bin/env bash
# HERE, before a lent GPU session (item 7): everything the GPU check needs, in .gpu/ (git-ignored locally).
#   .gpu/models/{fp32,fp16}: the default model's graphs without weights; .gpu/models/tiny: the tiny test model
#   .gpu/ort/part.NN: the onnxruntime-gpu wheel for Python 3.12 in 50 MiB parts (a call carries at most 64 MiB)
# Then, with the machine warm between calls (it goes back after 30 s idle), run these device calls back to back:
#   for each part:  run(command="mkdir -p /tmp/ort && cp .gpu/ort/part.NN /tmp/ort/", carry=[".gpu/ort/part.NN"])
#   finally:        run(command="bash bench/gpu_check.sh", carry=[".gpu/models", ".gpu/ort/wheel_name"],
#                       timeout_s=540)     -> $OUT/gpu_results.json
set -euo pipefail
cd "$(dirname "$0")/.."
grep -qx '/.gpu/' .git/info/exclude 2>/dev/null || echo '/.gpu/' >> .git/info/exclude
ORT_VERSION="${ORT_VERSION:-1.31.1}"
mkdir -p .gpu/ort .gpu/models
if [ ! -f .gpu/ort/wheel_name ]; then
  .venv/bin/python -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    -d .gpu/ort "onnxruntime-gpu==${ORT_VERSION}"
  wheel=$(ls .gpu/ort/onnxruntime_gpu-*.whl)
  split -b 50M -d "$wheel" .gpu/ort/part.
  basename "$wheel" > .gpu/ort/wheel_name
  rm "$wheel"
fi
.venv/bin/python -m bench.gpu_check skeleton --models .gpu/models
ls -la .gpu/ort .gpu/models
