#!/usr/bin/env python3
"""What vLLM 0.33.0's own `deepseek_v31` tool parser streams for known DeepSeek-V3.1 texts:
tests/data/deepseek_v31/stream_shapes.jsonl, read by tests/deepseek_v31_stream.rs.

Runs `DeepSeekV31ToolParser.extract_tool_calls_streaming` (`tool_parsers/deepseekv31_tool_parser.py`,
from the pinned wheel as make_server_corpus.py fetches it) one token a delta, the text decoded up
to each token by DeepSeek-V3.1's own tokenizer (`assets/deepseek-v3.1/`, its markers not special,
so kept in the text), then appends `get_remaining_unstreamed_args()` to the last delta with a call
as vLLM's `finalize_generation` does; the deltas are assembled as a client does (shapes_common.py's
`streamed`, which does the same loop). Non-thinking texts: the tool parser sees the whole text. Each row also holds the text's ids by
that tokenizer and whether the text was cut (the texts that begin with `Cut`).
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_server_corpus import setup_imports  # noqa: E402
from reference import hf_tokenizer  # noqa: E402
from shapes_common import write_rows  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "deepseek_v31" / "stream_shapes.jsonl"

S, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
C, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
NEWS = f'{C}get_news{SEP}{{"topics": ["résumé"]}}{CE}'
PARIS = f'{C}get_weather{SEP}{{"city": "Paris"}}{CE}'
NESTED = f'{C}search{SEP}{{"q": "天气", "opts": {{"n": [1, 2]}}}}{CE}'

# Texts as the model wrote them after the generation prompt, without the end-of-turn token.
TEXTS = [
    f"User tokens the años server こんにちは tokens because.{S}{NEWS}{E}",
    f"{S}{PARIS}{E}",
    f"Checking.{S}{PARIS}{NESTED}{E}",
    f"Two lines.{S}{PARIS}\n{NESTED}\n{E}",
    f"Text after.{S}{PARIS}{E}trailing",
    f'{S}{C}run{SEP}{{"cmd": "ls",\n "cwd": "/"}}{CE}{E}',
    f"{S}{C}empty{SEP}{CE}{E}",
    f"Cut inside.{S}{PARIS}{C}search{SEP}{{\"q\"",
    f"Cut after the name.{S}{C}search{SEP}",
    f"Cut in the name.{S}{C}sea",
]


def streamed(parser, tok, text: str) -> tuple[str, list[dict]]:
    ids = tok.encode(text, add_special_tokens=False)
    content, calls = "", {}

    def take(delta) -> None:
        nonlocal content
        if delta is None:
            return
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"name": "", "arguments": ""})
            function = tc.function if isinstance(tc.function, dict) else (
                tc.function.model_dump(exclude_none=True) if tc.function else {})
            call["name"] += function.get("name") or ""
            call["arguments"] += function.get("arguments") or ""

    previous_text, previous_ids, last_with_call = "", [], None
    for i in range(len(ids)):
        current_ids = ids[: i + 1]
        current_text = tok.decode(current_ids)
        delta = parser.extract_tool_calls_streaming(
            previous_text, current_text, current_text[len(previous_text):], previous_ids,
            current_ids, [ids[i]], None)
        take(delta)
        if delta is not None:
            last_with_call = delta if delta.tool_calls else None
        previous_text, previous_ids = current_text, current_ids
    if last_with_call is not None:
        rest = parser.get_remaining_unstreamed_args()
        if rest:
            calls[max(calls)]["arguments"] += rest
    return content, [calls[k] for k in sorted(calls)]


def main() -> None:
    setup_imports()
    from vllm.tool_parsers.deepseekv31_tool_parser import DeepSeekV31ToolParser

    tok = hf_tokenizer("deepseek-v3.1")
    rows = []
    for text in TEXTS:
        content, calls = streamed(DeepSeekV31ToolParser(tok), tok, text)
        rows.append({"text": text, "content": content or None, "calls": calls,
                     "ids": tok.encode(text, add_special_tokens=False),
                     "cut": text.startswith("Cut")})
    write_rows(OUT, rows)


if __name__ == "__main__":
    main()
