#!/usr/bin/env python3
"""Render parity corpus for DeepSeek-V3.1: tests/data/parity/render_deepseek_v31.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds, reasoning), asked
with `thinking` on, off or absent, rendered by transformers (`render_jinja_template`, as
`apply_chat_template` does) with llama.cpp's `models/templates/deepseek-ai-DeepSeek-V3.1.jinja`
(tests/assets/templates/deepseek-v3.1.jinja, MIT) and the DeepSeek-V3 tokenizer's special tokens.

The messages are first made what the servers hand the template (parity_common.py; see make_client_messages.py):
missing/`None` content is "", a list of text parts is their texts joined by "\\n", and tool-call
arguments are objects (vLLM's `_postprocess_messages` parses JSON-string arguments into dicts;
the template writes them with `tojson`). The stored messages are those normalized ones.
Run from the repository root.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity import seeded  # noqa: E402
from parity_common import make_corpus, server_messages  # noqa: E402,F401  (make_parity_llama3.py's too)
from reference import REPO_ROOT  # noqa: E402

TEMPLATE = "templates/deepseek-v3.1.jinja"
OUT = REPO_ROOT / "tests" / "data" / "parity" / "render_deepseek_v31.jsonl"


def main() -> None:
    rng = seeded("render:deepseek_v31")

    def prepare(case: dict) -> None:
        choice = rng.random()
        if choice < 0.4:
            case["chat_template_kwargs"] = {"thinking": True}
        elif choice < 0.7:
            case["chat_template_kwargs"] = {"thinking": False}
        case["messages"] = server_messages(case["messages"])

    make_corpus(OUT, rng, "deepseek-v3", TEMPLATE, prepare)


if __name__ == "__main__":
    main()
