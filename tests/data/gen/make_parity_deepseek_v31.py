#!/usr/bin/env python3
"""Render parity corpora for DeepSeek-V3.1: tests/data/parity/render_deepseek_v31.jsonl (llama.cpp's
template) and render_deepseek_v31_own.jsonl (DeepSeek's own, from V3.1's tokenizer_config.json).

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds, reasoning), asked
with `thinking` on, off or absent, rendered by transformers (`render_jinja_template`, as
`apply_chat_template` does) with llama.cpp's `models/templates/deepseek-ai-DeepSeek-V3.1.jinja`
(tests/assets/templates/deepseek-v3.1.jinja, MIT) and DeepSeek-V3.1's own tokenizer (`<think>`, `</think>` single tokens).

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

import copy  # noqa: E402

from make_parity import seeded, write_jsonl  # noqa: E402
from parity_common import make_corpus, server_messages  # noqa: E402,F401  (make_parity_llama3.py's too)
from reference import REPO_ROOT, hf_tokenizer  # noqa: E402
from transformers.utils.chat_template_utils import (  # noqa: E402
    _normalize_chat_messages,
    render_jinja_template,
)

TEMPLATE = "templates/deepseek-v3.1.jinja"
OUT = REPO_ROOT / "tests" / "data" / "parity" / "render_deepseek_v31.jsonl"
OUT_OWN = REPO_ROOT / "tests" / "data" / "parity" / "render_deepseek_v31_own.jsonl"


def main() -> None:
    rng = seeded("render:deepseek_v31")

    def prepare(case: dict) -> None:
        choice = rng.random()
        if choice < 0.4:
            case["chat_template_kwargs"] = {"thinking": True}
        elif choice < 0.7:
            case["chat_template_kwargs"] = {"thinking": False}
        case["messages"] = server_messages(case["messages"])

    make_corpus(OUT, rng, "deepseek-v3.1", TEMPLATE, prepare)
    own_template_corpus(prepare)


def own_template_corpus(prepare) -> None:
    """DeepSeek's own template, the `chat_template` of V3.1's `tokenizer_config.json`
    (`<｜Assistant｜></think>` without thinking): rows without a `template` field, so the test
    renders with the model directory's own. The template concatenates call arguments as strings,
    so conversations with calls (arguments are objects, as servers hand them) are refused and
    dropped."""
    tok = hf_tokenizer("deepseek-v3.1")

    def render_case(case: dict) -> tuple[str, list[int]]:
        rendered, _ = render_jinja_template(
            conversations=[_normalize_chat_messages(copy.deepcopy(case["messages"]))],
            tools=case.get("tools"), chat_template=tok.chat_template,
            add_generation_prompt=case["add_generation_prompt"],
            **{**tok.special_tokens_map, **case.get("chat_template_kwargs", {})})
        return rendered[0], tok.encode(rendered[0], add_special_tokens=False)

    rows = make_corpus(OUT_OWN, seeded("render:deepseek_v31_own"), "deepseek-v3.1", "",
                       prepare, render_case=render_case)
    write_jsonl(OUT_OWN, [{k: v for k, v in row.items() if k != "template"} for row in rows])


if __name__ == "__main__":
    main()
