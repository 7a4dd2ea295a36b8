#!/usr/bin/env bash
# One-time (idempotent) set-up: system packages (Debian/Ubuntu, when root or sudo is available), a virtual
# environment in .venv and the project with the extras given as arguments (e.g. "prepare,test").
set -euo pipefail
cd "$(dirname "$0")/.."
extras="${1:-prepare}"

APT_PACKAGES=(
  python3-venv
  # fonts: Latin + Chinese (missing fonts draw empty boxes silently)
  fonts-dejavu-core fonts-wqy-microhei
  # Qt's xcb/offscreen platforms and Xvfb for screenshots of a real window
  libegl1 libgl1 libglib2.0-0 libfontconfig1 libdbus-1-3 libxkbcommon0 libxkbcommon-x11-0
  libxcb-cursor0 libxcb-icccm4 libxcb-keysyms1 libxcb-image0 libxcb-randr0 libxcb-render-util0
  libxcb-shape0 libxcb-xkb1 xvfb
)

install_system_packages() {
  command -v apt-get >/dev/null || { echo "setup: no apt-get; install the packages above by hand" >&2; return 0; }
  local missing=()
  for p in "${APT_PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq -o DPkg::Lock::Timeout=300
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null
}

install_python_packages() {
  local python="${PYTHON:-python3}"
  # Skip pip when this exact pyproject.toml was already installed with these extras (fast second start).
  local stamp=".venv/.installed-${extras//,/-}" want
  want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
  if [ -x .venv/bin/python ] && [ "$(cat "$stamp" 2>/dev/null)" = "$want" ]; then return 0; fi
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first, pinned: otherwise a resolver run may pull a multi-GB CUDA build.
  if [[ ",$extras," == *",prepare,"* ]]; then .venv/bin/python -m pip install -q "torch==2.13.0"; fi
  .venv/bin/python -m pip install -q -e ".[$extras]"
  echo "$want" > "$stamp"
}

install_system_packages
install_python_packages
