#!/usr/bin/env python3
"""Render parity corpora for Qwen3-2507 Instruct and Thinking:
tests/data/parity/render_qwen3_2507_{instruct,thinking}.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds, reasoning),
rendered by transformers (`render_jinja_template`, as `apply_chat_template` does) with the
`chat_template` of PyPI `xinference` 4.1.0's `Qwen3-Instruct` / `Qwen3-Thinking` entries
(tests/assets/templates/qwen3-2507-{instruct,thinking}.jinja, Apache-2.0) and the Qwen3
tokenizer's special tokens.

The messages' contents are first made what the servers hand the template (see
make_client_messages.py): missing/`None` content is "", a list of text parts is their texts
joined by "\\n", and tool-call arguments are objects (vLLM's `_postprocess_messages` parses
JSON-string arguments into dicts; the template then writes them with `tojson`). The stored
messages are those normalized ones.
Run from the repository root.
"""

from __future__ import annotations

import copy
import sys
import json
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity import Conversation, seeded, write_jsonl  # noqa: E402
from reference import ASSETS, REPO_ROOT, hf_tokenizer  # noqa: E402

VARIANTS = ("instruct", "thinking")
TARGET = 240


def server_messages(messages: list[dict]) -> list[dict]:
    out = []
    for message in copy.deepcopy(messages):
        content = message.get("content")
        if content is None:
            message["content"] = ""
        elif isinstance(content, list):
            message["content"] = "\n".join(part["text"] for part in content)
        for call in message.get("tool_calls") or []:
            arguments = call["function"]["arguments"]
            if isinstance(arguments, str):
                parsed = json.loads(arguments)
                call["function"]["arguments"] = parsed if isinstance(parsed, dict) else {}
        out.append(message)
    return out


def render(template_file, messages, tools, add_generation_prompt, kwargs) -> tuple[str, list[int]]:
    from transformers.utils.chat_template_utils import (
        _normalize_chat_messages,
        render_jinja_template,
    )

    tok = hf_tokenizer("qwen3")
    template = (ASSETS / template_file).read_text(encoding="utf-8")
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
    for variant in VARIANTS:
        template = f"templates/qwen3-2507-{variant}.jinja"
        out = REPO_ROOT / "tests" / "data" / "parity" / f"render_qwen3_2507_{variant}.jsonl"
        rng = seeded(f"render:qwen3_2507_{variant}")
        rows, dropped, attempts = [], 0, 0
        while len(rows) < TARGET and attempts < 4000:
            attempts += 1
            case = Conversation(rng, kimi_ids=False).build()
            case["messages"] = server_messages(case["messages"])
            try:
                text, ids = render(template, case["messages"], case.get("tools"),
                                   case["add_generation_prompt"], {})
            except Exception as error:  # the reference refused this case: drop it, count it
                if isinstance(error, AssertionError):
                    raise
                dropped += 1
                continue
            rows.append({"template": template, **case, "text": text, "ids": ids})
        assert len(rows) >= 200, f"only {len(rows)} renders after {attempts} attempts"
        write_jsonl(out, rows)
        print(f"{out}: {len(rows)} rows (reference raised on {dropped} dropped candidates)")


if __name__ == "__main__":
    main()
