#!/usr/bin/env python3
"""Encode speed: draftgen vs the Python tokenizers on the same texts, one thread each.

Corpora:
  - tests/data/parity/tokenize_kimi.jsonl, split as in benches/tokenize.rs into the 1,079
    ordinary texts ("texts") and the 20 long repeat texts ("long");
  - the rendered conversations (`text`) of tests/data/parity/render_<family>.jsonl, per family
    (qwen3, deepseek_v3: their tokenizer.json; kimi_k2, kimi_k2_thinking: Kimi's tiktoken).

Python side (best CPU time of --repeats passes, one thread):
  - Kimi: tiktoken `Encoding.encode(text, allowed_special="all")` on the whole text (the raw
    engine, no Kimi pre-split: the fastest Python can go), and `TikTokenTokenizer.encode` as
    tokenization_kimi.py does it (pre-split, then tiktoken) through tests/data/gen/reference.py;
  - Qwen3 / DeepSeek-V3: transformers `tokenizer(text, add_special_tokens=False)` (the encode
    inside `apply_chat_template(tokenize=True)`), and the raw `tokenizers.Tokenizer.encode`.
Rust side: the `tokenize` divan bench (release profile), median per bench: `cargo bench --bench
tokenize`, or a prebuilt bench binary (--bench-binary, run with `--bench`).

Writes the "Tokenizer" section of BENCHMARKS.md (replacing an existing one) and prints it.

Usage: python3 scripts/bench_tokenize.py [--repeats 5] [--bench-binary PATH] [--no-write]
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

PARITY = ROOT / "tests" / "data" / "parity"
CORPUS = PARITY / "tokenize_kimi.jsonl"
ASSETS = Path(os.environ.get("DRAFTGEN_ASSETS", ROOT.parent / "shared" / "assets"))
# (render corpus and bench name, model directory under ASSETS)
RENDER_FAMILIES = [
    ("qwen3", "qwen3"),
    ("deepseek_v3", "deepseek-v3"),
    ("kimi_k2", "kimi-k2.5"),
    ("kimi_k2_thinking", "kimi-k2.5"),
]
UNITS = {"ns": 1e-9, "µs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


# What the per-family numbers were before the word cache / DFA splitter / literal scan (commit
# a6b5e42), measured in the same session on the same machine; static, so a rerun keeps it.
HISTORY = [
    "Before (commit a6b5e42: the `regex-automata` meta regex searched unanchored per piece, no word",
    "cache, `NormalizedString` on every non-ASCII stretch, the `regex` crate for literals), same",
    "machine and session, the two bench builds alternated (load average ~4), µs per conversation,",
    "median (fastest sample): qwen3 87 (62) -> 8.8 (8.6); deepseek_v3 16.5 (14.5) -> 4.9 (4.7);",
    "kimi_k2 39 (22) -> 6.8 (6.7); kimi_k2_thinking 49 (31) -> 9.7 (9.3). By step, qwen3 /",
    "kimi_k2_thinking, fastest sample: word cache + anchored lazy DFA + NFC quick check 62 -> 12.3 /",
    "31 -> 14.4; dense DFA whose loop looks up the matched pattern once per piece, and keys compared",
    "without `memcmp`, 9.4 / 11.6; one aho-corasick pass for the literals 8.7 / 9.3.",
    "",
    "End to end, `draftgen tokenize --input` (JSON lines in, `{\"ids\": [...]}` lines out, `encode_batch`",
    "on both cores) on the 240 rendered texts repeated 50 times, CPU seconds (user+sys, best of 3)",
    "minus those of a one-line input (the load), per conversation, before -> after: qwen3 70 -> 15.8 µs,",
    "deepseek_v3 19.2 -> 7.5 µs, kimi_k2_thinking 50.8 -> 21.7 µs (load average ~5). What the CLI adds",
    "over the encode is reading and writing JSON and allocating for all texts at once; loading",
    "now also builds the split DFAs (~20 ms for Qwen3, ~45 ms for Kimi).",
]


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


def render_corpus(family: str) -> tuple[list[str], int]:
    """The rendered conversation texts of render_<family>.jsonl and their total token count."""
    texts, tokens = [], 0
    for line in (PARITY / f"render_{family}.jsonl").read_text(encoding="utf-8").split("\n"):
        if line.strip():
            entry = json.loads(line)
            texts.append(entry["text"])
            tokens += len(entry["ids"])
    return texts, tokens


def python_encoders(model: str):
    """(the library encode a chat pipeline calls, the raw engine) for a model directory."""
    if model.startswith("kimi"):
        encoding = reference.kimi_encoding()
        return (lambda t: reference.kimi_encode(t, encoding),
                lambda t: encoding.encode(t, allowed_special="all"))
    import tokenizers
    from transformers import AutoTokenizer
    library = AutoTokenizer.from_pretrained(str(ASSETS / model))
    raw = tokenizers.Tokenizer.from_file(str(ASSETS / model / "tokenizer.json"))
    return (lambda t: library(t, add_special_tokens=False)["input_ids"],
            lambda t: raw.encode(t, add_special_tokens=False).ids)


def best_time(fn, texts: list[str], repeats: int) -> float:
    """Best CPU time of `repeats` passes (Python is one thread; CPU time does not count the
    waits of a busy shared machine)."""
    best = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for text in texts:
            fn(text)
        best = min(best, time.process_time() - start)
    return best


def rust_medians(binary: str | None) -> tuple[dict[str, float], dict[str, float]]:
    """(median, fastest sample) per divan bench, in seconds."""
    command = [binary, "--bench"] if binary else ["cargo", "bench", "--bench", "tokenize"]
    out = subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    medians, fastest = {}, {}
    # divan rows: "├─ name   fastest │ slowest │ median │ mean │ samples │ iters"
    for line in out.splitlines():
        match = re.match(r"^[├╰│ ─]*\s*(\w+)\s+(.+)$", line)
        if not match or "│" not in match.group(2):
            continue
        cells = [c.strip() for c in match.group(2).split("│")]
        for column, into in ((2, medians), (0, fastest)):
            value = re.match(r"([\d.]+)\s*(\S+)", cells[column]) if len(cells) > 2 else None
            if value and value.group(2) in UNITS:
                into[match.group(1)] = float(value.group(1)) * UNITS[value.group(2)]
    return medians, fastest


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown CPU"


def tokenizers_version() -> str:
    import tokenizers
    return tokenizers.__version__


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--no-write", action="store_true", help="print only, leave BENCHMARKS.md")
    parser.add_argument("--bench-binary", help="a built `tokenize` bench binary instead of cargo bench")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]

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
    render = {}
    for family, model in RENDER_FAMILIES:
        family_texts, tokens = render_corpus(family)
        library, raw_engine = python_encoders(model)
        render[family] = {
            "texts": len(family_texts),
            "tokens": tokens,
            "library": best_time(library, family_texts, args.repeats),
            "raw": best_time(raw_engine, family_texts, args.repeats),
        }
    rust, rust_fastest = rust_medians(args.bench_binary)
    load_after = os.getloadavg()[0]
    needed = ["kimi_texts_fast", "kimi_texts_core_bpe", "kimi_texts_batch", "kimi_long_fast", "kimi_long_core_bpe"]
    needed += [f"render_{f}_{kind}" for f, _ in RENDER_FAMILIES for kind in ("fast", "reference")]
    missing = [n for n in needed if n not in rust]
    if missing:
        sys.exit(f"could not read divan medians for {missing} from `cargo bench --bench tokenize`")

    chars_texts = sum(len(t) for t in texts)
    chars_long = sum(len(t) for t in long)

    def row(name: str, seconds: float, chars: int, baseline: float) -> str:
        return f"| {name} | {seconds * 1e3:.2f} ms | {chars / seconds / 1e6:.2f} | {baseline / seconds:.2f}x |"

    def us_per(seconds: float, count: int) -> str:
        return f"{seconds / count * 1e6:.1f}"

    render_rows = []
    for family, model in RENDER_FAMILIES:
        r = render[family]
        # Fastest of divan's samples (each a pass over all texts) against Python's best pass:
        # on this shared machine a median includes the passes another process preempted.
        fast = rust_fastest[f"render_{family}_fast"]
        reference_crate = rust_fastest[f"render_{family}_reference"]
        n = r["texts"]
        render_rows.append(
            f"| {family} | {n} | {r['tokens'] / n:.0f} | {us_per(r['library'], n)} | {us_per(r['raw'], n)} "
            f"| {us_per(reference_crate, n)} | **{us_per(fast, n)}** ({us_per(rust[f'render_{family}_fast'], n)}) "
            f"| {r['library'] / fast:.1f}x | {r['raw'] / fast:.1f}x |"
        )

    lines = [
        "## Tokenizer",
        "",
        "### Rendered conversations, per family",
        "",
        "Encode of the rendered chat texts (`text` of `tests/data/parity/render_<family>.jsonl`,",
        "special-token literals included), one thread, µs per conversation. Python library: the encode",
        "a chat pipeline calls (transformers `tokenizer(text, add_special_tokens=False)`, as inside",
        "`apply_chat_template(tokenize=True)`; Kimi: `TikTokenTokenizer.encode` with its pre-split);",
        "Python raw: the engine alone (`tokenizers.Tokenizer.encode`; tiktoken `encode`). Reference",
        "crate: the same texts through the Rust `tokenizers` crate / tiktoken-rs `CoreBPE` (what",
        "draftgen's fast paths are tested against). Each side's best pass over all texts: Python's best",
        "CPU time, Rust's fastest divan sample (wall time, at least its CPU time); ratios Python /",
        "draftgen from those. In parentheses divan's median sample, which on this shared machine also",
        "counts the passes another process preempted.",
        "",
        "| family | conversations | tokens/conv | Python library µs | Python raw µs | reference crate µs | draftgen µs best (median) | vs library | vs raw |",
        "|---|---|---|---|---|---|---|---|---|",
        *render_rows,
        "",
        f"Budget: the render+tokenize target (Render section, at least 20x transformers) leaves about",
        f"10-15 µs per conversation for tokenizing; draftgen's slowest family here takes "
        f"{max(rust_fastest[f'render_{f}_fast'] / render[f]['texts'] for f, _ in RENDER_FAMILIES) * 1e6:.1f} µs "
        f"(best pass; {max(rust[f'render_{f}_fast'] / render[f]['texts'] for f, _ in RENDER_FAMILIES) * 1e6:.1f} µs median).",
        "Where the time goes now (perf, qwen3 and kimi_k2_thinking): about a third in the split DFA",
        "(one forward pass per piece), a quarter in the word cache (hash + one probe per piece, mostly",
        "waiting on memory), 8-15% in the special-literal scan (aho-corasick), the rest in the splitter",
        "loop, the NFC quick check (Qwen3) and copying ids.",
        "",
        *HISTORY,
        "",
        "### Kimi parity corpus",
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
        "Long texts are dominated by the byte-pair merge of 25k-char pieces (`bpe::merge_long`, over",
        "pairs of ids), where a faster split pattern and the word cache (pieces up to 128 bytes) matter",
        "little (draftgen still skips Python's pre-split cost). `encode_batch` on the short texts gains",
        "little on 2 busy cores: the texts are tiny and rayon's split costs are comparable.",
        "",
        f"Machine: {cpu_model()}, {os.cpu_count()} cores (shared with other jobs while measured: load average",
        f"{load_before:.1f} before, {load_after:.1f} after); Python {platform.python_version()}, tiktoken {tiktoken.__version__},",
        f"tokenizers {tokenizers_version()}; draftgen release profile (divan medians, Python best CPU time of {args.repeats} passes).",
        "Reproduce: `python3 scripts/bench_tokenize.py` (or `--bench-binary` with a built bench).",
        "",
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
