#!/usr/bin/env python3
"""Expected renders of requests as clients write them (tests/client_messages.rs).

Clients send an assistant message with `tool_calls` and no `content` key, `content: null`, and
`content` as a list of text parts. transformers' `apply_chat_template` raises on some of these;
the servers normalize them first, and this script does the same, following their code:

- vLLM 0.33.0 `vllm/renderers/chat_utils/chat_message.py`, `parse_chat_message_content`:
  `content is None` (missing or null) becomes `[]`, a string one text part, and for templates
  whose content format is "string" the parts' texts are joined with "\n"
  (`parse_chat_message_content_parts`); an empty list joins to "".
- SGLang 0.5.23 `serving_chat.py` (`if msg_dict.get("content") is None: msg_dict["content"] =
  ""`) and `jinja_template_utils.py`'s `process_content_for_template_format`: "string" templates
  get the texts joined with " " (the same text for one part), "openai" templates (SGLang's
  `detect_jinja_template_content_format`: any template mentioning "image", as Kimi's do) keep
  the list, which the Kimi templates render themselves.

So: missing/null content -> "" (DeepSeek-V3 keeps `None` beside tool calls, draftgen's rule for
its template, rendered as transformers 4 did: `hf_render_keep_none`); Qwen3 and DeepSeek-V3
(string templates) get one-part lists as their text and several parts joined by "\n" (vLLM;
draftgen flags those), Kimi keeps lists. Then transformers renders the normalized messages
(`reference.py`). Run from the repository root; writes tests/data/client_messages/expected.jsonl.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reference import (  # noqa: E402
    REPO_ROOT,
    hf_render,
    hf_render_keep_none,
    kimi_encode,
    kimi_render,
    versions,
)

OUT = REPO_ROOT / "tests" / "data" / "client_messages" / "expected.jsonl"

TOOLS = [{
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Return the weather for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}]


def call(n: int, city: str) -> dict:
    return {"id": f"functions.get_weather:{n}", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}


def cases() -> dict[str, dict]:
    """Each case: the messages as a client writes them."""
    no_content_key = [
        {"role": "system", "content": "You are concise."},
        {"role": "user", "content": "Weather in Paris and Oslo?"},
        {"role": "assistant", "tool_calls": [call(0, "Paris"), call(1, "Oslo")]},
        {"role": "tool", "tool_call_id": "functions.get_weather:0", "content": "18C, sunny"},
        {"role": "tool", "tool_call_id": "functions.get_weather:1", "content": "9C, rain"},
        {"role": "assistant", "content": "Paris is sunny at 18C; Oslo rainy at 9C."},
        {"role": "user", "content": "And Rome?"},
        {"role": "assistant", "tool_calls": [call(2, "Rome")]},
        {"role": "tool", "tool_call_id": "functions.get_weather:2", "content": "25C, clear"},
    ]
    null_content = copy.deepcopy(no_content_key)
    for message in null_content:
        if "tool_calls" in message:
            message["content"] = None
    one_part = [
        {"role": "system", "content": [{"type": "text", "text": "You are concise."}]},
        {"role": "user", "content": [{"type": "text", "text": "Hi there"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
        {"role": "user", "content": [{"type": "text", "text": "Weather in Rome?"}]},
    ]
    two_parts = [
        {"role": "user", "content": [{"type": "text", "text": "First line."},
                                     {"type": "text", "text": "Second line."}]},
    ]
    null_plain = [
        {"role": "user", "content": "Say nothing."},
        {"role": "assistant", "content": None},
        {"role": "user", "content": "Now say hi."},
    ]
    return {
        "no_content_key": {"messages": no_content_key, "tools": TOOLS, "add_generation_prompt": True},
        "null_content_with_tool_calls": {"messages": null_content, "tools": TOOLS, "add_generation_prompt": True},
        "one_text_part": {"messages": one_part, "tools": None, "add_generation_prompt": True},
        "two_text_parts": {"messages": two_parts, "tools": None, "add_generation_prompt": True},
        "null_content_plain": {"messages": null_plain, "tools": None, "add_generation_prompt": True},
    }


def normalize(messages: list[dict], keep_null_with_calls: bool, renders_parts: bool) -> list[dict]:
    out = []
    for message in copy.deepcopy(messages):
        content = message.get("content")
        if content is None:
            keep = keep_null_with_calls and message.get("tool_calls") is not None
            message["content"] = None if keep else ""
        elif isinstance(content, list) and not renders_parts:
            message["content"] = "\n".join(part["text"] for part in content)
        out.append(message)
    return out


def render(family: str, case: dict) -> tuple[str, list[int]]:
    tools = copy.deepcopy(case["tools"])
    gen = case["add_generation_prompt"]
    if family == "kimi_k2":
        messages = normalize(case["messages"], False, True)
        text = kimi_render("templates/kimi-k2.jinja", messages, tools, gen)
        return text, kimi_encode(text)
    if family == "qwen3":
        return hf_render("qwen3", normalize(case["messages"], False, False), tools, gen)
    messages = normalize(case["messages"], True, False)
    return hf_render_keep_none("deepseek-v3", messages, tools, gen)


def main() -> None:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for family in ("kimi_k2", "qwen3", "deepseek_v3"):
        for name, case in cases().items():
            text, ids = render(family, case)
            rows.append({"family": family, "case": name, **case, "text": text, "ids": ids})
    with OUT.open("w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with (OUT.parent / "VERSIONS.txt").open("w", encoding="utf-8", newline="\n") as f:
        f.write("# Reference libraries that produced expected.jsonl (make_client_messages.py)\n")
        for name, version in versions().items():
            f.write(f"{name} {version}\n")
    print(f"{OUT}: {len(rows)} rows")


if __name__ == "__main__":
    main()
