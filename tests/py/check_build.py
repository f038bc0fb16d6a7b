#!/usr/bin/env python3
"""Read a `draftgen build` output directory back with pyarrow and check it against its JSONL.

Usage: check_build.py BUILD_DIR  — exits non-zero with a message on the first disagreement.

Independent of draftgen: the schema is the output contract in docs/FORMATS.md, the
shards and their sha256 come from build.json, and every Parquet row must equal the same line of
samples.jsonl (field by field). Also checks the mask invariants every trainer relies on:
len(loss_mask) == len(input_ids), prompt_len == index of the first 1, completion_len == number
of 1s, masks are 0/1. Prints one JSON line: {"rows": N, "shards": K, "tokens": T}.
"""
import hashlib
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

SCHEMA = [
    ("id", pa.string()),
    ("input_ids", pa.list_(pa.uint32())),
    ("loss_mask", pa.list_(pa.uint8())),
    ("prompt_len", pa.uint32()),
    ("completion_len", pa.uint32()),
    ("source", pa.string()),
    ("provider", pa.string()),
    ("finish_reason", pa.string()),
    ("has_tool_calls", pa.bool_()),
    ("fidelity_class", pa.string()),
    ("fidelity_reasons", pa.list_(pa.string())),
    ("turns", pa.uint32()),
]
CLASSES = {"exact_by_server_ids", "unique", "truncated_mid_character", "ambiguous", "lossy", "inconsistent"}


def fail(message):
    print(f"check_build: {message}", file=sys.stderr)
    sys.exit(1)


def main(out):
    info = json.loads((out / "build.json").read_text())
    rows = []
    for shard in info["shards"]:
        path = out / shard["file"]
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != shard["sha256"]:
            fail(f"{path}: sha256 {digest} != build.json {shard['sha256']}")
        table = pq.read_table(path)
        got = [(f.name, f.type) for f in table.schema]
        if got != SCHEMA:
            fail(f"{path}: schema {got} != {SCHEMA}")
        if meta_rows(path) != shard["rows"] or table.num_rows != shard["rows"]:
            fail(f"{path}: {table.num_rows} rows, build.json says {shard['rows']}")
        if table.num_rows and pq.ParquetFile(path).metadata.row_group(0).column(0).compression != "ZSTD":
            fail(f"{path}: not zstd-compressed")
        rows.extend(table.to_pylist())
    if len(rows) != info["counts"]["samples"]:
        fail(f"{len(rows)} rows in the shards, build.json counts {info['counts']['samples']} samples")
    jsonl = out / "samples.jsonl"
    if jsonl.exists():
        lines = [json.loads(l) for l in jsonl.read_text().splitlines() if l.strip()]
        if len(lines) != len(rows):
            fail(f"{len(lines)} JSONL lines, {len(rows)} Parquet rows")
        for n, (row, line) in enumerate(zip(rows, lines), 1):
            if row != line:
                keys = [k for k in row if row.get(k) != line.get(k)]
                fail(f"row {n}: Parquet and JSONL differ in {keys}")
    tokens = 0
    for n, row in enumerate(rows, 1):
        ids, mask = row["input_ids"], row["loss_mask"]
        if len(ids) != len(mask):
            fail(f"row {n} ({row['id']}): {len(ids)} ids, {len(mask)} mask entries")
        if any(m not in (0, 1) for m in mask):
            fail(f"row {n}: mask values other than 0/1")
        first = mask.index(1) if 1 in mask else len(mask)
        if row["prompt_len"] != first or row["completion_len"] != sum(mask):
            fail(f"row {n}: prompt_len/completion_len {row['prompt_len']}/{row['completion_len']} != {first}/{sum(mask)}")
        if row["fidelity_class"] not in CLASSES:
            fail(f"row {n}: unknown fidelity class {row['fidelity_class']}")
        tokens += len(ids)
    print(json.dumps({"rows": len(rows), "shards": len(info["shards"]), "tokens": tokens}))


def meta_rows(path):
    return pq.ParquetFile(path).metadata.num_rows


if __name__ == "__main__":
    main(Path(sys.argv[1]))
