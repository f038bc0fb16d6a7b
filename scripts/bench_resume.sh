#!/usr/bin/env bash
# Resume-index benchmark: time to index a 1,000,000-record journal vs `wc -l` on the same files.
#
#   scripts/bench_resume.sh [RECORDS] [RUN_DIR]
#
# Writes a realistic journal (1–2 KB records with request and response bodies) with the real
# Journal writer via `examples/journal_bench.rs`, warms the page cache, then takes the best of
# 5 runs of `wc -l` over the segments and of the read-only resume index (`journal_bench index`),
# and writes the ratio into the "Resume" section of BENCHMARKS.md.
set -euo pipefail

RECORDS="${1:-1000000}"
RUN_DIR="${2:-${TMPDIR:-/tmp}/draftgen-bench-resume}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BIN="$ROOT/target/release/examples/journal_bench"
RUNS=5

cd "$ROOT"
cargo build --release --example journal_bench >&2

have=0
if [[ -d "$RUN_DIR/journal" ]]; then
  have=$(cat "$RUN_DIR"/journal/*.jsonl | wc -l)
fi
if [[ "$have" != "$RECORDS" ]]; then
  rm -rf "$RUN_DIR"
  echo "writing $RECORDS records to $RUN_DIR ..." >&2
  "$BIN" gen "$RUN_DIR" "$RECORDS"
fi
segments=("$RUN_DIR"/journal/*.jsonl)
bytes=$(cat "${segments[@]}" | wc -c)

# Warm the page cache so both tools read from memory (resume after a crash usually does too).
cat "${segments[@]}" > /dev/null

now() { date +%s.%N; }
best() { sort -g | head -n1; }

wc_times=()
for _ in $(seq "$RUNS"); do
  t0=$(now); wc -l "${segments[@]}" > /dev/null; t1=$(now)
  wc_times+=("$(echo "$t1 - $t0" | bc -l)")
done
index_times=()
index_line=""
for _ in $(seq "$RUNS"); do
  t0=$(now); index_line=$("$BIN" index "$RUN_DIR"); t1=$(now)
  index_times+=("$(echo "$t1 - $t0" | bc -l)")
done
wc_best=$(printf '%s\n' "${wc_times[@]}" | best)
index_best=$(printf '%s\n' "${index_times[@]}" | best)
ratio=$(echo "$index_best / $wc_best" | bc -l)

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || echo unknown)"
cores="$(nproc)"
mib=$(echo "$bytes / 1048576" | bc)
printf -v wc_s '%.3f' "$wc_best"
printf -v index_s '%.3f' "$index_best"
printf -v ratio_s '%.2f' "$ratio"

section=$(cat <<MD
## Resume

Resume index of a journal of ${RECORDS} records (${mib} MiB in ${#segments[@]} segments, 1–2 KB
records with request and response bodies, written by the real \`Journal\`), page cache warm, best
of ${RUNS} runs, on ${cpu} (${cores} cores), $(date -u +%Y-%m-%d).

| what | seconds |
|---|---|
| \`wc -l\` over the segments | ${wc_s} |
| resume index (\`journal_bench index\`, whole process) | ${index_s} |
| **ratio (target < 3.0)** | **${ratio_s}** |

Index output: \`${index_line}\`

Reproduce: \`scripts/bench_resume.sh [RECORDS] [RUN_DIR]\` (needs about $((mib * 11 / 10)) MiB of disk).
MD
)

md="$ROOT/BENCHMARKS.md"
[[ -f "$md" ]] || printf '# Benchmarks\n' > "$md"
# Replace the "## Resume" section (up to the next "## " heading) or append it.
python3 - "$md" "$section" <<'PY'
import re, sys
path, section = sys.argv[1], sys.argv[2].rstrip() + "\n"
text = open(path, encoding="utf-8").read()
pattern = re.compile(r"^## Resume\n.*?(?=^## |\Z)", re.S | re.M)
if pattern.search(text):
    text = pattern.sub(lambda _: section + "\n", text, count=1).rstrip() + "\n"
else:
    text = text.rstrip() + "\n\n" + section
open(path, "w", encoding="utf-8").write(text)
PY
echo "$section"
