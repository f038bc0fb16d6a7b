"""What the parser-shape generators (make_<family>_shapes.py) share: the tools a request declares,
the texts every reasoning parser is tried on, reading a tool parser's answer as a row holds it,
assembling a streamed answer from its deltas, and writing the corpus.

Each generator keeps what is its family's own: the texts in its syntax, the parsers it runs and
the tokenizer they read.
"""

from __future__ import annotations

import json
from pathlib import Path

# A weather lookup with a value of every JSON type, and a shell command: the tools of the
# request the parsers read (the schema by which they convert values).
WEATHER_AND_RUN_TOOLS = [
    {"type": "function", "function": {
        "name": "get_weather", "description": "Weather for a city.",
        "parameters": {"type": "object", "properties": {
            "city": {"type": "string"}, "days": {"type": "integer"},
            "threshold": {"type": "number"}, "metric": {"type": "boolean"},
            "options": {"type": "object"}, "tags": {"type": "array"}},
            "required": ["city"]}}},
    {"type": "function", "function": {
        "name": "run", "description": "Run a shell command.",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string"}, "timeout": {"type": "integer"}}}}},
]

# (text, thinking) without calls, for a `<think>`-prompting family's reasoning parser: an
# answer, the same while thinking, reasoning closed, reasoning cut, reasoning alone.
REASONING_TEXTS = [
    ("Hello there.", False),
    ("Hello there.", True),
    ("Let me think.</think>Hello there.", True),
    ("still thinking, cut", True),
    ("Done.</think>", True),
]


def read_calls(tool_parser, content: str, request) -> tuple[str | None, list[dict]]:
    """`tool_parser.extract_tool_calls(content, request)`: the content it leaves and its calls as
    rows hold them (`name`, `arguments`); no calls: the content as it was."""
    info = tool_parser.extract_tool_calls(content, request)
    if not info.tools_called:
        return content, []
    return info.content, [{"name": c.function.name, "arguments": c.function.arguments}
                          for c in info.tool_calls]


def streamed(parser, tok, request, text: str) -> tuple[str, list[dict]]:
    """`parser.extract_tool_calls_streaming` fed `text` one token at a time (the text decoded up
    to each token, as vLLM's serving feeds it), then `finish_streaming`, the deltas assembled as a
    client does (content concatenated, each call's name and argument pieces joined by index)."""
    ids = tok.encode(text, add_special_tokens=False)
    content, calls = "", {}

    def take(delta) -> None:
        nonlocal content
        if delta is None:
            return
        content += delta.content or ""
        for tc in delta.tool_calls or []:
            call = calls.setdefault(tc.index, {"name": "", "arguments": ""})
            if tc.function is not None:
                call["name"] += tc.function.name or ""
                call["arguments"] += tc.function.arguments or ""

    previous_text, previous_ids = "", []
    for i in range(len(ids)):
        current_ids = ids[: i + 1]
        current_text = tok.decode(current_ids)
        take(parser.extract_tool_calls_streaming(
            previous_text, current_text, current_text[len(previous_text):], previous_ids,
            current_ids, [ids[i]], request))
        previous_text, previous_ids = current_text, current_ids
    take(parser.finish_streaming())
    return content, [calls[k] for k in sorted(calls)]


def write_rows(out: Path, rows: list[dict], tools: list[dict] | None = None) -> None:
    """`out` as JSON lines: a header `{"tools": tools}` when given, then the rows."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w", encoding="utf-8", newline="\n") as f:
        if tools is not None:
            f.write(json.dumps({"tools": tools}, ensure_ascii=False) + "\n")
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{out}: {len(rows)} rows")
