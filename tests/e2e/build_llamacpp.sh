#!/usr/bin/env bash
# Build llama.cpp's `ggml-rpc-server` and `llama-server` for CPU from a pinned source: the copy
# of llama.cpp vendored in the llama-cpp-python sdist on PyPI (reachable through pip, so CI needs
# no git clone). The binaries land in "$1/bin"; a warm cache (a `stamp` file naming the same
# source) skips the download and the build.
#
# usage: tests/e2e/build_llamacpp.sh CACHE_DIR
set -euo pipefail

# llama-cpp-python 0.3.36 vendors llama.cpp at ggml-org/llama.cpp@0c1e57098 (its CHANGELOG.md).
LLAMA_CPP_PYTHON_VERSION="0.3.36"
LLAMA_CPP_COMMIT="0c1e57098"

cache="${1:?usage: $0 CACHE_DIR}"
stamp="llama-cpp-python==${LLAMA_CPP_PYTHON_VERSION} llama.cpp@${LLAMA_CPP_COMMIT} cpu+rpc"
mkdir -p "$cache"
if [ -x "$cache/bin/ggml-rpc-server" ] && [ -x "$cache/bin/llama-server" ] \
        && [ "$(cat "$cache/stamp" 2>/dev/null || true)" = "$stamp" ]; then
    echo "llama.cpp: cached build in $cache/bin ($stamp)"
    exit 0
fi

start=$(date +%s)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m pip download -q --no-deps --no-binary :all: \
    "llama-cpp-python==${LLAMA_CPP_PYTHON_VERSION}" -d "$work"
tar xzf "$work"/llama_cpp_python-*.tar.gz -C "$work"
src="$(echo "$work"/llama_cpp_python-*/vendor/llama.cpp)"

# CPU only, RPC backend on, no network features (curl, OpenSSL, the prebuilt web UI download),
# no tests or examples; only the two targets the exported scripts run.
cmake -S "$src" -B "$work/build" -DCMAKE_BUILD_TYPE=Release \
    -DGGML_RPC=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_COMMIT="$LLAMA_CPP_COMMIT" >"$work/cmake.log" \
    || { tail -40 "$work/cmake.log" >&2; exit 1; }
cmake --build "$work/build" --config Release -j2 --target ggml-rpc-server llama-server \
    >"$work/build.log" || { tail -60 "$work/build.log" >&2; exit 1; }

mkdir -p "$cache/bin"
cp "$work/build/bin/ggml-rpc-server" "$work/build/bin/llama-server" "$cache/bin/"
echo "$stamp" >"$cache/stamp"
echo "llama.cpp: built in $(( $(date +%s) - start )) s into $cache/bin ($stamp)"
