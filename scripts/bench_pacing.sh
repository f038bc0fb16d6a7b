#!/usr/bin/env bash
# Pacing under a provider's capacity (BENCHMARKS.md "Pacing"): draftgen's engine against the
# seed-style fixed-semaphore client, on the sim's capacity model (examples/capacity_bench.rs).
# Arguments: capacities (`/RPS` rate alone, `SLOTS` slots alone, `SLOTS/RPS` both); the default is
# the table's. BENCH_CAPACITY_HEADERS=1: the sim advertises its bucket in X-RateLimit-* headers.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -eq 0 ]; then
    set -- /5 /20 /50 /200 /500 10 50 10/50 20/100
fi
nice cargo build --release --locked --example capacity_bench
target="${CARGO_TARGET_DIR:-target}"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
nice "$target/release/examples/capacity_bench" "$@"
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
