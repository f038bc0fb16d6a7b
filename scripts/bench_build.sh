#!/usr/bin/env bash
# Build benchmark: `draftgen build` against the same work in Python (scripts/bench_build.py).
#
#   scripts/bench_build.sh [ROUNDS] [RUN_DIR]
#
# Writes (once) a 100,000-record Kimi K2.5 journal with `bench_build.py make`, builds the release
# binary (into $CARGO_TARGET_DIR, default ./target), then runs Python (`--limit $PY_LIMIT`,
# default 10,000 samples, one thread) and draftgen (all $N samples, inference on: the journal has
# no manifest, so its one group is undeclared; SERVER_KIND=openrouter declares it) alternately, P R P R ..., ROUNDS times each (default
# 3), under `/usr/bin/time`. Each run's wall and CPU (user + sys) seconds, peak RSS and the load
# average before it are printed, then the per-sample ratios (best run of each side), and every
# draftgen output is checked equal to the first with `bench_build.py compare` (pyarrow, every
# column). Set BASE_OUT to an earlier build's output directory to compare against it too, and
# BASE_BIN to an earlier draftgen binary to run it after draftgen in each round (before / after).
# SKIP_CARGO=1 uses the binary already built.
# Python needs DRAFTGEN_ASSETS (the Kimi tokenizer and templates; default ../shared/assets).
set -euo pipefail

ROUNDS="${1:-3}"
RUN_DIR="${2:-${TMPDIR:-/tmp}/bench_run}"
N="${N:-100000}"
PY_LIMIT="${PY_LIMIT:-10000}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
TARGET="${CARGO_TARGET_DIR:-$ROOT/target}"
BIN="$TARGET/release/draftgen"
OUT="${OUT:-${TMPDIR:-/tmp}/bench_build_out}"
export DRAFTGEN_ASSETS="${DRAFTGEN_ASSETS:-$ROOT/../shared/assets}"

cd "$ROOT"
if [[ "${SKIP_CARGO:-0}" != 1 ]]; then
  cargo build --release --locked >&2
fi
have=0
if [[ -f "$RUN_DIR/journal/000002.jsonl" ]]; then # 64 MiB segments, as `generate` writes
  have=$(cat "$RUN_DIR"/journal/*.jsonl | wc -l)
fi
if [[ "$have" != "$N" ]]; then
  rm -rf "$RUN_DIR"
  echo "writing $N records to $RUN_DIR ..." >&2
  python3 scripts/bench_build.py make "$RUN_DIR" --n "$N" --tokens 2000
fi
cat "$RUN_DIR"/journal/*.jsonl > /dev/null # both sides read from the page cache
# SERVER_KIND=openrouter: draftgen builds the same journal with its endpoint declared (see
# bench_build.py `declared`); unset: an undeclared server (every answer also checked against
# every known server shape).
BUILD_RUN="$RUN_DIR"
if [[ -n "${SERVER_KIND:-}" ]]; then
  BUILD_RUN="$RUN_DIR-$SERVER_KIND"
  python3 scripts/bench_build.py declared "$RUN_DIR" "$BUILD_RUN" "$SERVER_KIND"
fi

# One timed run: prints "wall cpu rss_mb load".
timed() {
  local load out
  load="$(cut -d' ' -f1 /proc/loadavg)"
  out=$( { /usr/bin/time -f '%e %U %S %M' "$@" > /dev/null; } 2>&1 | tail -n1 )
  awk -v load="$load" '{ printf "%s %.2f %d %s\n", $1, $2 + $3, $4 / 1024, load }' <<< "$out"
}

py_runs=(); rs_runs=()
for round in $(seq "$ROUNDS"); do
  rm -rf "$OUT-py"
  py="$(timed python3 scripts/bench_build.py python "$RUN_DIR" "$OUT-py" --limit "$PY_LIMIT")"
  echo "python   round $round: wall ${py%% *} s, $(cut -d' ' -f2 <<< "$py") CPU s, $(cut -d' ' -f3 <<< "$py") MB, load $(cut -d' ' -f4 <<< "$py") ($PY_LIMIT samples)"
  py_runs+=("$py")
  rm -rf "$OUT-$round"
  rs="$(timed "$BIN" build --run "$BUILD_RUN" --model kimi-k2.5 --out "$OUT-$round")"
  echo "draftgen round $round: wall ${rs%% *} s, $(cut -d' ' -f2 <<< "$rs") CPU s, $(cut -d' ' -f3 <<< "$rs") MB, load $(cut -d' ' -f4 <<< "$rs") ($N samples)"
  rs_runs+=("$rs")
  if [[ -n "${BASE_BIN:-}" ]]; then
    rm -rf "$OUT-base"
    base="$(timed "$BASE_BIN" build --run "$BUILD_RUN" --model kimi-k2.5 --out "$OUT-base")"
    echo "BASE_BIN round $round: wall ${base%% *} s, $(cut -d' ' -f2 <<< "$base") CPU s, $(cut -d' ' -f3 <<< "$base") MB, load $(cut -d' ' -f4 <<< "$base") ($N samples)"
  fi
done

best() { sort -g -k"$1" | head -n1 | cut -d' ' -f"$1"; }
py_wall=$(printf '%s\n' "${py_runs[@]}" | best 1)
py_cpu=$(printf '%s\n' "${py_runs[@]}" | best 2)
rs_wall=$(printf '%s\n' "${rs_runs[@]}" | best 1)
rs_cpu=$(printf '%s\n' "${rs_runs[@]}" | best 2)
awk -v pw="$py_wall" -v pc="$py_cpu" -v rw="$rs_wall" -v rc="$rs_cpu" -v pn="$PY_LIMIT" -v rn="$N" -v k="$ROUNDS" 'BEGIN {
  printf "best of %d: python %.3f wall-ms / %.3f CPU-ms per sample; draftgen %.4f / %.4f\n", k, 1000 * pw / pn, 1000 * pc / pn, 1000 * rw / rn, 1000 * rc / rn
  printf "draftgen is %.1fx Python in wall time, %.1fx in CPU time\n", (pw / pn) / (rw / rn), (pc / pn) / (rc / rn)
}'

for round in $(seq 2 "$ROUNDS"); do
  python3 scripts/bench_build.py compare "$OUT-1" "$OUT-$round" | cut -c1-40
done
if [[ -n "${BASE_OUT:-}" ]]; then
  python3 scripts/bench_build.py compare "$BASE_OUT" "$OUT-1" | cut -c1-40
fi
if [[ -n "${BASE_BIN:-}" ]]; then
  python3 scripts/bench_build.py compare "$OUT-base" "$OUT-1" | cut -c1-40
fi
