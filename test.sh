#!/usr/bin/env bash
# Install everything (first time only), prepare the default model (reused when already prepared) and run all tests.
# Quick loop while developing: .venv/bin/python -m pytest -m "not slow"
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh prepare,test
.venv/bin/python main.py prepare
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q "$@"
