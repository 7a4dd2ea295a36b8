#!/usr/bin/env bash
# Cached, idempotent build of llama.cpp's server and shared libraries from llama-cpp-python's sdist on PyPI (the
# sdist vendors llama.cpp's whole source), for the served-lane tests and the llama.cpp sampler oracle.
#   scripts/llama_cpp.sh          build once (5-30 min on 2 cores); later runs return in seconds
#   scripts/llama_cpp.sh --print  print the install directory (empty and exit 1 when it is not built)
# Result in ${XDG_CACHE_HOME:-~/.cache}/branchpoint/llama.cpp/$VERSION/:
#   bin/llama-server (its libraries beside it, found through RPATH $ORIGIN)
#   python/llama_cpp/ the sdist's pure-Python package; python/llama_cpp/lib/ the same libraries (where it looks)
#   .built            stamp of a finished build
# Environment: PYTHON (for pip; default .venv/bin/python or python3), LLAMA_CPP_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."

VERSION=0.3.36
root="${XDG_CACHE_HOME:-$HOME/.cache}/branchpoint/llama.cpp/$VERSION"
stamp="$root/.built"

if [ "${1:-}" = "--print" ]; then
  [ -f "$stamp" ] && { echo "$root"; exit 0; }
  exit 1
fi
[ -f "$stamp" ] && { echo "llama.cpp $VERSION: built in $root"; exit 0; }

python="${PYTHON:-}"
[ -n "$python" ] || { [ -x .venv/bin/python ] && python=.venv/bin/python || python=python3; }
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9  # two callers at once: the second waits, then finds the stamp
[ -f "$stamp" ] && { echo "llama.cpp $VERSION: built in $root"; exit 0; }

sdist="$root/sdist/llama_cpp_python-$VERSION.tar.gz"
if [ ! -f "$sdist" ]; then
  # pip reads the sdist's metadata in an isolated environment (scikit-build-core; no compiling): a few seconds
  "$python" -m pip download -q --no-deps --no-binary :all: "llama-cpp-python==$VERSION" -d "$root/sdist.part"
  mkdir -p "$root/sdist"
  mv "$root/sdist.part/llama_cpp_python-$VERSION.tar.gz" "$sdist"
  rm -rf "$root/sdist.part"
fi

src="$root/src/llama_cpp_python-$VERSION"
if [ ! -f "$src/vendor/llama.cpp/CMakeLists.txt" ]; then
  rm -rf "$root/src"
  mkdir -p "$root/src"
  tar xzf "$sdist" -C "$root/src"
fi

tools_dir="$root/tools"
cmake_bin="$(command -v cmake || true)"
ninja_bin="$(command -v ninja || true)"
if [ -z "$cmake_bin" ] || [ -z "$ninja_bin" ]; then
  "$python" -m pip install -q --target "$tools_dir" cmake ninja
  export PATH="$tools_dir/bin:$PATH"
fi

build="$root/build"
cmake -S "$src/vendor/llama.cpp" -B "$build" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=ON \
  -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
  -DCMAKE_BUILD_RPATH='$ORIGIN' -DCMAKE_INSTALL_RPATH='$ORIGIN' >"$root/cmake.log"
cmake --build "$build" --target llama-server llama ggml -j "${LLAMA_CPP_JOBS:-2}"

# The binary and every shared library the build made (libllama, libggml, libggml-base, libggml-cpu, libmtmd, ...).
rm -rf "$root/bin" "$root/python"
mkdir -p "$root/bin" "$root/python/llama_cpp/lib"
cp "$build/bin/llama-server" "$root/bin/"
find "$build" -name '*.so*' \( -type f -o -type l \) -exec cp -P {} "$root/bin/" \;
cp -r "$src/llama_cpp/." "$root/python/llama_cpp/"
cp -P "$root/bin/"*.so* "$root/python/llama_cpp/lib/"
"$root/bin/llama-server" --version >/dev/null 2>&1 || { echo "llama_cpp.sh: llama-server does not start" >&2; exit 1; }
echo "$VERSION $(date -u +%FT%TZ)" > "$stamp"
echo "llama.cpp $VERSION: built in $root"
