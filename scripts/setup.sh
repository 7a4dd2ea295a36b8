#!/usr/bin/env bash
# One-time (idempotent) set-up: system packages (Debian/Ubuntu, when root or sudo is available), a virtual
# environment in .venv and the project with the extras given as arguments (e.g. "prepare,test").
# BRANCHPOINT_SKIP_SYSTEM_PACKAGES=1 leaves the system packages alone.
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
  # desktop-file-validate: the launcher test checks the .desktop file with it
  desktop-file-utils
  # a C++ toolchain: scripts/llama_cpp.sh builds llama.cpp from its PyPI sdist (cmake and ninja come from PyPI if missing)
  g++
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

# The stamp holds the hash of the pyproject.toml installed and the extras installed with it ("HASH a,b").
stamp=".venv/.installed"

# Extras of both comma lists, sorted, without repeats.
union_extras() {
  printf '%s\n' "${1//,/$'\n'}" "${2//,/$'\n'}" | sed '/^$/d' | sort -u | paste -sd, -
}

install_python_packages() {
  local python="${PYTHON:-python3}" want have_hash="" have_extras=""
  want="$(sha256sum pyproject.toml | cut -d' ' -f1)"
  [ -f "$stamp" ] && read -r have_hash have_extras < "$stamp"
  # Skip pip when this pyproject.toml was installed with these extras or more (./test.sh then ./run.sh).
  if [ -x .venv/bin/python ] && [ "$have_hash" = "$want" ] \
      && [ "$(union_extras "$have_extras" "$extras")" = "$(union_extras "$have_extras" "")" ]; then
    return 0
  fi
  # pip never removes an extra's packages: install what was there as well, and stamp the union.
  local all
  all="$(union_extras "$have_extras" "$extras")"
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
  # torch first, pinned: otherwise a resolver run may pull a multi-GB CUDA build.
  if [[ ",$all," == *",prepare,"* ]]; then .venv/bin/python -m pip install -q "torch==2.13.0"; fi
  .venv/bin/python -m pip install -q -e ".[$all]"
  echo "$want $all" > "$stamp"
}

[ "${BRANCHPOINT_SKIP_SYSTEM_PACKAGES:-0}" = 1 ] || install_system_packages
install_python_packages
