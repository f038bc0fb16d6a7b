#!/usr/bin/env python3
"""What vLLM 0.33.0's own DeepSeek-V3.2 parsers return for known model texts, not streamed and
streamed: tests/data/deepseek_v32/parser_shapes.jsonl, read by tests/deepseek_v32.rs.

Runs the `deepseek_v32` tool parser (`DeepSeekV32EngineToolParser`,
`tool_parsers/deepseekv32_engine_tool_parser.py`: the engine grammar of `parser/deepseek_v32.py`
run by `parser/engine/parser_engine.py`, values converted by `string="true|false"` in
`parser/deepseek_v4.py`'s `_dsml_arg_converter`, then by the request's schema) and the
`deepseek_v3` reasoning parser (`reasoning/deepseek_v3_reasoning_parser.py`, which vLLM's recipe
serves V3.2 with: the R1 parser for thinking requests, the identity parser otherwise) from the
pinned wheel (fetched and sha256-checked by make_server_corpus.py's `fetch_wheel`; heavy
dependencies stubbed by server_stubs/autostub.py), with DeepSeek-V3.2's tokenizer
(reference.py's `hf_tokenizer` on assets/deepseek-v3.2, where `<think>`, `</think>` and `｜DSML｜`
are tokens) and a request declaring TOOLS, in the order vLLM's chat serving
runs them: reasoning first, then the tool parser on the content. Streamed (`stream_content`,
`stream_calls`): the tool parser's `extract_tool_calls_streaming` fed one token of the content at
a time (the text decoded up to each token), then `finish_streaming`, the deltas assembled as a
client does. Each row also holds the text's token ids (`ids`, without the end-of-turn token).
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_server_corpus import setup_imports  # noqa: E402
from reference import hf_tokenizer  # noqa: E402
from shapes_common import (  # noqa: E402
    REASONING_TEXTS, WEATHER_AND_RUN_TOOLS, read_calls, streamed, write_rows)

OUT = Path(__file__).resolve().parents[1] / "deepseek_v32" / "parser_shapes.jsonl"

TOOLS = WEATHER_AND_RUN_TOOLS

D = "｜DSML｜"


def invoke(name: str, params: list[tuple[str, str, str]]) -> str:
    body = "\n".join(f'<{D}parameter name="{k}" string="{s}">{v}</{D}parameter>'
                     for k, s, v in params)
    return f'<{D}invoke name="{name}">\n{body}\n</{D}invoke>'


def calls(*invokes: str) -> str:
    return f"\n\n<{D}function_calls>\n" + "\n".join(invokes) + f"\n</{D}function_calls>"


PARIS = invoke("get_weather", [("city", "true", "Paris")])
TYPED = invoke("get_weather", [("city", "true", "Paris"), ("days", "false", "3"),
                               ("threshold", "false", "2.5"), ("metric", "false", "true"),
                               ("options", "false", '{"unit": "C", "n": [1, 2]}'),
                               ("tags", "false", '["a", "b"]')])
RUN = invoke("run", [("command", "true", "ls -la\ncd /tmp && echo 'x < y'"),
                     ("timeout", "false", "30")])

# (text as the model wrote it after the generation prompt, without the end-of-turn token; thinking)
TEXTS = [
    *REASONING_TEXTS,
    (calls(PARIS), False),
    ("Checking." + calls(PARIS), False),
    ("Checking both." + calls(PARIS, RUN), False),
    ("Two calls.</think>" + calls(PARIS, RUN), True),
    ("Weighing.</think>Sure:" + calls(TYPED), True),
    ("Weighing.</think>" + calls(PARIS), True),
    (calls(TYPED), False),
    (calls(RUN), False),
    (calls(invoke("get_weather", [("city", "true", "  São Paulo  ")])), False),
    (calls(invoke("get_weather", [("city", "true", "\nLeading newline\n")])), False),
    (calls(invoke("run", [])), False),
    (calls(invoke("get_weather", [("city", "true", "Paris"), ("days", "false", "05")])), False),
    (calls(invoke("get_weather", [("city", "true", "Paris"), ("threshold", "false", "5.0")])), False),
    (calls(invoke("get_weather", [("city", "true", "Paris"), ("days", "false", " 3")])), False),
    (calls(invoke("get_weather", [("city", "true", "Paris"), ("days", "true", "3")])), False),
    (calls(invoke("get_weather", [("city", "false", "Paris")])), False),
    (calls(invoke("get_weather", [("city", "false", '"Paris"')])), False),
    (calls(invoke("unknown_tool", [("x", "false", "1")])), False),
    (calls(PARIS) + "Trailing words.", False),
    ("Cut inside." + calls(PARIS)[:-30], False),
    ("Cut inside." + calls(PARIS, RUN)[:-60], False),
    ("Cut in a value." + calls(PARIS).split("Paris")[0] + "Par", False),
    ("Cut in a number." + calls(TYPED).split("2.5")[0] + "2.", False),
    ("Cut in a head." + calls(PARIS).split("city")[0] + "ci", False),
    ("Cut in a name." + calls(PARIS).split("weather")[0], False),
    ("Plain" + calls(PARIS)[2:], False),
    ("   " + calls(PARIS), False),
]


def main() -> None:
    setup_imports()
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.reasoning.deepseek_v3_reasoning_parser import DeepSeekV3ReasoningParser
    from vllm.tool_parsers.deepseekv32_engine_tool_parser import DeepSeekV32EngineToolParser

    tok = hf_tokenizer("deepseek-v3.2")
    request = ChatCompletionRequest(model="deepseek-v3.2", tools=TOOLS,
                                    messages=[{"role": "user", "content": "hi"}])
    rows = []
    for text, thinking in TEXTS:
        reasoning_parser = DeepSeekV3ReasoningParser(
            tok, chat_template_kwargs={"thinking": thinking})
        reasoning, content = reasoning_parser.extract_reasoning(text, request=request)
        calls_out, stream_content, stream_calls = [], content, []
        if content is not None:
            parser = DeepSeekV32EngineToolParser(tok, tools=request.tools)
            content, calls_out = read_calls(parser, content, request)
            stream_content, stream_calls = streamed(
                DeepSeekV32EngineToolParser(tok, tools=request.tools), tok, request,
                text[len(text) - len(stream_content):])
        rows.append({"text": text, "thinking": thinking, "reasoning": reasoning,
                     "content": content or None, "calls": calls_out,
                     "stream_content": stream_content or None, "stream_calls": stream_calls,
                     "ids": tok.encode(text, add_special_tokens=False)})
    write_rows(OUT, rows, TOOLS)


if __name__ == "__main__":
    main()
