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
# draftgen's per-conversation work is small next to its load time, so it gets a longer input
# (the same conversations, more repeats) to keep the load-time subtraction from dominating.
DRAFTGEN_REPEAT = 50


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
    best, best_cpu = float("inf"), float("inf")
    for _ in range(3):
        start, start_cpu = time.perf_counter(), time.process_time()
        for c in cases:
            one(c)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu


def draftgen_seconds(model, path, profile, template):
    command = [str(BINARY), "render", "--model", str(ASSETS / model), "--input", str(path)]
    if profile:
        command += ["--profile", profile]
    if template:
        command += ["--chat-template", str(ASSETS / template)]
    best, best_cpu = float("inf"), float("inf")
    for _ in range(3):
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        # wait4 gives this child's own CPU time (user + sys, all its threads).
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            raise SystemExit(f"{command} failed: {status}")
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, usage.ru_utime + usage.ru_stime)
    return best, best_cpu


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
            ours_cases = load(file) * DRAFTGEN_REPEAT
            full.write_text("\n".join(json.dumps(c, ensure_ascii=False) for c in ours_cases) + "\n", encoding="utf-8")
            one.write_text(json.dumps(cases[0], ensure_ascii=False) + "\n", encoding="utf-8")
            py, py_cpu = python_seconds(model, cases)
            ours_total, ours_total_cpu = draftgen_seconds(model, full, profile, template)
            load_wall, load_cpu = draftgen_seconds(model, one, profile, template)
            scale = len(cases) / len(ours_cases)  # per the Python corpus size
            ours = max(ours_total - load_wall, 1e-9) * scale
            ours_cpu = max(ours_total_cpu - load_cpu, 1e-9) * scale
            rows.append((label, len(cases), py, ours, py_cpu, ours_cpu, len(ours_cases), ours_total))
    lines = ["## Render", "",
             "Render + tokenize of the parity conversations: transformers `apply_chat_template(tokenize=True)`",
             "(Kimi: the same pipeline via tests/data/gen/reference.py; one Python thread, model loaded) vs the",
             f"release `draftgen render --input` (all cores, {DRAFTGEN_REPEAT} repeats of the corpus; the load time of a",
             "one-line run subtracted). Wall ratio: conversations per second, Python one thread vs draftgen",
             "all cores. CPU ratio: CPU seconds (user+sys) per conversation, which does not depend on how",
             "busy the shared machine was, nor on its core count. Made by `scripts/bench_render.py`.",
             f"Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared), Python {platform.python_version()}.", "",
             "| corpus | Python conv/s | draftgen conv/s | wall ratio | Python CPU µs/conv | draftgen CPU µs/conv | CPU ratio | draftgen end-to-end s (conversations) |",
             "|---|---|---|---|---|---|---|---|"]
    for model, n, py, ours, py_cpu, ours_cpu, n_ours, total in rows:
        lines.append(f"| {model} | {n / py:,.0f} | {n / ours:,.0f} | {py / ours:.1f}x | {py_cpu / n * 1e6:,.0f} | "
                     f"{ours_cpu / n * 1e6:,.0f} | {py_cpu / ours_cpu:.1f}x | {total:.2f} ({n_ours:,}) |")
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
