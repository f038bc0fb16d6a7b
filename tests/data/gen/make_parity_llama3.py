#!/usr/bin/env python3
"""Render parity corpus for Llama 3.1 / 3.3: tests/data/parity/render_llama3.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds with `tool`
results, which the template renders as `ipython` turns), asked with the template's own switches
(`date_string` pinned, `builtin_tools` — with calls of them in history —, `tools_in_user_message`
false, or none), rendered by
transformers (`render_jinja_template`, as `apply_chat_template` does) with llama.cpp's
`models/templates/meta-llama-Llama-3.1-8B-Instruct.jinja` (tests/assets/templates/, MIT; the
3.3-70B file is the same bytes) and the Llama 3.1 tokenizer's special tokens; ids by that
tokenizer (tests/assets/README.md), cross-checked against tiktoken with Meta's own
`llama_models/llama3/tokenizer.model` and token table when `LLAMA_MODELS_WHEEL` names PyPI's
`llama-models` 0.3.0 wheel.

The template takes one tool call per assistant message (it raises otherwise): most rounds keep
their first call and its result, the others are rendered and dropped when the template raises.
The messages are made what the servers hand the template (parity_common.py's
`server_messages`). Run from the repository root.
"""

from __future__ import annotations

import copy
import os
import sys
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_parity import seeded  # noqa: E402
from parity_common import make_corpus, server_messages  # noqa: E402
from parity_common import render as render_with  # noqa: E402
from reference import REPO_ROOT  # noqa: E402

TEMPLATE = "templates/llama-3.1-8b-instruct.jinja"
OUT = REPO_ROOT / "tests" / "data" / "parity" / "render_llama3.jsonl"
KWARGS = [
    {},
    {"date_string": "03 Dec 2026"},
    {"builtin_tools": ["brave_search", "wolfram_alpha"]},
    {"builtin_tools": ["code_interpreter", "brave_search"], "date_string": "01 Jan 2025"},
    {"tools_in_user_message": False},
]


def single_calls(rng, messages: list[dict]) -> list[dict]:
    """Most assistant messages with several calls keep the first one (and its result)."""
    out, dropped_ids = [], set()
    for message in messages:
        if message.get("role") == "tool" and message.get("tool_call_id") in dropped_ids:
            continue
        calls = message.get("tool_calls")
        if calls and len(calls) > 1 and rng.random() < 0.85:
            dropped_ids.update(c["id"] for c in calls[1:])
            message = {**message, "tool_calls": calls[:1]}
        out.append(message)
    return out


QUERIES = ["weather in Paris", "天气 北京", "integrate x^2 from 0 to 1", "what's \"new\" today"]


def builtin_calls(rng, messages: list[dict], builtin: list[str]) -> list[dict]:
    """Half the single calls become calls of a built-in tool the request names (the template
    writes them after `<|python_tag|>` as `NAME.call(query="…")`)."""
    callable_tools = [t for t in builtin if t != "code_interpreter"]
    for message in messages:
        calls = message.get("tool_calls")
        if calls and len(calls) == 1 and callable_tools and rng.random() < 0.5:
            calls[0]["function"] = {"name": rng.choice(callable_tools),
                                    "arguments": {"query": rng.choice(QUERIES)}}
    return messages


def render(messages, tools, add_generation_prompt, kwargs) -> tuple[str, list[int]]:
    """The template's render and its ids (make_llama3_shapes.py renders its prompts so too)."""
    return render_with("llama3.1", TEMPLATE, messages, tools, add_generation_prompt, kwargs)


def meta_encoder():
    """tiktoken with Meta's ranks, pattern and token table (`llama_models/llama3/tokenizer.py`),
    or None without the wheel."""
    wheel = os.environ.get("LLAMA_MODELS_WHEEL")
    if not wheel:
        return None
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    target = Path(os.environ.get("TMPDIR", "/tmp")) / "llama_models_tokenizer.model"
    with zipfile.ZipFile(wheel) as z:
        target.write_bytes(z.read("llama_models/llama3/tokenizer.model"))
    ranks = load_tiktoken_bpe(str(target))
    names = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>",
             "<|reserved_special_token_1|>", "<|finetune_right_pad_id|>", "<|step_id|>",
             "<|start_header_id|>", "<|end_header_id|>", "<|eom_id|>", "<|eot_id|>",
             "<|python_tag|>"]
    pattern = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
               r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    return tiktoken.Encoding("llama3", pat_str=pattern, mergeable_ranks=ranks,
                             special_tokens={n: len(ranks) + i for i, n in enumerate(names)})


def main() -> None:
    rng = seeded("render:llama3")
    meta = meta_encoder()

    def prepare(case: dict) -> None:
        case["messages"] = server_messages(single_calls(rng, case["messages"]))
        kwargs = rng.choice(KWARGS)
        if kwargs:
            case["chat_template_kwargs"] = copy.deepcopy(kwargs)
        if "builtin_tools" in kwargs:
            case["messages"] = builtin_calls(rng, case["messages"], kwargs["builtin_tools"])

    def cross_checked(case: dict, text: str, ids: list[int]) -> dict:
        if meta is not None:
            assert meta.encode(text, allowed_special="all") == ids, text
        return {}

    checked = "; ids cross-checked with Meta's tokenizer" if meta is not None else ""
    make_corpus(OUT, rng, "llama3.1", TEMPLATE, prepare, finish=cross_checked, note=checked)


if __name__ == "__main__":
    main()
