#!/usr/bin/env python3
"""What vLLM 0.33.0's own `qwen3_coder` tool parser returns for known Qwen3-Coder texts, not
streamed and streamed: tests/data/qwen3_coder/parser_shapes.jsonl, read by tests/qwen3_coder.rs.

Runs `Qwen3EngineToolParser.extract_tool_calls` (`tool_parsers/qwen3_engine_tool_parser.py`, the
engine grammar of `parser/qwen3.py`, values converted by the request's schema in
`parser/engine/parser_engine.py`'s `_fix_arg_types`) from the pinned wheel (fetched and
sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy dependencies stubbed by
server_stubs/autostub.py) with the Qwen3 tokenizer (reference.py's `hf_tokenizer`) and a request
declaring TOOLS. Qwen3-Coder is served without a reasoning parser, so the tool parser reads the
whole text. Streamed (`stream_content`, `stream_calls`): `extract_tool_calls_streaming` fed one
token at a time (the text decoded up to each token, as vLLM's serving feeds it), then
`finish_streaming`, the deltas assembled as a client does (content concatenated, each call's name
and argument pieces joined by index). Each row also holds the text's Qwen3 token ids (`ids`,
without the end-of-turn token).
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_server_corpus import setup_imports  # noqa: E402
from reference import hf_tokenizer  # noqa: E402
from shapes_common import WEATHER_AND_RUN_TOOLS, read_calls, streamed, write_rows  # noqa: E402

OUT = Path(__file__).resolve().parents[1] / "qwen3_coder" / "parser_shapes.jsonl"

TOOLS = WEATHER_AND_RUN_TOOLS


def call(name: str, params: list[tuple[str, str]]) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params)
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


PARIS = call("get_weather", [("city", "Paris")])
TYPED = call("get_weather", [("city", "Paris"), ("days", "3"), ("threshold", "2.5"),
                             ("metric", "true"), ("options", '{"unit": "C", "n": [1, 2]}'),
                             ("tags", '["a", "b"]')])
RUN = call("run", [("command", "ls -la\ncd /tmp && echo 'x < y'"), ("timeout", "30")])

# Texts as the model wrote them after the generation prompt, without the end-of-turn token.
TEXTS = [
    f"{PARIS}\n{RUN}",
    f"Hi.\n\n{PARIS}\n{RUN}\n{PARIS}",
    f"Hi.\n\n{PARIS}\n\n",
    "Hello there.",
    "  Spaced reply.\n",
    PARIS,
    f"Checking.\n\n{PARIS}",
    f"Checking both.\n\n{PARIS}\n{RUN}",
    TYPED,
    RUN,
    call("get_weather", [("city", "  São Paulo  ")]),
    call("get_weather", [("city", "\nLeading newline")]),
    call("run", []),
    call("get_weather", [("city", "Paris"), ("days", "05")]),
    call("get_weather", [("city", "Paris"), ("threshold", "5.0")]),
    call("get_weather", [("city", "Paris"), ("metric", "True")]),
    call("get_weather", [("city", "Paris"), ("days", "three")]),
    call("unknown_tool", [("x", "1")]),
    "<tool_call>\n<function=get_weather>\n<parameter=city>Paris</parameter>\n</function>\n</tool_call>",
    f"{PARIS}\nTrailing words.",
    f"Cut inside.\n\n{PARIS}\n<tool_call>\n<function=run>\n<parameter=command>\nls",
    "<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>",
    f"   \n\n{PARIS}",
]


def main() -> None:
    setup_imports()
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.tool_parsers.qwen3_engine_tool_parser import Qwen3EngineToolParser

    tok = hf_tokenizer("qwen3")
    request = ChatCompletionRequest(model="qwen3-coder", tools=TOOLS,
                                    messages=[{"role": "user", "content": "hi"}])
    rows = []
    for text in TEXTS:
        content, calls = read_calls(Qwen3EngineToolParser(tok, tools=request.tools), text, request)
        stream_content, stream_calls = streamed(
            Qwen3EngineToolParser(tok, tools=request.tools), tok, request, text)
        rows.append({"text": text, "content": content or None, "calls": calls,
                     "stream_content": stream_content or None, "stream_calls": stream_calls,
                     "ids": tok.encode(text, add_special_tokens=False)})
    write_rows(OUT, rows, TOOLS)


if __name__ == "__main__":
    main()
