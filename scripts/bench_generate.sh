#!/usr/bin/env bash
# Throughput, CPU and memory of `draftgen generate` against the built-in simulator, next to the
# usual Python asyncio/aiohttp client (scripts/py_client.py) on the same simulator.
#
#   scripts/bench_generate.sh                 # concurrency 2000 and 10000, 3 runs of each client
#   BENCH_CONCURRENCY="2000" BENCH_REQUESTS=20000 BENCH_RUNS=5 scripts/bench_generate.sh
#
# Reports requests per CPU-second of the client process (user+sys from /usr/bin/time -v), wall
# time and peak RSS — the run with the median CPU time of BENCH_RUNS runs, the spread beside it
# (the machine is shared: single runs vary by 10-20%) — and writes the table into the "Generate"
# section of BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

CONCURRENCY=${BENCH_CONCURRENCY:-"2000 10000"}
LATENCY_MS=${BENCH_LATENCY_MS:-500}
RUNS=${BENCH_RUNS:-3}
WORK=$(mktemp -d)
trap 'kill "${SIM_PID:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT

ulimit -n "$(ulimit -Hn)"
python3 -c 'import aiohttp' 2>/dev/null || pip install --quiet aiohttp
cargo build --release --quiet
# A copy: with a shared CARGO_TARGET_DIR another build may replace the binary mid-run.
cp "${CARGO_TARGET_DIR:-target}/release/draftgen" "$WORK/draftgen"
BIN=$WORK/draftgen

"$BIN" sim --port 0 --latency-ms "$LATENCY_MS" >"$WORK/sim.url" 2>"$WORK/sim.log" &
SIM_PID=$!
for _ in $(seq 100); do [ -s "$WORK/sim.url" ] && break; sleep 0.1; done
URL=$(head -1 "$WORK/sim.url")
echo "sim at $URL (latency ${LATENCY_MS} ms)"

# measure NAME N -- command...: runs the command RUNS times under /usr/bin/time -v and appends
# the row of the run with the median CPU time, with the CPU times of all runs.
measure() {
  local name=$1 n=$2; shift 2
  for run in $(seq "$RUNS"); do
    rm -rf "$WORK/run" "$WORK/py.jsonl"
    /usr/bin/time -v "$@" >"$WORK/out" 2>"$WORK/time-$run" || true
  done
  python3 - "$name" "$n" "$WORK"/time-* >>"$WORK/rows" <<'PY'
import re, sys
name, n, paths = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def run(path):
    t = open(path).read()
    def f(pat):
        m = re.search(pat, t)
        return m.group(1) if m else "0"
    cpu = float(f(r"User time \(seconds\): ([\d.]+)")) + float(f(r"System time \(seconds\): ([\d.]+)"))
    rss_mb = int(f(r"Maximum resident set size \(kbytes\): (\d+)")) / 1024
    wall = f(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)")
    wall_s = sum(float(p) * 60 ** i for i, p in enumerate(reversed(wall.split(":"))))
    return cpu, wall_s, rss_mb
runs = sorted(run(p) for p in paths)
cpu, wall_s, rss_mb = runs[len(runs) // 2]
spread = "/".join(f"{r[0]:.2f}" for r in runs)
print(f"{name}\t{n}\t{cpu:.2f}\t{n / cpu if cpu else 0:.0f}\t{wall_s:.1f}\t{rss_mb:.0f}\t{spread}")
PY
  rm -f "$WORK"/time-*
  tail -1 "$WORK/rows"
}

: >"$WORK/rows"
for C in $CONCURRENCY; do
  N=${BENCH_REQUESTS:-$((C * 5))}
  python3 - "$N" >"$WORK/prompts-$C.jsonl" <<'PY'
import json, sys
for i in range(int(sys.argv[1])):
    print(json.dumps({"id": f"{i:016x}", "source": "bench",
                      "messages": [{"role": "user", "content": f"Write a short note about topic {i}."}]}))
PY
  measure "draftgen c=$C" "$N" "$BIN" generate --prompts "$WORK/prompts-$C.jsonl" --run "$WORK/run" \
    --base-url "$URL" --model bench --max-tokens 256 --concurrency "$C" --max-concurrency "$C" --progress none
  measure "python c=$C" "$N" python3 scripts/py_client.py --base-url "$URL" --prompts "$WORK/prompts-$C.jsonl" \
    --out "$WORK/py.jsonl" --concurrency "$C" --model bench
done

LOAD=$(cut -d' ' -f1-3 /proc/loadavg)
python3 - "$WORK/rows" "$LATENCY_MS" "$RUNS" "$LOAD" <<'PY'
import sys, re, platform, os
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
latency, runs, load = sys.argv[2], sys.argv[3], sys.argv[4]
lines = ["## Generate", "",
         f"`scripts/bench_generate.sh` — `draftgen sim --latency-ms {latency}` (non-streaming, openrouter shape) on the same "
         f"machine ({os.cpu_count()} cores, load average {load} at the end); each client sends every prompt once; CPU is "
         f"user+sys of the client process only; each row is the median-CPU run of {runs}, all runs' CPU seconds beside it.", "",
         "| client | requests | CPU s | requests / CPU-s | wall s | peak RSS MB | CPU s of each run |",
         "|---|---:|---:|---:|---:|---:|---|"]
for r in rows:
    lines.append("| " + " | ".join(r) + " |")
by = {r[0]: r for r in rows}
lines.append("")
for r in rows:
    if r[0].startswith("draftgen"):
        c = r[0].split("=")[1]
        py = by.get(f"python c={c}")
        if py and float(py[3]) > 0 and float(r[5]) > 0:
            lines.append(f"- c={c}: draftgen does **{float(r[3]) / float(py[3]):.1f}x** the requests per CPU-second of the Python client, "
                         f"with {float(py[5]) / float(r[5]):.1f}x less peak memory ({r[5]} MB vs {py[5]} MB).")
            runs_d = [float(x) for x in r[6].split("/")]
            runs_p = [float(x) for x in py[6].split("/")]
            lines.append(f"  Spread over the runs: {min(runs_p) / max(runs_d):.1f}x (draftgen's slowest against Python's fastest) "
                         f"to {max(runs_p) / min(runs_d):.1f}x.")
lines.append("")
section = "\n".join(lines)
path = "BENCHMARKS.md"
text = open(path).read() if os.path.exists(path) else "# Benchmarks\n"
# The table is replaced; the notes written under KEEP (what changed, what limits the numbers) stay.
KEEP = "<!-- bench_generate.sh replaces the section above this line; notes below are kept -->"
pat = re.compile(r"## Generate\n.*?(?=" + re.escape(KEEP) + r"|\n## |\Z)", re.S)
replacement = section.rstrip("\n") + ("\n\n" if KEEP in text else "")
text = pat.sub(lambda _: replacement, text) if pat.search(text) else text.rstrip("\n") + "\n\n" + section
open(path, "w").write(text.rstrip("\n") + "\n")
print(section)
PY
