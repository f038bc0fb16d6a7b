#!/usr/bin/env python3
"""Kimi encode speed: draftgen vs Python tiktoken on the same corpus, one thread each.

Corpus: tests/data/parity/tokenize_kimi.jsonl, split as in benches/tokenize.rs into the 1,079
ordinary texts ("texts") and the 20 long repeat texts ("long").

Python side (best of --repeats runs, one thread):
  - tiktoken: `Encoding.encode(text, allowed_special="all")` on the whole text (the raw engine,
    no Kimi pre-split: the fastest Python can go);
  - kimi: `TikTokenTokenizer.encode` as tokenization_kimi.py does it (pre-split, then tiktoken),
    through tests/data/gen/reference.py.
Rust side: `cargo bench --bench tokenize` (divan, release profile), median per bench.

Writes the "Tokenizer" section of BENCHMARKS.md (replacing an existing one) and prints it.

Usage: python3 scripts/bench_tokenize.py [--repeats 5] [--no-write]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "data" / "gen"))

import reference  # noqa: E402  (the Python reference pipeline of the parity corpus)
import tiktoken  # noqa: E402

CORPUS = ROOT / "tests" / "data" / "parity" / "tokenize_kimi.jsonl"
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def load_corpus() -> tuple[list[str], list[str]]:
    texts, long = [], []
    for line in CORPUS.read_text(encoding="utf-8").split("\n"):
        if not line.strip():
            continue
        entry = json.loads(line)
        if "text" in entry:
            texts.append(entry["text"])
        else:
            long.append("".join(piece * count for piece, count in entry["repeat"]))
    return texts, long


def best_time(fn, texts: list[str], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for text in texts:
            fn(text)
        best = min(best, time.perf_counter() - start)
    return best


def rust_medians() -> dict[str, float]:
    out = subprocess.run(
        ["cargo", "bench", "--bench", "tokenize"],
        cwd=ROOT, check=True, capture_output=True, text=True,
    ).stdout
    medians = {}
    # divan rows: "├─ name   fastest │ slowest │ median │ mean │ samples │ iters"
    for line in out.splitlines():
        match = re.match(r"^[├╰│ ─]*\s*(\w+)\s+(.+)$", line)
        if not match or "│" not in match.group(2):
            continue
        cells = [c.strip() for c in match.group(2).split("│")]
        value = re.match(r"([\d.]+)\s*(\S+)", cells[2]) if len(cells) > 2 else None
        if value and value.group(2) in UNITS:
            medians[match.group(1)] = float(value.group(1)) * UNITS[value.group(2)]
    return medians


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    args = parser.parse_args()

    texts, long = load_corpus()
    encoding = reference.kimi_encoding()
    raw = lambda t: encoding.encode(t, allowed_special="all")  # noqa: E731
    kimi = lambda t: reference.kimi_encode(t, encoding)  # noqa: E731
    ordinary = lambda t: encoding.encode_ordinary(t)  # noqa: E731
    python = {
        "texts_tiktoken": best_time(raw, texts, args.repeats),
        "texts_ordinary": best_time(ordinary, texts, args.repeats),
        "texts_kimi": best_time(kimi, texts, args.repeats),
        "long_tiktoken": best_time(raw, long, max(1, args.repeats // 2)),
        "long_kimi": best_time(kimi, long, max(1, args.repeats // 2)),
    }
    rust = rust_medians()
    needed = ["kimi_texts_fast", "kimi_texts_core_bpe", "kimi_texts_batch", "kimi_long_fast", "kimi_long_core_bpe"]
    missing = [n for n in needed if n not in rust]
    if missing:
        sys.exit(f"could not read divan medians for {missing} from `cargo bench --bench tokenize`")

    chars_texts = sum(len(t) for t in texts)
    chars_long = sum(len(t) for t in long)

    def row(name: str, seconds: float, chars: int, baseline: float) -> str:
        return f"| {name} | {seconds * 1e3:.2f} ms | {chars / seconds / 1e6:.2f} | {baseline / seconds:.2f}x |"

    lines = [
        "## Tokenizer",
        "",
        "Kimi encode (`allowed_special=\"all\"`), one thread unless noted, on the parity corpus",
        f"`tests/data/parity/tokenize_kimi.jsonl`: {len(texts):,} ordinary texts ({chars_texts:,} chars) and",
        f"{len(long):,} long texts ({chars_long:,} chars: 25k-char runs, 400k-char chunks). Ratio = Python",
        "tiktoken's raw `Encoding.encode` time / this row's time (higher is faster).",
        "",
        "| texts | time | M chars/s | vs Python tiktoken |",
        "|---|---|---|---|",
        row("Python tiktoken `encode` (raw engine)", python["texts_tiktoken"], chars_texts, python["texts_tiktoken"]),
        row("Python `TikTokenTokenizer.encode` (pre-split)", python["texts_kimi"], chars_texts, python["texts_tiktoken"]),
        row("Python tiktoken `encode_ordinary` (no literal scan: lower bound)", python["texts_ordinary"], chars_texts, python["texts_tiktoken"]),
        row("draftgen `Tokenizer::encode`", rust["kimi_texts_fast"], chars_texts, python["texts_tiktoken"]),
        row("draftgen via tiktoken-rs `CoreBPE` only", rust["kimi_texts_core_bpe"], chars_texts, python["texts_tiktoken"]),
        row(f"draftgen `encode_batch` (all {os.cpu_count()} cores)", rust["kimi_texts_batch"], chars_texts, python["texts_tiktoken"]),
        "",
        "| long texts | time | M chars/s | vs Python tiktoken |",
        "|---|---|---|---|",
        row("Python tiktoken `encode` (raw engine)", python["long_tiktoken"], chars_long, python["long_tiktoken"]),
        row("Python `TikTokenTokenizer.encode` (pre-split)", python["long_kimi"], chars_long, python["long_tiktoken"]),
        row("draftgen `Tokenizer::encode`", rust["kimi_long_fast"], chars_long, python["long_tiktoken"]),
        row("draftgen via tiktoken-rs `CoreBPE` only", rust["kimi_long_core_bpe"], chars_long, python["long_tiktoken"]),
        "",
        "Python's `encode(allowed_special=\"all\")` converts the 256-literal set on every call, which",
        "dominates on short texts; `encode_ordinary` shows Python without that cost (it does not",
        f"recognize literals, so it is not a Kimi encode): draftgen is {python['texts_ordinary'] / rust['kimi_texts_fast']:.2f}x that lower bound.",
        "Long texts are dominated by the byte-pair merge of 25k-char pieces, where a faster split",
        "pattern matters little (draftgen still skips Python's pre-split cost). `encode_batch` on the short texts",
        "gains little on 2 busy cores: the texts are tiny and rayon's split costs are comparable.",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores (shared with other jobs while measured);",
        f"Python {platform.python_version()}, tiktoken {tiktoken.__version__}; draftgen release profile (divan medians,",
        f"Python best of {args.repeats}). Reproduce: `python3 scripts/bench_tokenize.py`.",
        "",
    ]
    section = "\n".join(lines)
    print(section)
    if args.no_write:
        return
    path = ROOT / "BENCHMARKS.md"
    current = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
    pattern = re.compile(r"^## Tokenizer\n.*?(?=^## |\Z)", re.S | re.M)
    updated = pattern.sub(section, current) if pattern.search(current) else current.rstrip("\n") + "\n\n" + section
    path.write_text(updated, encoding="utf-8")


if __name__ == "__main__":
    main()
