#!/usr/bin/env python3
"""Render + tokenize speed: draftgen vs transformers' apply_chat_template(tokenize=True).

Same conversations for both: tests/data/parity/render_{qwen3,deepseek_v3}.jsonl (transformers'
own tokenizers on ASSETS/qwen3, ASSETS/deepseek-v3) and render_kimi_k2{,_thinking}.jsonl. Kimi's
tokenizer class (`tokenization_kimi.py`) is not among the assets, so its apply_chat_template is
reproduced by tests/data/gen/reference.py exactly as the parity data was made: transformers'
`render_jinja_template` on deep-sorted tools, then tiktoken with Kimi's pre-splitting. Python is timed inside one process (model
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
# (label, model dir, corpus, draftgen profile)
CORPORA = [
    ("qwen3", "qwen3", "render_qwen3.jsonl", None),
    ("deepseek-v3", "deepseek-v3", "render_deepseek_v3.jsonl", None),
    ("kimi-k2", "kimi-k2.5", "render_kimi_k2.jsonl", "kimi-k2"),
    ("kimi-k2-thinking", "kimi-k2.5", "render_kimi_k2_thinking.jsonl", "kimi-k2-thinking"),
]
REPEAT = 10  # the 240 conversations, repeated, so timings are well above process noise


def load(file):
    return [json.loads(l) for l in (ROOT / "tests/data/parity" / file).read_text(encoding="utf-8").split("\n") if l]


def python_seconds(model, cases):
    if cases[0].get("template"):
        sys.path.insert(0, str(ROOT / "tests/data/gen"))
        import reference

        def one(c):
            text = reference.kimi_render(c["template"], c["messages"], c.get("tools"),
                                         c["add_generation_prompt"], **(c.get("chat_template_kwargs") or {}))
            return reference.kimi_encode(text)
    else:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(ASSETS / model))

        def one(c):
            return tok.apply_chat_template(c["messages"], tools=c.get("tools"), tokenize=True,
                                           add_generation_prompt=c["add_generation_prompt"],
                                           **(c.get("chat_template_kwargs") or {}))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for c in cases:
            one(c)
        best = min(best, time.perf_counter() - start)
    return best


def draftgen_seconds(model, path, profile, template):
    command = [str(BINARY), "render", "--model", str(ASSETS / model), "--input", str(path)]
    if profile:
        command += ["--profile", profile]
    if template:
        command += ["--chat-template", str(ASSETS / template)]
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, file, profile in CORPORA:
            cases = load(file) * REPEAT
            template = cases[0].get("template")
            full, one = Path(tmp) / f"{model}.jsonl", Path(tmp) / f"{model}-1.jsonl"
            full.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in cases) + "\n", encoding="utf-8")
            one.write_text(json.dumps(cases[0], ensure_ascii=False) + "\n", encoding="utf-8")
            py = python_seconds(model, cases)
            ours_total = draftgen_seconds(model, full, profile, template)
            ours = max(ours_total - draftgen_seconds(model, one, profile, template), 1e-9)
            rows.append((label, len(cases), py, ours, ours_total))
    lines = ["## Render", "",
             "Render + tokenize of the parity conversations: transformers `apply_chat_template(tokenize=True)`",
             "(Kimi: the same pipeline via tests/data/gen/reference.py; one Python thread, model loaded) vs the",
             "release `draftgen render --input` (all cores; load time subtracted; end-to-end time including load",
             "in the last column). Made by `scripts/bench_render.py`; the machine was shared with other builds,",
             "so absolute numbers are noisy.",
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
