#!/usr/bin/env python3
"""Render + tokenize speed: draftgen vs transformers' apply_chat_template(tokenize=True).

Same conversations for both: tests/data/parity/render_{qwen3,deepseek_v3}.jsonl (transformers'
own tokenizers on ASSETS/qwen3, ASSETS/deepseek-v3). Python is timed inside one process (model
already loaded, best of 3 passes over the corpus, one thread). draftgen is the release binary
`draftgen render --input F`, best of 3; its one-off tokenizer/template load is measured with a
one-line input and subtracted, so both sides count only per-conversation work. Prints a
Markdown table and, with --write, replaces the "## Render" section of BENCHMARKS.md.

    cargo build --release && DRAFTGEN_ASSETS=../shared/assets python3 scripts/bench_render.py --write
"""
import argparse, json, os, platform, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = Path(os.environ.get("DRAFTGEN_ASSETS", ROOT.parent / "shared" / "assets"))
BINARY = ROOT / "target" / "release" / "draftgen"
CORPORA = [("qwen3", "render_qwen3.jsonl"), ("deepseek-v3", "render_deepseek_v3.jsonl")]
REPEAT = 10  # the 240 conversations, repeated, so timings are well above process noise


def load(file):
    return [json.loads(l) for l in (ROOT / "tests/data/parity" / file).read_text(encoding="utf-8").split("\n") if l]


def python_seconds(model, cases):
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(str(ASSETS / model))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for c in cases:
            tok.apply_chat_template(c["messages"], tools=c.get("tools"), tokenize=True,
                                    add_generation_prompt=c["add_generation_prompt"],
                                    **(c.get("chat_template_kwargs") or {}))
        best = min(best, time.perf_counter() - start)
    return best


def draftgen_seconds(model, path):
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([str(BINARY), "render", "--model", str(ASSETS / model), "--input", str(path)],
                       check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for model, file in CORPORA:
            cases = load(file) * REPEAT
            full, one = Path(tmp) / f"{model}.jsonl", Path(tmp) / f"{model}-1.jsonl"
            full.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n", encoding="utf-8")
            one.write_text(json.dumps(cases[0], ensure_ascii=False) + "\n", encoding="utf-8")
            py = python_seconds(model, cases)
            ours_total = draftgen_seconds(model, full)
            ours = max(ours_total - draftgen_seconds(model, one), 1e-9)
            rows.append((model, len(cases), py, ours, ours_total))
    lines = ["## Render", "",
             "Render + tokenize of the parity conversations: transformers `apply_chat_template(tokenize=True)`",
             "(one Python thread, model loaded) vs the release `draftgen render --input` (load time subtracted;",
             "end-to-end time including load in the last column). Made by `scripts/bench_render.py`.",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}.", "",
             "| corpus | conversations | Python conv/s | draftgen conv/s | ratio | draftgen end-to-end s |",
             "|---|---|---|---|---|---|"]
    for model, n, py, ours, total in rows:
        lines.append(f"| {model} | {n} | {n / py:,.0f} | {n / ours:,.0f} | {py / ours:.1f}x | {total:.2f} |")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.write:
        path = ROOT / "BENCHMARKS.md"
        text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
        start = text.find("## Render")
        if start == -1:
            text = text.rstrip("\n") + "\n\n" + section
        else:
            end = text.find("\n## ", start + 1)
            text = text[:start] + section + (text[end + 1:] if end != -1 else "")
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
