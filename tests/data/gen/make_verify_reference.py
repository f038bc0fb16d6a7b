#!/usr/bin/env python3
"""Reference ids and expected labels for `tests/verify.rs`, from the real llama.cpp exchanges in
`real_server/llama_cpp_smollm2.jsonl` and Hugging Face `tokenizers` on SmolLM2's tokenizer.json.

For every non-streamed exchange (the ones whose answer carries the server's own ids in
`__verbose.tokens`), the text-only ids are `tokenizers` encoding the answer's content
(`add_special_tokens=False`) followed by `<|im_end|>` when the answer finished (`stop`), none when
`max_tokens` cut it (`length`), and the label compares them with the server's ids:

- `exact`: the same ids;
- `bpe_benign`: different ids, the same bytes (the model sampled a non-canonical split);
- `truncated_mid_character`: the server's bytes end inside a UTF-8 character and, without that
  partial character, are the text's bytes;
- `divergent`: anything else (the first differing position is recorded).

`verify_expected.json` holds those labels (`server_ids`), the usage deltas (reported minus the
text-only count; prompt: `usage.prompt_tokens` minus the server's own prompt ids; also for the
streamed answers, which carry no ids), and the labels
for `verify_reference.jsonl`: the server's ids as a `--reference` file, except that two exact
answers are replaced — one by a non-canonical split of the same bytes (one token's bytes as two
vocabulary tokens), one by the encoding of a changed text (divergent, with its position).

Run: DRAFTGEN_ASSETS=…/assets python3 tests/data/gen/make_verify_reference.py
"""

import json
import os
import sys
from pathlib import Path

from tokenizers import Tokenizer

HERE = Path(__file__).resolve().parent
DATA = HERE.parent
ASSETS = Path(os.environ.get("DRAFTGEN_ASSETS", Path.home() / ".cache/draftgen-test-assets/assets"))

tok = Tokenizer.from_file(str(ASSETS / "smollm2-135m-instruct" / "tokenizer.json"))
IM_END = tok.token_to_id("<|im_end|>")
assert IM_END is not None


def bytes_of(ids):
    """The raw bytes of ids: ByteLevel tokens map each char back to a byte."""
    table = byte_decoder()
    out = bytearray()
    for i in ids:
        piece = tok.id_to_token(i)
        if all(c in table for c in piece):
            out.extend(table[c] for c in piece)
        else:
            out.extend(piece.encode("utf-8"))
    return bytes(out)


def byte_decoder():
    # GPT-2's bytes_to_unicode, inverted (what the ByteLevel decoder does).
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def incomplete_tail(b):
    for back in range(1, min(4, len(b)) + 1):
        c = b[-back]
        if c & 0xC0 == 0x80:
            continue
        need = 4 if c >= 0xF0 else 3 if c >= 0xE0 else 2 if c >= 0xC0 else 1
        return back if need > back else 0
    return 0


def label(ours, ref):
    if ours == ref:
        return "exact", None
    ob, rb = bytes_of(ours), bytes_of(ref)
    if ob == rb:
        return "bpe_benign", None
    k = incomplete_tail(rb)
    stripped = ob
    while stripped.endswith("\ufffd".encode()):
        stripped = stripped[: -len("\ufffd".encode())]
    if k and stripped == rb[:-k]:
        return "truncated_mid_character", None
    pos = next((i for i, (a, b) in enumerate(zip(ours, ref)) if a != b), min(len(ours), len(ref)))
    return "divergent", pos


def text_ids(response):
    choice = response["choices"][0]
    content = choice["message"].get("content") or ""
    ids = tok.encode(content, add_special_tokens=False).ids
    if choice.get("finish_reason") == "stop":
        ids.append(IM_END)
    return ids


def non_canonical_split(ids):
    """The same bytes with one multi-byte token written as two vocabulary tokens."""
    vocab = tok.get_vocab()
    for i, t in enumerate(ids):
        piece = tok.id_to_token(t)
        if t == IM_END or len(piece) < 3:
            continue
        for cut in range(1, len(piece)):
            a, b = piece[:cut], piece[cut:]
            if a in vocab and b in vocab:
                out = ids[:i] + [vocab[a], vocab[b]] + ids[i + 1 :]
                assert bytes_of(out) == bytes_of(ids) and out != ids
                return out
    raise SystemExit("no splittable token")


def main():
    rows = [json.loads(l) for l in open(DATA / "real_server" / "llama_cpp_smollm2.jsonl")]
    plain = [r for r in rows if not r["stream"]]
    expected = {"server_ids": {}, "reference_file": {}, "divergent_positions": {},
                "prompt_delta": {}, "completion_delta": {}, "stream_prompt_delta": {},
                "stream_completion_delta": {}}
    for r in rows:
        if r["stream"]:
            usage = r["response"]["usage"]
            expected["stream_prompt_delta"][r["id"]] = usage["prompt_tokens"] - len(r["server_prompt_ids"])
            expected["stream_completion_delta"][r["id"]] = usage["completion_tokens"] - len(text_ids(r["response"]))
    reference_lines = []
    replaced_benign = replaced_divergent = None
    for r in plain:
        server = r["response"]["__verbose"]["tokens"]
        ours = text_ids(r["response"])
        lab, _ = label(ours, server)
        expected["server_ids"][r["id"]] = lab
        usage = r["response"]["usage"]
        expected["prompt_delta"][r["id"]] = usage["prompt_tokens"] - len(r["server_prompt_ids"])
        expected["completion_delta"][r["id"]] = usage["completion_tokens"] - len(ours)
        ref = server
        if lab == "exact" and replaced_benign is None and len(ours) > 4:
            ref = non_canonical_split(server)
            replaced_benign = r["id"]
        elif lab == "exact" and replaced_divergent is None and len(ours) > 8:
            content = r["response"]["choices"][0]["message"]["content"]
            changed = content[: len(content) // 2] + " zebra" + content[len(content) // 2 :]
            ref = tok.encode(changed, add_special_tokens=False).ids + [IM_END]
            replaced_divergent = r["id"]
        lab_file, pos = label(ours, ref)
        expected["reference_file"][r["id"]] = lab_file
        if pos is not None:
            expected["divergent_positions"][r["id"]] = pos
        reference_lines.append({"id": r["id"], "output_ids": ref})
    assert expected["reference_file"][replaced_benign] == "bpe_benign"
    assert expected["reference_file"][replaced_divergent] == "divergent"
    with open(DATA / "verify" / "verify_reference.jsonl", "w") as f:
        for line in reference_lines:
            f.write(json.dumps(line) + "\n")
    with open(DATA / "verify" / "verify_expected.json", "w") as f:
        json.dump(expected, f, indent=1, sort_keys=True)
        f.write("\n")
    from collections import Counter
    print("server ids:", Counter(expected["server_ids"].values()), file=sys.stderr)
    print("reference file:", Counter(expected["reference_file"].values()), file=sys.stderr)


if __name__ == "__main__":
    main()
