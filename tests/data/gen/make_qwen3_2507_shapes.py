#!/usr/bin/env python3
"""What vLLM 0.33.0's own parsers return for known Qwen3-2507 texts (non-streamed):
tests/data/qwen3_2507/parser_shapes.jsonl, read by tests/qwen3_2507.rs.

Thinking-2507 texts (the generation prompt already holds `<think>\\n`) go through the `qwen3`
reasoning parser (`reasoning/qwen3_engine_reasoning_parser.py`) then the `hermes` tool parser
(`tool_parsers/hermes_tool_parser.py`) on the content, in the order vLLM's chat serving runs
them; Instruct-2507 texts through the tool parser alone. From the pinned wheel (fetched and
sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy dependencies stubbed by
server_stubs/autostub.py), with the Qwen3 tokenizer (reference.py's `hf_tokenizer`). Each row
also holds the text's Qwen3 ids (`ids`, without the end-of-turn token).
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_server_corpus import setup_imports  # noqa: E402
from reference import hf_tokenizer  # noqa: E402
from shapes_common import read_calls, write_rows  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "qwen3_2507" / "parser_shapes.jsonl"

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"}}, "required": ["city"]}}}]

PARIS = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
ROME = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Rome", "days": 2}}\n</tool_call>'

# (text as the model wrote it after the generation prompt, without the end-of-turn token;
# thinking model)
TEXTS = [
    ("Hello there.", False),
    ("Checking.", False),
    (PARIS, False),
    (f"Checking.\n{PARIS}", False),
    (f"{PARIS}\n{ROME}", False),
    ("Let me think.\n</think>\n\nHello there.", True),
    ("Let me think.\n</think>\n\n" + PARIS, True),
    ("Two cities.\n</think>\n\nChecking both.\n" + PARIS + "\n" + ROME, True),
    ("\n</think>\n\nNo reasoning.", True),
    ("still thinking, cut", True),
    ('Compact.\n</think>\n\n<tool_call>\n{"name":"get_weather","arguments":{"city":"Oslo"}}\n</tool_call>', True),
]


def main() -> None:
    setup_imports()
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.reasoning.qwen3_engine_reasoning_parser import Qwen3ParserReasoningAdapter
    from vllm.tool_parsers.hermes_tool_parser import Hermes2ProToolParser

    tok = hf_tokenizer("qwen3")
    request = ChatCompletionRequest(model="qwen3-2507", tools=TOOLS,
                                    messages=[{"role": "user", "content": "hi"}])
    rows = []
    for text, thinking in TEXTS:
        reasoning, content = None, text
        if thinking:
            parser = Qwen3ParserReasoningAdapter(tok, chat_template_kwargs={})
            reasoning, content = parser.extract_reasoning(text, request)
        calls = []
        if content is not None:
            content, calls = read_calls(Hermes2ProToolParser(tok), content, request)
        rows.append({"text": text, "thinking": thinking, "reasoning": reasoning,
                     "content": content or None, "calls": calls,
                     "ids": tok.encode(text, add_special_tokens=False)})
    write_rows(OUT, rows, TOOLS)


if __name__ == "__main__":
    main()
