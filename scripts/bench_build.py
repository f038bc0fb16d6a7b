#!/usr/bin/env python3
"""Benchmark `draftgen build` against the same work in Python.

    python3 scripts/bench_build.py make RUN_DIR [--n 100000] [--tokens 2000]
    python3 scripts/bench_build.py python RUN_DIR OUT_DIR [--limit N]
    python3 scripts/bench_build.py compare OUT_A OUT_B
    python3 scripts/bench_build.py declared RUN_DIR DECLARED_DIR KIND
    /usr/bin/time -v target/release/draftgen build --run RUN_DIR --model kimi-k2.5 --out OUT

`make` writes a run directory whose journal holds N successful Kimi K2.5 records (one user
message, an OpenRouter-shaped answer with reasoning and content) of about TOKENS tokens each,
from a fixed seed. `python` does what a user would do in Python for the same samples: render the
prompt with transformers' Jinja pipeline (`reference.kimi_render`, the K2.5-style template),
tokenize prompt and completion with tiktoken and Kimi's pre-split (`reference.kimi_encode`),
build the loss mask, and write zstd Parquet with pyarrow in batches of 1,024 rows; it prints
samples/s and peak RSS as JSON. `compare` reads the Parquet shards of two `build` outputs with
pyarrow and checks they hold the same rows, every column, in the same order (for a writer change
that must not change content), and prints each side's rows, bytes and encodings as JSON.
`declared` makes DECLARED_DIR the same run with its server declared: the journal linked, a
`manifest.json` naming the endpoint's kind (`openrouter`: the run a user of OpenRouter makes, whose
conventions are inferred per provider; without it the endpoint is an undeclared server, whose
answers are also checked against every known server shape).
"""
import json
import random
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests/data/gen"))

WORDS = ("the model answer data value server result check step number list simple compute "
         "total first consider careful function input output string café résumé über 東京 模型 "
         "données привет λόγος 数据 jalapeño façade Straße años").split()


def text(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words)) + "."


# `generate` starts a new journal segment past 64 MiB (src/journal/writer.rs), so a build reads a
# journal a few segments at a time; one 1.3 GB segment would be read, and mapped, whole.
SEGMENT_MAX_BYTES = 64 * 1024 * 1024


def segments(run):
    return sorted((Path(run) / "journal").glob("[0-9]*.jsonl"))


def make(run, n, tokens):
    rng = random.Random(1)
    journal = Path(run) / "journal"
    journal.mkdir(parents=True, exist_ok=True)
    number, size, f = 0, SEGMENT_MAX_BYTES, None
    for i in range(n):
        prompt = f"Question {i}: " + text(rng, tokens // 20)
        reasoning = text(rng, tokens * 2 // 5)
        content = text(rng, tokens * 2 // 5)
        record = {
            "id": f"{i:012x}", "attempt": 1, "status": "success", "endpoint": "bench",
            "started_at": "2026-01-01T00:00:00+00:00", "latency_ms": 1,
            "request": {"model": "moonshotai/kimi-k2.5", "messages": [{"role": "user", "content": prompt}]},
            "response": {"id": f"gen-{i}", "object": "chat.completion", "choices": [{
                "index": 0, "finish_reason": "stop",
                "message": {"role": "assistant", "content": content, "reasoning": reasoning}}]},
        }
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        if size + len(line) > SEGMENT_MAX_BYTES:
            if f:
                f.close()
            number, size = number + 1, 0
            f = open(journal / f"{number:06d}.jsonl", "wb")
        f.write(line)
        size += len(line)
    if f:
        f.close()


def python(run, out, limit):
    import pyarrow as pa
    import pyarrow.parquet as pq
    from reference import kimi_encode, kimi_render

    schema = pa.schema([("id", pa.string()), ("input_ids", pa.list_(pa.uint32())),
                        ("loss_mask", pa.list_(pa.uint8())), ("prompt_len", pa.uint32()),
                        ("completion_len", pa.uint32())])
    Path(out).mkdir(parents=True, exist_ok=True)
    writer = pq.ParquetWriter(Path(out) / "samples.parquet", schema, compression="zstd")
    batch, n, tokens = [], 0, 0
    t0 = time.perf_counter()

    def flush():
        writer.write_table(pa.Table.from_pylist(batch, schema=schema))
        batch.clear()

    for line in (line for path in segments(run) for line in open(path, encoding="utf-8")):
        if n == limit:
            break
        r = json.loads(line)
        msg = r["response"]["choices"][0]["message"]
        prompt = kimi_encode(kimi_render("templates/kimi-k2.5-style.jinja", r["request"]["messages"], None, True))
        completion = kimi_encode((msg.get("reasoning") or "") + "</think>" + (msg.get("content") or "") + "<|im_end|>")
        ids = prompt + completion
        batch.append({"id": r["id"], "input_ids": ids, "loss_mask": [0] * len(prompt) + [1] * len(completion),
                      "prompt_len": len(prompt), "completion_len": len(completion)})
        n += 1
        tokens += len(ids)
        if len(batch) == 1024:
            flush()
    if batch:
        flush()
    writer.close()
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"samples": n, "tokens": tokens, "wall_s": round(wall, 2),
                      "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
                      "samples_per_s": round(n / wall, 1), "peak_rss_mb": usage.ru_maxrss // 1024}))


def compare(a, b):
    import pyarrow.parquet as pq

    def shards(out):
        return sorted(Path(out).glob("samples-*.parquet"))

    def describe(out):
        files = shards(out)
        encodings = {}
        for f in files:
            meta = pq.ParquetFile(f).metadata
            for g in range(meta.num_row_groups):
                for c in range(meta.num_columns):
                    col = meta.row_group(g).column(c)
                    encodings.setdefault(col.path_in_schema, set()).update(col.encodings)
        return {"shards": len(files), "bytes": sum(f.stat().st_size for f in files),
                "encodings": {k: sorted(v) for k, v in encodings.items()}}

    def batches(out):
        for f in shards(out):
            yield from pq.ParquetFile(f).iter_batches(batch_size=1024)

    left, right = describe(a), describe(b)
    ta, tb = (pq.read_schema(shards(x)[0]) for x in (a, b))
    assert ta.equals(tb), f"schemas differ:\n{ta}\n{tb}"
    # Batch by batch (same row-group sizes on both sides, so the batches line up); a differing
    # batch is compared row by row to name the first row that differs.
    n = 0
    for x, y in zip(batches(a), batches(b), strict=True):
        if not x.equals(y):
            for i, (u, v) in enumerate(zip(x.to_pylist(), y.to_pylist(), strict=True)):
                assert u == v, f"row {n + i + 1} differs (id {u.get('id')} / {v.get('id')})"
            assert x.num_rows == y.num_rows, f"batch after row {n} has a different length"
        n += x.num_rows
    print(json.dumps({"rows_equal": n, "a": left, "b": right}))


def declared(run, out, kind):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    link = out / "journal"
    if not link.exists():
        link.symlink_to(Path(run).resolve() / "journal")
    manifest = {"model": "moonshotai/kimi-k2.5", "endpoints": ["bench"], "dataset_hash": "bench",
                "servers": [{"endpoint": "bench", "kind": kind}]}
    (out / "manifest.json").write_text(json.dumps(manifest))


if __name__ == "__main__":
    args = sys.argv[1:]
    opt = lambda name, default: int(args[args.index(name) + 1]) if name in args else default
    if args[0] == "make":
        make(args[1], opt("--n", 100_000), opt("--tokens", 2000))
    elif args[0] == "python":
        python(args[1], args[2], opt("--limit", None))
    elif args[0] == "compare":
        compare(args[1], args[2])
    elif args[0] == "declared":
        declared(args[1], args[2], args[3])
