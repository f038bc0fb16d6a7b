#!/usr/bin/env python3
"""Render parity corpora for Qwen3-Coder: tests/data/parity/render_qwen3_coder.jsonl and
render_qwen3_coder_30b_a3b.jsonl.

Conversations from make_parity.py's generator (tools, multi-turn, tool rounds), rendered by
transformers (`render_jinja_template`, as `apply_chat_template` does) with the Qwen3 tokenizer's
special tokens and each of two templates: llama.cpp's `models/templates/Qwen3-Coder.jinja` as
vendored in PyPI `llama-cpp-python` 0.3.36 (tests/assets/templates/qwen3-coder.jinja, MIT), and
the `chat_template` of Qwen/Qwen3-Coder-30B-A3B-Instruct's `tokenizer_config.json` as vendored in
ztxz16/fastllm @ f8f04c33 (tests/assets/templates/qwen3-coder-30b-a3b.jinja, Apache-2.0).

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
from parity_common import make_corpus, server_messages  # noqa: E402
from reference import REPO_ROOT  # noqa: E402

CORPORA = {
    "templates/qwen3-coder.jinja": "render_qwen3_coder.jsonl",
    "templates/qwen3-coder-30b-a3b.jinja": "render_qwen3_coder_30b_a3b.jsonl",
}


def prepare(case: dict) -> None:
    case["messages"] = server_messages(case["messages"], objects_only=True)


def main() -> None:
    for template, name in CORPORA.items():
        out = REPO_ROOT / "tests" / "data" / "parity" / name
        make_corpus(out, seeded("render:qwen3_coder"), "qwen3", template, prepare)


if __name__ == "__main__":
    main()
