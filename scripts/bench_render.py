#!/usr/bin/env python3
"""Render + tokenize speed: draftgen vs transformers' apply_chat_template(tokenize=True).

Same conversations for both: tests/data/parity/render_{qwen3,deepseek_v3}.jsonl (transformers'
own tokenizers on ASSETS/qwen3, ASSETS/deepseek-v3; DeepSeek-V3 without transformers 5's dropping
of `content: None`, as the parity data was made) and render_kimi_k2{,_thinking}.jsonl. Kimi's
tokenizer class (`tokenization_kimi.py`) is not among the assets, so its apply_chat_template is
reproduced by tests/data/gen/reference.py exactly as the parity data was made: transformers'
`render_jinja_template` on deep-sorted tools, then tiktoken with Kimi's pre-splitting. Python is
timed inside one process (model already loaded, best of 3 passes over the corpus, one thread).

draftgen is the release binary `draftgen render --input F`, best of 3, given only the fields of
its input contract (`messages`, `tools`, `add_generation_prompt`, `chat_template_kwargs`); its
one-off tokenizer/template load is measured with a one-line input and subtracted, so both sides
count only per-conversation work. `draftgen render --text-only`, timed the same way, is the
render's share of that: reading the conversation JSON, the render, writing the text.

Prints a Markdown table and, with --write, replaces the "## Render" section of BENCHMARKS.md up
to its "Render alone" subsection (which holds the divan numbers of `cargo bench --bench render`).

    cargo build --release && cp "$CARGO_TARGET_DIR/release/draftgen" /tmp/draftgen
    DRAFTGEN_ASSETS=../shared/assets python3 scripts/bench_render.py --binary /tmp/draftgen \\
        [--baseline /tmp/draftgen-before] --write
"""
import argparse, copy, json, os, platform, re, subprocess, sys, tempfile, time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = Path(os.environ.get("DRAFTGEN_ASSETS", ROOT.parent / "shared" / "assets"))
TARGET = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target"))
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
DRAFTGEN_REPEAT = 200
INPUT_FIELDS = ("messages", "tools", "add_generation_prompt", "chat_template_kwargs")


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
    elif model == "deepseek-v3":
        # As the parity data was made (reference.hf_render_keep_none): transformers' pipeline
        # without its first step, which drops `content: None` and so makes the DeepSeek-V3
        # template raise on tool-call turns.
        from transformers import AutoTokenizer
        from transformers.utils.chat_template_utils import render_jinja_template
        tok = AutoTokenizer.from_pretrained(str(ASSETS / model))

        def one(c):
            tools = c.get("tools")
            rendered, _ = render_jinja_template(
                conversations=[c["messages"]], tools=tools, chat_template=tok.get_chat_template(None, tools),
                add_generation_prompt=c["add_generation_prompt"],
                **{**tok.special_tokens_map, **(c.get("chat_template_kwargs") or {})})
            return tok.encode(rendered[0], add_special_tokens=False)
    else:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(str(ASSETS / model))

        def one(c):
            return tok.apply_chat_template(c["messages"], tools=c.get("tools"), tokenize=True,
                                           add_generation_prompt=c["add_generation_prompt"],
                                           **(c.get("chat_template_kwargs") or {}))
    best, best_cpu = float("inf"), float("inf")
    for _ in range(3):
        # Fresh copies each pass: transformers normalizes the messages it is given in place (drops
        # `None` keys), so a conversation seen twice would not be the same input the second time.
        batch = copy.deepcopy(cases)
        start, start_cpu = time.perf_counter(), time.process_time()
        for c in batch:
            one(c)
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, time.process_time() - start_cpu)
    return best, best_cpu


def run_seconds(command):
    """Best of 3 wall and CPU (user + sys of the child, all its threads) seconds."""
    best, best_cpu = float("inf"), float("inf")
    for _ in range(3):
        start = time.perf_counter()
        child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        _, status, usage = os.wait4(child.pid, 0)
        if status != 0:
            raise SystemExit(f"{command} failed: {status}")
        best = min(best, time.perf_counter() - start)
        best_cpu = min(best_cpu, usage.ru_utime + usage.ru_stime)
    return best, best_cpu


def per_conversation(command, full, one, n):
    """Wall and CPU seconds per conversation, the one-line run's load subtracted."""
    wall, cpu = run_seconds(command + ["--input", str(full)])
    load_wall, load_cpu = run_seconds(command + ["--input", str(one)])
    return max(wall - load_wall, 1e-9) / n, max(cpu - load_cpu, 1e-9) / n, wall


def write_lines(path, items):
    path.write_text("\n".join(json.dumps(i, ensure_ascii=False) for i in items) + "\n", encoding="utf-8")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", type=Path, default=TARGET / "release" / "draftgen",
                        help="the draftgen to measure (default: $CARGO_TARGET_DIR/release/draftgen)")
    parser.add_argument("--baseline", type=Path, help="an earlier draftgen, measured the same way")
    parser.add_argument("--write", action="store_true", help="update BENCHMARKS.md")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, model, file, profile in CORPORA:
            cases = load(file)
            template = cases[0].get("template")
            inputs = [{k: c[k] for k in INPUT_FIELDS if k in c} for c in cases]
            n = len(cases) * DRAFTGEN_REPEAT
            full, one = Path(tmp) / f"{model}.jsonl", Path(tmp) / f"{model}-1.jsonl"
            write_lines(full, inputs * DRAFTGEN_REPEAT)
            write_lines(one, inputs[:1])
            py, py_cpu = python_seconds(model, cases * REPEAT)
            py, py_cpu = py / (len(cases) * REPEAT), py_cpu / (len(cases) * REPEAT)

            def render(binary, *flags):
                command = [str(binary), "render", *flags, "--model", str(ASSETS / model)]
                if profile:
                    command += ["--profile", profile]
                if template:
                    command += ["--chat-template", str(ASSETS / template)]
                return per_conversation(command, full, one, n)

            ours, ours_cpu, total = render(args.binary)
            base_cpu = render(args.baseline)[1] if args.baseline else None
            text_cpu = render(args.binary, "--text-only")[1]
            rows.append((label, py, py_cpu, ours, ours_cpu, base_cpu, text_cpu, total, n))

    us = lambda s: f"{s * 1e6:,.1f}"
    baseline_head = " baseline CPU µs/conv (ratio) |" if args.baseline else ""
    lines = ["## Render", "",
             "Render + tokenize of the parity conversations: transformers `apply_chat_template(tokenize=True)`",
             "(Kimi: the same pipeline via tests/data/gen/reference.py; one Python thread, model loaded) vs the",
             f"release `draftgen render --input` (all cores, {DRAFTGEN_REPEAT} repeats of the corpus given as its input",
             "contract, the load time of a one-line run subtracted). CPU: seconds (user+sys) per conversation,",
             "which depends neither on how busy the shared machine was nor on its core count; the ratio is",
             "Python's over draftgen's. Render share: `draftgen render --text-only`, timed the same way (reading",
             "the conversation JSON, the render, writing the text; the rest is tokenizing and writing ids).",
             f"Made by `scripts/bench_render.py`. Machine: {platform.machine()}, {os.cpu_count()} CPUs (shared),",
             f"Python {platform.python_version()}.", "",
             f"| corpus | Python CPU µs/conv |{baseline_head} draftgen CPU µs/conv | CPU ratio | wall ratio | render share (`--text-only`) CPU µs/conv | draftgen end-to-end s (conversations) |",
             "|---|---|" + ("---|" if args.baseline else "") + "---|---|---|---|---|"]
    for label, py, py_cpu, ours, ours_cpu, base_cpu, text_cpu, total, n in rows:
        baseline = f" {us(base_cpu)} ({py_cpu / base_cpu:.1f}x) |" if base_cpu else ""
        lines.append(f"| {label} | {us(py_cpu)} |{baseline} {us(ours_cpu)} | {py_cpu / ours_cpu:.1f}x | "
                     f"{py / ours:.1f}x | {us(text_cpu)} | {total:.2f} ({n:,}) |")
    section = "\n".join(lines) + "\n"
    print(section)
    if args.write:
        path = ROOT / "BENCHMARKS.md"
        text = path.read_text(encoding="utf-8") if path.exists() else "# Benchmarks\n\n"
        # The heading line itself: "## Render" is also inside "### Rendered conversations".
        heading = re.search(r"^## Render$", text, re.MULTILINE)
        start = heading.start() if heading else -1
        if start == -1:
            text = text.rstrip("\n") + "\n\n" + section
        else:
            # Up to the hand-written part of the section, or the next section.
            ends = [i for i in (text.find("\n### ", start), text.find("\n## ", start + 1)) if i != -1]
            end = min(ends) if ends else len(text)
            text = text[:start] + section + text[end:]
        path.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
