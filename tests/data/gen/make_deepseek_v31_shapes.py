#!/usr/bin/env python3
"""What vLLM 0.33.0's own DeepSeek-V3.1 parsers return for known model texts (non-streamed):
tests/data/deepseek_v31/parser_shapes.jsonl, read by tests/deepseek_v31.rs.

Runs `DeepSeekV31ToolParser.extract_tool_calls` (`tool_parsers/deepseekv31_tool_parser.py`) and
`DeepSeekV3ReasoningParser.extract_reasoning` (`reasoning/deepseek_v3_reasoning_parser.py`,
which hands thinking requests to the R1 parser and others to the identity parser) from the
pinned wheel (fetched and sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy
dependencies stubbed by server_stubs/autostub.py), in the order vLLM's chat serving runs them:
reasoning first, then the tool parser on the content. The tokenizer is a stand-in that only
answers `get_vocab()` with the markers the parsers look up (their ids are not used on this path).
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_server_corpus import setup_imports  # noqa: E402
from shapes_common import REASONING_TEXTS, read_calls, write_rows  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "deepseek_v31" / "parser_shapes.jsonl"

MARKERS = ["<think>", "</think>", "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>",
           "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"]

S, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
C, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"
PARIS = f'{C}get_weather{SEP}{{"city": "Paris"}}{CE}'
NESTED = f'{C}search{SEP}{{"q": "天气", "opts": {{"n": [1, 2]}}}}{CE}'

# (text as the model wrote it after the generation prompt, without the end-of-turn token; thinking)
TEXTS = [
    *REASONING_TEXTS,
    (f"{S}{PARIS}{E}", False),
    (f"Checking.{S}{PARIS}{NESTED}{E}", False),
    (f"Two calls.</think>{S}{PARIS}{NESTED}{E}", True),
    (f"Weighing.</think>Sure: {S}{PARIS}{E}", True),
    (f"Cut inside.{S}{PARIS}{C}search{SEP}{{\"q\"", False),
    (f"{S}{C}a\nb{SEP}{{}}{CE}{E}", False),
    (f"Text after.{S}{PARIS}{E}trailing", False),
]


class VocabOnly:
    def get_vocab(self):
        return {marker: 128_000 + i for i, marker in enumerate(MARKERS)}


def main() -> None:
    setup_imports()
    from vllm.reasoning.deepseek_v3_reasoning_parser import DeepSeekV3ReasoningParser
    from vllm.tool_parsers.deepseekv31_tool_parser import DeepSeekV31ToolParser

    rows = []
    for text, thinking in TEXTS:
        reasoning_parser = DeepSeekV3ReasoningParser(
            VocabOnly(), chat_template_kwargs={"thinking": thinking})
        reasoning, content = reasoning_parser.extract_reasoning(text, request=None)
        calls = []
        if content is not None:
            content, calls = read_calls(DeepSeekV31ToolParser(VocabOnly()), content, None)
        rows.append({"text": text, "thinking": thinking, "reasoning": reasoning,
                     "content": content, "calls": calls})
    write_rows(OUT, rows)


if __name__ == "__main__":
    main()
