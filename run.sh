#!/usr/bin/env bash
# Install everything (first time only) and open Branchpoint on the default model; the first start prepares the
# model (download ≈ 93 MB, conversion ≈ 1 minute) and afterwards everything runs offline.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh prepare
exec .venv/bin/python main.py "$@"
